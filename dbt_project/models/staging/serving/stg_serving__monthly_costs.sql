with source as (
    select * from {{ source('raw', 'serving_monthly_costs') }}
),

renamed as (
    select
        cast({{ dbt.concat(["substring(month, 1, 7)", "'-01'"]) }} as date) as cost_month,
        item,
        amount
    from source
)

select * from renamed
