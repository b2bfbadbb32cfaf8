"""``cost-pipeline export --focus``: the resource book as a FOCUS 1.2 cost-and-usage dataset.

One job: read ``marts.fct_resource_book`` (one row per month x job or cloud resource) on a read-only connection and
write it with the FOCUS 1.2 columns, all 57 of them in the spec's order, then the pipeline's own ``x_`` columns, as
CSV or (for a ``.parquet`` file) Parquet. Each row of the book is one FOCUS row, and its ``resource_cost`` is the
row's BilledCost, EffectiveCost and ContractedCost, so the file's BilledCost sums to the book to the cent.

The book is usage at the internal price (R12), not an invoice: an owned-capacity row is billed by the organisation's
own GPU platform, which publishes no price list (ListCost = the internal cost, unit prices null); a cloud row is the
FOCUS EffectiveCost of the provider's lines behind it. Those lines (``intermediate.int_focus_charges_attributed``,
grouped as the book groups them) give a cloud row its service, SKU, invoice, consumed quantity and evidence level
(billed when every line has an invoice, else pending; the rule of ``int_cost_lines_unioned``). Owned GPU time is
measured. docs/operations.md ("FOCUS export") maps every column.
"""

from __future__ import annotations

import csv
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from cost_pipeline.command_error import CommandError

EXPORT_EXIT = 10  # docs/operations.md: the FOCUS export cannot be written
FOCUS_VERSION = "1.2"

# The FOCUS 1.2 cost-and-usage columns, in the spec's order (FOCUS_Spec specification/columns, v1.2).
FOCUS_COLUMNS = (
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "CapacityReservationId",
    "CapacityReservationStatus",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingCurrency",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyEffectiveCost",
    "PricingCurrencyListUnitPrice",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "Tags",
)
# The pipeline's own columns (FOCUS: custom columns start with x_).
EXTRA_COLUMNS = (
    "x_BatchKey",
    "x_EvidenceLevel",
    "x_CostSource",
    "x_Phase",
    "x_ModelVersion",
    "x_ContractVersion",
    "x_ResourceKey",
    "x_HasCorrection",
    "x_IsUnpriced",
)
COLUMNS = FOCUS_COLUMNS + EXTRA_COLUMNS

# FOCUS 1.2 ServiceCategory values; a cloud line's category outside them exports as Other.
SERVICE_CATEGORIES = (
    "AI and Machine Learning",
    "Analytics",
    "Business Applications",
    "Compute",
    "Databases",
    "Developer Tools",
    "Multicloud",
    "Identity",
    "Integration",
    "Internet of Things",
    "Management and Governance",
    "Media",
    "Migration",
    "Mobile",
    "Networking",
    "Security",
    "Storage",
    "Web",
    "Other",
)
# Who bills owned GPU time; who a cloud row is from when its FOCUS lines do not name one provider (an export
# without ProviderName, or lines of several providers behind one row).
OWNED_PROVIDER = "Owned GPU capacity"
CLOUD_PROVIDER = "Cloud provider (unnamed in the export)"

_DECIMAL_NULL_COLUMNS = {
    "CommitmentDiscountQuantity",
    "ContractedUnitPrice",
    "ListUnitPrice",
    "PricingCurrencyContractedUnitPrice",
    "PricingCurrencyListUnitPrice",
}

# The FOCUS lines behind each cloud row of the book, keyed as fct_resource_book keys them: a cloud job by its
# job_key, other lines by batch and ResourceId (else ServiceName). A value the lines disagree on is left null.
_CLOUD_LINES = """
select
    month_start as month,
    job_key,
    case when job_key is null then batch_id end as batch_id,
    case when job_key is null then coalesce(resource_id, service_name, 'unspecified') end as resource_key,
    case when count(distinct resource_id) = 1 then min(resource_id) end as resource_id,
    case when count(distinct service_name) = 1 then min(service_name) end as service_name,
    case when count(distinct service_category) = 1 then min(service_category) end as service_category,
    case when count(distinct sku_id) = 1 then min(sku_id) end as sku_id,
    case when count(distinct invoice_id) = 1 and count(invoice_id) = count(*) then min(invoice_id) end as invoice_id,
    case when count(distinct provider_name) = 1 and count(provider_name) = count(*) then min(provider_name) end
        as provider_name,
    case when count(distinct publisher_name) = 1 and count(publisher_name) = count(*) then min(publisher_name) end
        as publisher_name,
    case when count(distinct invoice_issuer_name) = 1 and count(invoice_issuer_name) = count(*)
        then min(invoice_issuer_name) end as invoice_issuer_name,
    case when count(consumed_quantity) = count(*) and count(distinct consumed_unit) = 1
        then cast(sum(consumed_quantity) as decimal(18, 4)) end as consumed_quantity,
    case when count(consumed_quantity) = count(*) and count(distinct consumed_unit) = 1
        then min(consumed_unit) end as consumed_unit,
    case when count(invoice_id) = count(*) then 'billed' else 'pending' end as evidence_level
-- A job's lines are its compute lines (the resource book's job rows); a Storage line naming the job is a resource
-- of its own, as the resource book has it.
from (
    select * replace (case when is_compute then job_key end as job_key)
    from intermediate.int_focus_charges_attributed
)
group by all
"""

_SELECT = f"""
with book as (
    select * from marts.fct_resource_book where $month is null or month = $month
),

cloud_lines as ({_CLOUD_LINES}),

rows as (
    select
        book.*,
        book.cost_source = 'owned_capacity' as is_owned,
        coalesce(job_lines.resource_id, other_lines.resource_id) as line_resource_id,
        coalesce(job_lines.service_name, other_lines.service_name) as line_service_name,
        coalesce(job_lines.service_category, other_lines.service_category) as line_service_category,
        coalesce(job_lines.sku_id, other_lines.sku_id) as line_sku_id,
        coalesce(job_lines.invoice_id, other_lines.invoice_id) as line_invoice_id,
        coalesce(job_lines.provider_name, other_lines.provider_name) as line_provider,
        coalesce(job_lines.publisher_name, other_lines.publisher_name) as line_publisher,
        coalesce(job_lines.invoice_issuer_name, other_lines.invoice_issuer_name) as line_invoice_issuer,
        coalesce(job_lines.consumed_quantity, other_lines.consumed_quantity) as line_quantity,
        coalesce(job_lines.consumed_unit, other_lines.consumed_unit) as line_unit,
        coalesce(job_lines.evidence_level, other_lines.evidence_level) as line_evidence_level
    from book
    left join cloud_lines as job_lines
        on book.cost_source = 'cloud_bill'
        and book.month = job_lines.month
        and book.job_key = job_lines.job_key
    left join cloud_lines as other_lines
        on book.cost_source = 'cloud_bill'
        and book.job_key is null
        and other_lines.job_key is null
        and book.month = other_lines.month
        and book.batch_id = other_lines.batch_id
        and book.resource_key = other_lines.resource_key
),

focus as (
    select
        cast(month as timestamptz) as period_start,
        cast(month + interval 1 month as timestamptz) as period_end,
        case when is_owned then 'AI and Machine Learning'
            when line_service_category in $categories then line_service_category
            else 'Other' end as service_category,
        case when is_owned then job_key when job_key is not null then coalesce(line_resource_id, job_key)
            else line_resource_id end as resource_id,
        case when is_owned then occupied_gpu_hours else line_quantity end as quantity,
        -- a provider's abbreviated time unit in FOCUS UnitFormat (GB-Mo: GB-Months)
        case when is_owned then 'GPU-Hours'
            else regexp_replace(regexp_replace(line_unit, '-(Mo|Mos|Mth|Mths)$', '-Months'), '-(Hr|Hrs)$', '-Hours')
            end as unit,
        case when is_owned then $owned_provider else coalesce(line_provider, $cloud_provider) end as provider,
        *
    from rows
)

select
    resource_cost as BilledCost,
    cost_source as BillingAccountId,
    case when is_owned then 'Owned GPU capacity (internal price)' else 'Cloud bill (FOCUS export)' end
        as BillingAccountName,
    case when is_owned then 'Internal' else 'Cloud' end as BillingAccountType,
    currency as BillingCurrency,
    period_end as BillingPeriodEnd,
    period_start as BillingPeriodStart,
    'Usage' as ChargeCategory,
    case when is_owned then 'GPU time of job ' || job_id || ' at the month''s internal GPU-hour price'
        when job_id is not null then 'Cloud usage of job ' || job_id || ' (FOCUS EffectiveCost)'
        else 'Cloud usage of ' || resource_key || ' not attributed to a job (FOCUS EffectiveCost)' end
        as ChargeDescription,
    'Usage-Based' as ChargeFrequency,
    period_end as ChargePeriodEnd,
    period_start as ChargePeriodStart,
    quantity as ConsumedQuantity,
    case when quantity is not null then unit end as ConsumedUnit,
    resource_cost as ContractedCost,
    resource_cost as EffectiveCost,
    line_invoice_id as InvoiceId,
    coalesce(line_invoice_issuer, provider) as InvoiceIssuerName,
    coalesce(list_cost, resource_cost) as ListCost,
    case when is_owned then 'Standard' end as PricingCategory,
    currency as PricingCurrency,
    resource_cost as PricingCurrencyEffectiveCost,
    quantity as PricingQuantity,
    case when quantity is not null then unit end as PricingUnit,
    provider as ProviderName,
    coalesce(line_publisher, provider) as PublisherName,
    resource_id as ResourceId,
    case when resource_id is not null and job_id is not null then job_id end as ResourceName,
    case when resource_id is null then null when job_id is not null then 'Training job' else 'Cloud resource' end
        as ResourceType,
    service_category as ServiceCategory,
    case when is_owned then $owned_provider else coalesce(line_service_name, resource_key) end as ServiceName,
    case when is_owned then 'Machine Learning' else 'Other (' || service_category || ')' end as ServiceSubcategory,
    case when not is_owned then line_sku_id end as SkuId,
    batch_id as x_BatchKey,
    case when is_owned then 'measured' else coalesce(line_evidence_level, 'pending') end as x_EvidenceLevel,
    cost_source as x_CostSource,
    phase as x_Phase,
    model_version as x_ModelVersion,
    contract_version as x_ContractVersion,
    resource_key as x_ResourceKey,
    has_correction as x_HasCorrection,
    is_unpriced as x_IsUnpriced
from focus
order by month, cost_source desc, batch_id, resource_key, job_key
"""


class FocusExportError(CommandError):
    """An export that cannot be written; the message is one line."""

    default_exit_code = EXPORT_EXIT


def focus_relation(con: duckdb.DuckDBPyConnection, month: date | None = None) -> duckdb.DuckDBPyRelation:
    """The resource book of ``month`` (every month when None) as FOCUS rows, ``COLUMNS`` in order."""
    for schema, table in (("marts", "fct_resource_book"), ("intermediate", "int_focus_charges_attributed")):
        found = con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = ?", [schema, table]
        ).fetchall()[0][0]
        if not found:
            raise FocusExportError(f"the warehouse holds no resource book: no night has built {schema}.{table}")
    relation = con.sql(
        _SELECT,
        params={
            "month": month,
            "categories": list(SERVICE_CATEGORIES),
            "owned_provider": OWNED_PROVIDER,
            "cloud_provider": CLOUD_PROVIDER,
        },
    )
    given = set(relation.columns)  # a FOCUS column the book has nothing for is null, typed as the spec types it
    return relation.select(
        *(
            duckdb.ColumnExpression(column)
            if column in given
            else duckdb.SQLExpression(
                f"cast(null as {'decimal(18, 4)' if column in _DECIMAL_NULL_COLUMNS else 'varchar'})"
            ).alias(column)
            for column in COLUMNS
        )
    )


def _text(value: object) -> str:
    """A CSV cell: Decimals as stored (money keeps its two places, never a float), date-times as ISO 8601 UTC."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def write_focus(con: duckdb.DuckDBPyConnection, out: Path, month: date | None = None) -> int:
    """Write the export to ``out`` (Parquet when it ends in .parquet, else CSV); returns the rows written."""
    relation = focus_relation(con, month)
    if out.suffix.lower() == ".parquet":
        relation.write_parquet(str(out))
        return len(relation)
    rows = relation.fetchall()
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([_text(value) for value in row] for row in rows)
    return len(rows)
