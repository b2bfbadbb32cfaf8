-- One row per object (or object version) listed in any inventory of its bucket in each month (I6, R9, R19), from
-- its last listing of the month: the prefix rule that owns it (longest matching prefix), its batch, purpose,
-- retention, duplicate ETags, and its storage cost for the month. Cost = size in GB (2^30 bytes) x price per
-- GB-month (its class's price, the class name compared case-folded: same_id) x held share of the month, where the
-- object is held from LastModifiedDate (or the month's start, if earlier) to its last listing's inventory date, over
-- the length of the month that contains it. An object without a version id is one write of its key: each distinct
-- LastModifiedDate of a key listed in the month is an object of its own (a key overwritten in an unversioned bucket
-- held the earlier bytes until the rewrite), held until the key's next write listed that month, if any, else until
-- its last listing. Every inventory
-- of a bucket counts, whatever its configuration: a prefix-filtered configuration delivered after the whole-bucket
-- one does not hide the other objects, and an object deleted mid-month is charged until its last listing.
-- A versioned bucket may have two configurations, one listing every version (rows with VersionId) and one the
-- current versions only (no VersionId): a key's listing without a version id is the version of that key listed with
-- one in the same month and the same LastModifiedDate (a version's write time never changes), one object counted
-- once, from its last listing, under that version id.
-- is_current: no later inventory file of the month covers its key (a file covers the keys between its first and
-- last, which an S3 prefix filter keeps together) without listing it; for an object version, no later inventory
-- of all versions (a current-only inventory never lists a noncurrent version). An object not current was deleted
-- within the month and is no governance finding. storage_cost is kept unrounded (6 decimals) per
-- object; every total above rounds once to the cent.
with listed as (
    select
        *,
        cast({{ dbt.date_trunc('month', 'inventory_at') }} as date) as month_start
    from {{ ref('stg_storage__inventory_objects') }}
),

-- The versions the month's inventories list with an id, by key and write time.
versions as (
    select
        bucket,
        object_key,
        month_start,
        last_modified_at,
        max(version_id) as version_id
    from listed
    where version_id is not null
    group by bucket, object_key, month_start, last_modified_at
),

objects as (
    select
        listed.bucket,
        listed.object_key,
        coalesce(listed.version_id, versions.version_id) as version_id,
        listed.version_id as listed_version_id,
        listed.size_bytes,
        listed.last_modified_at,
        listed.etag,
        listed.storage_class,
        listed.inventory_at,
        listed.inventory_date_from,
        listed.source_file,
        listed.source_line,
        listed.month_start
    from listed
    left join versions
        on listed.version_id is null
        and listed.bucket = versions.bucket
        and listed.object_key = versions.object_key
        and listed.month_start = versions.month_start
        and listed.last_modified_at = versions.last_modified_at
),

-- Each object's last listing of the month; an object listed twice in one inventory (a data file delivered again
-- under another name, with other bytes) counts once: its listing in the last file, last line. An object is its
-- key's version (id) and write time: without a version id, a key rewritten within the month is two objects.
ranked_listings as (
    select
        objects.*,
        row_number() over (
            partition by bucket, object_key, version_id, last_modified_at, month_start
            order by inventory_at desc, source_file desc, source_line desc
        ) as listing_rank
    from objects
),

last_listings as (
    select * from ranked_listings where listing_rank = 1
),

-- Each inventory data file of a month and the range of keys it covers. By file, not by instant: two configurations of
-- a bucket (each filtered to its prefix) are delivered at the same instant, and together they do not cover the keys
-- between their prefixes. lists_versions: the file lists object versions (an inventory of all versions).
inventories as (
    select
        bucket,
        month_start,
        inventory_at,
        source_file,
        min(object_key) as first_key,
        max(object_key) as last_key,
        max(case when listed_version_id is not null then 1 else 0 end) as lists_versions
    from objects
    group by bucket, month_start, inventory_at, source_file
),

latest_inventories as (
    select bucket, month_start, max(inventory_at) as inventory_at
    from inventories
    group by bucket, month_start
),

-- Objects a later inventory of the month covers without listing them: deleted before it (an object version: a later
-- inventory of all versions). Only the objects not in the bucket's latest inventory of the month are compared
-- (few: the latest lists nearly everything).
deleted as (
    select distinct
        listings.bucket,
        listings.object_key,
        listings.version_id,
        listings.last_modified_at,
        listings.month_start
    from last_listings as listings
    inner join latest_inventories
        on listings.bucket = latest_inventories.bucket
        and listings.month_start = latest_inventories.month_start
    inner join inventories
        on listings.bucket = inventories.bucket
        and listings.month_start = inventories.month_start
        and inventories.inventory_at > listings.inventory_at
        and listings.object_key >= inventories.first_key
        and listings.object_key <= inventories.last_key
        and (listings.version_id is null or inventories.lists_versions = 1)
    where listings.inventory_at < latest_inventories.inventory_at
),

current_objects as (
    select
        last_listings.*,
        deleted.object_key is null as is_current
    from last_listings
    left join deleted
        on last_listings.bucket = deleted.bucket
        and last_listings.object_key = deleted.object_key
        and last_listings.month_start = deleted.month_start
        and last_listings.version_id is not distinct from deleted.version_id
        and last_listings.last_modified_at = deleted.last_modified_at
),

rules as (
    select * from {{ ref('stg_storage__prefix_rules') }}
),

rule_matches as (
    select
        current_objects.bucket,
        current_objects.object_key,
        current_objects.version_id,
        current_objects.last_modified_at,
        current_objects.inventory_at,
        rules.prefix,
        rules.purpose,
        rules.owner,
        rules.batch_id,
        rules.retention_days,
        row_number() over (
            partition by current_objects.bucket, current_objects.object_key, current_objects.version_id,
                current_objects.last_modified_at, current_objects.inventory_at
            order by {{ dbt.length('rules.prefix') }} desc
        ) as match_rank
    from current_objects
    inner join rules
        on current_objects.bucket = rules.bucket
        and substring(current_objects.object_key, 1, {{ dbt.length('rules.prefix') }}) = rules.prefix
),

best_rules as (
    select * from rule_matches where match_rank = 1
),

-- Each distinct place (bucket, key) an ETag is held in at the month's end (objects still current).
etag_places as (
    select distinct
        month_start,
        etag,
        bucket,
        object_key,
        {{ dbt.concat(["'s3://'", 'bucket', "'/'", 'object_key']) }} as location
    from current_objects
    where etag is not null and is_current
),

etag_counts as (
    select
        month_start,
        etag,
        count(*) as duplicate_count
    from etag_places
    group by month_start, etag
),

prices as (
    select storage_class, price_per_gb_month from {{ ref('stg_storage__prices') }}
),

ruled as (
    select
        current_objects.bucket,
        current_objects.object_key,
        current_objects.version_id,
        current_objects.size_bytes,
        current_objects.storage_class,
        current_objects.etag,
        current_objects.last_modified_at,
        current_objects.inventory_at,
        current_objects.month_start,
        current_objects.is_current,
        current_objects.source_file,
        current_objects.source_line,
        best_rules.prefix as rule_prefix,
        best_rules.purpose,
        best_rules.owner,
        best_rules.batch_id as rule_batch_id,
        best_rules.retention_days as rule_retention_days
    from current_objects
    left join best_rules
        on current_objects.bucket = best_rules.bucket
        and current_objects.object_key = best_rules.object_key
        and current_objects.inventory_at = best_rules.inventory_at
        and current_objects.last_modified_at = best_rules.last_modified_at
        and (current_objects.version_id = best_rules.version_id
            or (current_objects.version_id is null and best_rules.version_id is null))
),

resolved as (
    {{ resolve_batch('ruled', 'rule_batch_id') }}
),

attributed as (
    select
        resolved.*,
        case
            when resolved.rule_prefix is null then 'no_prefix_rule'
            when resolved.rule_batch_id is null then 'no_batch_in_rule'
            when not resolved.is_registered_batch then 'batch_not_registered'
        end as unattributed_reason
    from resolved
),

with_retention as (
    select
        attributed.*,
        -- A purpose's default retention in days is the upper bound of its code in the contract.
        cast(coalesce(attributed.rule_retention_days, purposes.upper_bound) as integer) as retention_days
    from attributed
    {{ join_contract_enumeration('purposes', 'storage_purpose', 'attributed.contract_version',
                                 code='attributed.purpose') }}
),

held as (
    select
        with_retention.*,
        case
            when last_modified_at > cast(month_start as {{ dbt.type_timestamp() }}) then last_modified_at
            else cast(month_start as {{ dbt.type_timestamp() }})
        end as held_from,
        -- Without a version id, the key's next write listed this month ends this object; else its last listing.
        case
            when version_id is null then coalesce(
                lead(last_modified_at) over (
                    partition by bucket, object_key, month_start, version_id is null order by last_modified_at),
                inventory_at)
            else inventory_at
        end as held_until,
        {{ seconds_between(
            'cast(month_start as ' ~ dbt.type_timestamp() ~ ')',
            'cast(' ~ dbt.dateadd('month', 1, 'month_start') ~ ' as ' ~ dbt.type_timestamp() ~ ')') }} as month_seconds
    from with_retention
),

held_seconds as (
    select
        held.*,
        case
            when held_until > held_from then {{ seconds_between('held_from', 'held_until') }}
            else 0
        end as held_seconds
    from held
),

costed as (
    select
        held_seconds.*,
        etag_counts.duplicate_count as etag_places,
        prices.price_per_gb_month,
        prices.price_per_gb_month is null as is_unpriced,
        -- The exact product in decimals, then one division; rounded once, to 6 decimals, per object.
        cast(round(
            held_seconds.size_bytes * prices.price_per_gb_month * held_seconds.held_seconds
            / (cast(1073741824 as {{ dbt.type_bigint() }}) * held_seconds.month_seconds), 6) as decimal(18, 6))
            as priced_cost
    from held_seconds
    left join etag_counts
        on held_seconds.month_start = etag_counts.month_start
        and held_seconds.etag = etag_counts.etag
    left join prices on {{ same_id('held_seconds.storage_class') }} = {{ same_id('prices.storage_class') }}
),

-- By ETag too: in a versioned bucket another version of the same key holds other bytes, and is no duplicate of
-- what this one duplicates.
duplicates as (
    select
        costed.bucket,
        costed.object_key,
        costed.etag,
        costed.month_start,
        min(etag_places.location) as duplicate_of
    from costed
    inner join etag_places
        on costed.month_start = etag_places.month_start
        and costed.etag = etag_places.etag
        and not (costed.bucket = etag_places.bucket and costed.object_key = etag_places.object_key)
    where costed.is_current
    group by costed.bucket, costed.object_key, costed.etag, costed.month_start
)

select
    costed.bucket,
    costed.object_key,
    costed.version_id,
    costed.size_bytes,
    costed.storage_class,
    costed.etag,
    costed.last_modified_at,
    costed.inventory_at,
    costed.month_start,
    costed.is_current,
    costed.rule_prefix,
    costed.purpose,
    costed.owner,
    costed.batch_key as batch_id,
    costed.unattributed_reason,
    costed.contract_version,
    costed.retention_days,
    costed.retention_days is not null
        and {{ dbt.dateadd('day', 'costed.retention_days', 'costed.last_modified_at') }} < costed.inventory_at
        as is_past_retention,
    duplicates.duplicate_of is not null as is_duplicate,
    coalesce(costed.etag_places, 1) as duplicate_count,
    duplicates.duplicate_of,
    costed.held_seconds,
    costed.month_seconds,
    cast(round(1.0 * costed.held_seconds / costed.month_seconds, 10) as decimal(18, 10)) as held_share,
    costed.price_per_gb_month,
    costed.is_unpriced,
    coalesce(costed.priced_cost, cast(0 as decimal(18, 6))) as storage_cost,
    costed.source_file,
    costed.source_line
from costed
left join duplicates
    on costed.bucket = duplicates.bucket
    and costed.object_key = duplicates.object_key
    and costed.etag = duplicates.etag
    and costed.month_start = duplicates.month_start
