{#-
    Reconciliation: the total of column_name over model must equal the total of compare_column over
    compare_model (for example every batch's compute cost adds up to the cost of all runs). Returns one row,
    with both totals, when they differ by more than tolerance; an empty model counts as a total of zero.
    Money compares exactly (tolerance 0); hours rounded per row to 4 decimals may need a small tolerance.
    The test's own `where` (config) filters the model's rows; compare_where filters the compare model's rows and
    may name model_rows, the model's rows after that filter (for example "batch_id in (select batch_id from
    model_rows)" when the model leaves out the batches whose cost is null because they are unpriced). The other
    way round, model_where filters the model's rows and may name compare_rows, the compare model's rows after
    compare_where (for example the phases of the batches the batch mart prices); use one of the two, not both.
-#}
{% test sums_match(model, column_name, compare_model, compare_column, tolerance=0, compare_where='1 = 1',
                   model_where='1 = 1') %}

with model_rows as (
    select * from {{ model }}
),

compare_rows as (
    select * from {{ compare_model }}
    where {{ compare_where }}
),

model_total as (
    select coalesce(sum({{ column_name }}), 0) as total
    from model_rows
    where {{ model_where }}
),

compare_total as (
    select coalesce(sum({{ compare_column }}), 0) as total
    from compare_rows
)

select
    model_total.total as model_total,
    compare_total.total as compare_total
from model_total
cross join compare_total
where abs(model_total.total - compare_total.total) > {{ tolerance }}

{% endtest %}
