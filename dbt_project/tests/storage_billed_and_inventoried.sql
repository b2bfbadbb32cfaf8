-- A bucket-month both billed in a FOCUS export (a Storage line whose ResourceId names the bucket: the bucket name or
-- its ARN, arn:aws:s3:::<bucket>) and priced from an S3 inventory is counted twice in the batch costs: once as the
-- billed line, once as the inventory's per-object estimate. Nothing decides yet which one stands; this lists the
-- overlap so that it is seen (a warning; the rows are kept in the audit schema for finance). In Dagster it is a
-- warn-severity asset check on the inventory's costed objects (meta.dagster.ref: a test reading two models needs one).
{{ config(
    severity='warn', store_failures=true, schema='audit',
    meta={'dagster': {'ref': {'name': 'int_storage_objects_costed'}}}
) }}

with billed as (
    select month_start, resource_id, batch_id, billed_cost, effective_cost, source_file, source_line
    from {{ ref('int_focus_charges_attributed') }}
    where service_category = 'Storage' and resource_id is not null
),

inventoried as (
    select month_start, bucket, sum(storage_cost) as inventory_cost
    from {{ ref('int_storage_objects_costed') }}
    group by month_start, bucket
)

select
    billed.month_start,
    inventoried.bucket,
    billed.resource_id,
    billed.batch_id as billed_batch_id,
    billed.effective_cost as billed_effective_cost,
    cast(round(inventoried.inventory_cost, 2) as decimal(18, 2)) as inventory_cost,
    billed.source_file,
    billed.source_line
from billed
inner join inventoried
    on billed.month_start = inventoried.month_start
    and (billed.resource_id = inventoried.bucket
        or billed.resource_id = {{ dbt.concat(["'arn:aws:s3:::'", 'inventoried.bucket']) }})
