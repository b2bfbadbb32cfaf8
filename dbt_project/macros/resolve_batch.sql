{#- The rows of CTE `relation` resolved to a registered batch (R1), in one place for every source that names a
    batch: batch_key is the batch when `batch_column` names a registered one, else 'unattributed'. A batch id is
    compared case-folded (same_id): a job saying B-8 is the registry's b-8, and batch_key is the registry's spelling
    (stg_registry__batches holds one batch per folded id);
    is_registered_batch tells the two apart (each model words its own unattributed_reason); contract_version is the
    version the batch was registered with, or the newest shipped for rows without a registered batch. -#}
{% macro resolve_batch(relation, batch_column) %}
    select
        {{ relation }}.*,
        coalesce(registered_batches.batch_id, 'unattributed') as batch_key,
        registered_batches.batch_id is not null as is_registered_batch,
        coalesce(registered_batches.contract_version, latest_contract.contract_version) as contract_version
    from {{ relation }}
    left join {{ ref('stg_registry__batches') }} as registered_batches
        on {{ same_id(relation ~ '.' ~ batch_column) }} = {{ same_id('registered_batches.batch_id') }}
    cross join (select {{ latest_contract_version() }} as contract_version) as latest_contract
{% endmacro %}
