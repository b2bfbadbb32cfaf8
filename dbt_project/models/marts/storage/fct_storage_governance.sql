-- Storage governance (R19): every object held at a month's end (int_storage_objects_costed.is_current: listed in
-- the month's inventories and not deleted before a later one) that needs action, once per finding:
-- no_owner_or_purpose (no prefix rule names its owner and purpose), past_retention (last modified + retention <
-- inventory date) and duplicate (its ETag is also held under another bucket/key that month). An object with two
-- findings has two rows. monthly_cost is the object's storage cost for the month, rounded once to the cent here.
with objects as (
    select * from {{ ref('int_storage_objects_costed') }}
    where is_current
),

findings as (
    select 'no_owner_or_purpose' as finding, objects.*
    from objects
    where owner is null or purpose is null

    union all

    select 'past_retention' as finding, objects.*
    from objects
    where is_past_retention

    union all

    select 'duplicate' as finding, objects.*
    from objects
    where is_duplicate
)

select
    month_start,
    finding,
    bucket,
    object_key,
    version_id,
    batch_id,
    contract_version,
    purpose,
    owner,
    size_bytes,
    cast(size_bytes / 1073741824.0 as decimal(18, 4)) as size_gb,
    storage_class,
    last_modified_at,
    inventory_at,
    retention_days,
    cast(
        case when retention_days is not null
            then {{ dbt.dateadd('day', 'retention_days', 'last_modified_at') }}
        end as {{ dbt.type_timestamp() }}) as retention_ends_at,
    etag,
    duplicate_count,
    duplicate_of,
    price_per_gb_month,
    is_unpriced,
    cast(round(storage_cost, 2) as decimal(18, 2)) as monthly_cost,
    {{ reporting_currency() }} as currency
from findings
