{#- stg_serving__requests and int_requests_costed are incremental by month (issue 15: a night pays for the new day's
    files, not for history): R13 shares a model-month's spend over its requests, so a month whose inputs changed is
    built again whole, and the other months are kept (macros/incremental_periods.sql). int_requests_inputs states
    what they are built from tonight; each keeps the inputs of its last build beside it (kept_inputs). -#}

{#- The kinds of input of int_requests_inputs each model's rows follow (the code always): the staged requests do not
    read the model-months' spend. -#}
{% macro request_months_kinds(model) -%}
    {{ return(['file', 'contract'] if model == 'stg_serving__requests' else none) }}
{%- endmacro %}

{#- The months ``model`` builds again, as ranges [first month, the month after the last) in time order; none for
    every month (a full build, no kept inputs, int_requests_inputs not built in this dbt invocation, or the contract
    or the code changed). -#}
{% macro request_months_to_build(model) -%}
    {#- Not built incrementally: every month, the code not hashed (a unit test has no graph to hash it from). -#}
    {%- if not execute or not is_incremental() -%}{{ return(none) }}{%- endif -%}
    {{ return(periods_to_build(
        model, 'int_requests_inputs', request_months_code(model), 'month', request_months_kinds(model))) }}
{%- endmacro %}

{#- Pre-hook: an incremental build deletes the rows of the months it builds again (every row for every month). -#}
{% macro request_months_forget(model) -%}
    {{ periods_forget(request_months_to_build(model), 'requested_at') }}
{%- endmacro %}

{#- Post-hook: the inputs this build was made from, for the next build. -#}
{% macro request_months_remember(model) -%}
    {{ remember_inputs(kept_inputs(model), 'int_requests_inputs', request_months_code(model)) }}
{%- endmacro %}

{#- The code ``model``'s rows follow, as one hash: its SQL, the staged requests' and int_requests_inputs', the macros
    they call, rendered, and the macros that decide what is built again, as written. Another text builds every month
    again. tests/test_requests_incremental.py checks that every macro of the project the models call is rendered. -#}
{% macro request_months_code(model) -%}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set texts = [] -%}
    {%- for name in [model, 'stg_serving__requests', 'int_requests_inputs'] | unique -%}
        {%- do texts.append(graph.nodes['model.cost_pipeline.' ~ name].raw_code) -%}
    {%- endfor -%}
    {%- do texts.append(same_id('id')) -%}
    {%- do texts.append(model_name('model')) -%}
    {%- do texts.append(newest_delivery('relation', ['key'])) -%}
    {%- do texts.append(file_inputs('files', 'spans', 'built')) -%}
    {%- do texts.append(built_inputs(none)) -%}
    {%- if model == 'int_requests_costed' -%}
        {%- do texts.append(latest_contract_version()) -%}
        {%- do texts.append(contract_parameters({'parameter': 'column'})) -%}
        {%- do texts.append(join_contract_enumeration('alias', 'enumeration', 'version', 'code', 'value')) -%}
        {%- do texts.append(largest_remainder_cents('relation', ['partition'], 'total', 'weight', 'tie')) -%}
    {%- endif -%}
    {#- The rules that decide what is built again, as written: a fix to them builds every month once. -#}
    {%- set rules = [
        request_months_kinds, request_months_to_build, request_months_forget, request_months_remember,
        periods_to_build, periods_forget, periods_where, next_period, inputs_fresh, remember_inputs, changed_inputs,
    ] -%}
    {{- return(code_fingerprint(texts, rules)) -}}
{%- endmacro %}
