-- Every device sample takes a tier of the contract's utilization_tier enumeration: int_device_samples_tiered joins
-- the tier from it, by precedence, and int_job_utilization_tiered sums three of them by name. This fails on a
-- contract version whose tiers with a precedence are not exactly those three: a tier it adds would be summed in no
-- column, a tier it lacks would leave samples without a tier. It stands for the data tests the view had (tier in the
-- enumeration, job not null), each of which computed the view again over every device sample (issue 15); it reads
-- the contract only.
with tiers as (
    select contract_version, code
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'utilization_tier' and lower_bound is not null
),

versions as (
    select distinct contract_version
    from {{ ref('stg_contract__enumerations') }}
),

summed as (
    select 'effective_compute' as code
    union all
    select 'comm_wait' as code
    union all
    select 'idle' as code
),

not_summed as (
    select
        tiers.contract_version,
        tiers.code,
        'a tier int_job_utilization_tiered does not sum' as problem
    from tiers
    where tiers.code not in (select summed.code from summed)
),

missing as (
    select
        versions.contract_version,
        summed.code,
        'a summed tier without a precedence in this version' as problem
    from versions
    cross join summed
    where not exists (
        select 1
        from tiers
        where tiers.contract_version = versions.contract_version and tiers.code = summed.code
    )
)

select * from not_summed
union all
select * from missing
