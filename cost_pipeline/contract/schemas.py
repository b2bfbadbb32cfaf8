"""Validation schemas for every input, built from the contract.

One ``SourceSchema`` per raw table gives both the pandera schema that validates incoming rows and the
warehouse column types, so the contract entry, the check and the raw column share one name.
Enumerations come from the contract: a new contract version changes validation without code changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

import pandas as pd
import pandera.pandas as pa

from cost_pipeline.contract import Contract, available_versions

MONEY_PATTERN = r"^-?\d{1,15}(\.\d{1,2})?$"
MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])(-01)?$"
PLAIN_NUMBER = r"^\d{1,15}(\.\d{1,2})?$"  # a non-negative number with up to two decimals


@dataclass(frozen=True)
class Col:
    name: str
    sql_type: str
    nullable: bool = False
    checks: tuple[pa.Check, ...] = ()
    # The quarantine rule a failed check of this column is recorded under, when the contract names one
    # (labour_task); otherwise <column>.<check>.
    rule: str | None = None

    @property
    def pandas_dtype(self) -> str | type:
        if self.sql_type.startswith(("DECIMAL", "VARCHAR", "DATE")):
            return str
        return {
            "BIGINT": "Int64",
            "INTEGER": "Int64",
            "DOUBLE": "float64",
            "BOOLEAN": "boolean",
            "TIMESTAMP": "datetime64[ns]",
        }[self.sql_type]


@dataclass(frozen=True)
class SourceSchema:
    table: str
    columns: tuple[Col, ...]
    unique: tuple[str, ...] = field(default=())
    # Checks across columns of one row (element-wise on the row); a failure is quarantined under the check's name.
    row_checks: tuple[pa.Check, ...] = field(default=())

    def pandera(self) -> pa.DataFrameSchema:
        return pa.DataFrameSchema(
            {
                c.name: pa.Column(c.pandas_dtype, checks=list(c.checks), nullable=c.nullable, coerce=True)
                for c in self.columns
            },
            checks=list(self.row_checks),
            strict="filter",
        )


def _isin(values: list[str]) -> tuple[pa.Check, ...]:
    return (pa.Check.isin(values),)


def _money() -> tuple[pa.Check, ...]:
    return (pa.Check.str_matches(MONEY_PATTERN),)


def _currency(contract: Contract) -> tuple[pa.Check, ...]:
    """The contract's reporting currency, the only one an amount may be in (there are no exchange rates)."""
    code = contract.reporting_currency
    return (pa.Check(lambda value: value == code, element_wise=True, name="reporting_currency"),)


def _date() -> tuple[pa.Check, ...]:
    return (pa.Check.str_matches(r"^\d{4}-\d{2}-\d{2}$"),)


NON_NEGATIVE = (pa.Check.ge(0),)
POSITIVE = (pa.Check.gt(0),)
BATCH_KEY = (pa.Check.str_matches(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"),)


def batch_registry(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "batch_registry",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY),
            Col("project", "VARCHAR"),
            Col("goal", "VARCHAR"),
            Col("team", "VARCHAR"),
            Col("data_version", "VARCHAR"),
            Col("model_version", "VARCHAR"),
            Col("code_version", "VARCHAR"),
            Col("config_version", "VARCHAR"),
            Col("contract_version", "VARCHAR", checks=_isin(available_versions())),
            *batch_plan_columns(),
        ),
        unique=("batch_id",),
    )


def _label_columns(contract: Contract) -> tuple[Col, ...]:
    # A missing phase is surfaced downstream (R2), not quarantined: the job's GPU-hours must still count.
    return (
        Col("batch_id", "VARCHAR", nullable=True),
        Col("phase", "VARCHAR", nullable=True, checks=_isin(contract.phases)),
        Col("run_reason", "VARCHAR", nullable=True, checks=_isin(contract.run_reasons)),
        Col("restart_of", "VARCHAR", nullable=True),
        Col("continues", "VARCHAR", nullable=True),
        Col("end_reason", "VARCHAR", nullable=True, checks=_isin(contract.end_reasons)),
    )


def batch_plan_columns() -> tuple[Col, ...]:
    """The batch plan (R18) beside the registry's attributes; optional, so registry files without them still load."""
    return (
        Col("budget_cost", "DECIMAL(18,2)", nullable=True, checks=_money()),
        Col("budget_gpu_hours", "DECIMAL(18,2)", nullable=True, checks=(pa.Check.str_matches(PLAIN_NUMBER),)),
        Col("max_trial_rounds", "INTEGER", nullable=True, checks=POSITIVE),
        Col("stop_condition", "VARCHAR", nullable=True),
        Col("variance_boundary_pct", "DECIMAL(18,2)", nullable=True, checks=(pa.Check.str_matches(PLAIN_NUMBER),)),
    )


def batch_rounds(contract: Contract) -> SourceSchema:
    """Trial rounds (R18): a round is a time window of its batch; evidence is what the round newly established."""
    return SourceSchema(
        "batch_rounds",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY),
            Col("round", "INTEGER", checks=POSITIVE),
            Col("started_at", "TIMESTAMP"),
            Col("ended_at", "TIMESTAMP"),
            Col("evidence", "VARCHAR", nullable=True),
        ),
    )


HOURS = r"^\d{1,2}(\.\d{1,4})?$"


def _at_most_24_hours(value: object) -> bool:
    return isinstance(value, str) and re.match(HOURS, value) is not None and Decimal(value) <= 24


def timesheets(contract: Contract) -> SourceSchema:
    """Harvest detailed-time-report entries (I7); ``cost_rate`` is a person's rate, confidential (R20)."""
    return SourceSchema(
        "timesheets",
        (
            Col("entry_date", "DATE", checks=_date()),
            Col("client", "VARCHAR", nullable=True),
            Col("project", "VARCHAR", nullable=True),
            Col("project_code", "VARCHAR", nullable=True),
            Col("task", "VARCHAR", checks=_isin(list(contract.labour_tasks)), rule="labour_task"),
            Col("notes", "VARCHAR", nullable=True),
            Col(
                "hours",
                "DECIMAL(12,4)",
                checks=(pa.Check(_at_most_24_hours, element_wise=True, name="hours_of_a_day"),),
            ),
            Col("billable", "VARCHAR", nullable=True),
            Col("first_name", "VARCHAR"),
            Col("last_name", "VARCHAR"),
            Col("roles", "VARCHAR", nullable=True),
            Col("cost_rate", "DECIMAL(18,2)", nullable=True, checks=_money()),
            Col("currency", "VARCHAR", nullable=True, checks=_currency(contract)),
        ),
    )


def service_invoices(contract: Contract) -> SourceSchema:
    """Vendor invoices and accruals (I8). ``service_month`` (YYYY-MM, optional) dates the service; without it the
    month of ``invoiced_on``. An accrual (blank ``invoiced_on``) must carry it."""
    return SourceSchema(
        "service_invoices",
        (
            Col("invoice_id", "VARCHAR"),
            Col("vendor", "VARCHAR"),
            Col("batch_id", "VARCHAR", nullable=True),
            Col("stage", "VARCHAR", checks=_isin(contract.service_stages)),
            Col("amount", "DECIMAL(18,2)", checks=_money()),
            Col("currency", "VARCHAR", checks=_currency(contract)),
            Col("invoiced_on", "DATE", nullable=True, checks=_date()),
            Col("service_month", "VARCHAR", nullable=True, checks=(pa.Check.str_matches(MONTH_PATTERN),)),
        ),
        unique=("invoice_id",),
        row_checks=(
            pa.Check(
                lambda row: not (pd.isna(row["invoiced_on"]) and pd.isna(row["service_month"])),
                element_wise=True,
                name="accrual_service_month",
            ),
        ),
    )


def scheduler_jobs(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "scheduler_jobs",
        (
            Col("cluster", "VARCHAR", nullable=True),
            Col("job_id", "VARCHAR"),
            Col("job_id_raw", "VARCHAR", nullable=True),
            Col("allocation_id", "VARCHAR"),
            Col("step_name", "VARCHAR", nullable=True),
            Col("record_type", "VARCHAR", checks=_isin(contract.scheduler_record_types)),
            Col("job_name", "VARCHAR", nullable=True),
            Col("account", "VARCHAR", nullable=True),
            Col("partition", "VARCHAR", nullable=True),
            Col("user_name", "VARCHAR", nullable=True),
            Col("state", "VARCHAR", checks=_isin(list(contract.sacct_states))),
            Col("cancelled_by", "VARCHAR", nullable=True),
            Col("exit_code", "VARCHAR", nullable=True),
            Col("failed_node", "VARCHAR", nullable=True),
            Col("restarts", "INTEGER", checks=NON_NEGATIVE),
            Col("submit_at", "TIMESTAMP", nullable=True),
            Col("start_at", "TIMESTAMP", nullable=True),
            Col("end_at", "TIMESTAMP", nullable=True),
            Col("elapsed_seconds", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("time_limit_seconds", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("gpus_requested", "INTEGER", checks=NON_NEGATIVE),
            Col("gpus_allocated", "INTEGER", checks=NON_NEGATIVE),
            Col("node_count", "INTEGER", nullable=True, checks=NON_NEGATIVE),
            Col("node_list", "VARCHAR", nullable=True),
            *_label_columns(contract),
        ),
    )


def scheduler_events(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "scheduler_events",
        (
            Col("job_id", "VARCHAR"),
            Col("event", "VARCHAR", checks=_isin(contract.scheduler_events)),
            Col("at", "TIMESTAMP"),
            Col("gpus_requested", "INTEGER", nullable=True, checks=NON_NEGATIVE),
            Col("gpus_allocated", "INTEGER", nullable=True, checks=NON_NEGATIVE),
            Col("time_limit_s", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("state", "VARCHAR", nullable=True, checks=_isin(list(contract.sacct_states))),
            *_label_columns(contract),
        ),
    )


def training_steps(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "training_steps",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY),
            Col("job_id", "VARCHAR"),
            Col("step", "BIGINT", checks=NON_NEGATIVE),
            Col("started_at", "TIMESTAMP"),
            Col("ended_at", "TIMESTAMP"),
            Col("committed", "BOOLEAN"),
            Col("discarded_reason", "VARCHAR", nullable=True, checks=_isin(contract.discard_reasons)),
            Col("samples", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("tokens", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("config_version", "VARCHAR", nullable=True),
            Col("data_version", "VARCHAR", nullable=True),
        ),
    )


def ledger_purchases(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "ledger_purchases",
        (
            Col("purchase_id", "VARCHAR"),
            Col("purchased_on", "DATE", checks=_date()),
            Col("asset_class", "VARCHAR", checks=_isin(contract.asset_classes)),
            Col("description", "VARCHAR", nullable=True),
            Col("quantity", "INTEGER", checks=POSITIVE),
            Col("unit_price", "DECIMAL(18,2)", checks=_money()),
            Col("currency", "VARCHAR", checks=_currency(contract)),
            Col("gpus_per_unit", "INTEGER", checks=NON_NEGATIVE),
            Col("depreciation_years", "INTEGER", checks=POSITIVE),
            Col("salvage_value", "DECIMAL(18,2)", checks=_money()),
        ),
        unique=("purchase_id",),
    )


def ledger_facility(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "ledger_facility",
        (
            Col("month", "VARCHAR", checks=(pa.Check.str_matches(MONTH_PATTERN),)),
            Col("item", "VARCHAR", checks=_isin(contract.facility_items)),
            Col("amount", "DECIMAL(18,2)", checks=_money()),
            Col("currency", "VARCHAR", checks=_currency(contract)),
        ),
    )


def serving_requests(contract: Contract) -> SourceSchema:
    serving = contract.serving
    return SourceSchema(
        "serving_requests",
        (
            Col("request_id", "VARCHAR"),
            Col("requested_at", "TIMESTAMP"),
            Col("model", "VARCHAR"),
            Col("tenant", "VARCHAR", nullable=True),
            Col("business_line", "VARCHAR", nullable=True),
            Col("input_tokens", "BIGINT", checks=NON_NEGATIVE),
            Col("output_tokens", "BIGINT", checks=NON_NEGATIVE),
            Col("cache_hit", "BOOLEAN"),
            Col("latency_ms", "BIGINT", nullable=True, checks=NON_NEGATIVE),
            Col("latency_tier", "VARCHAR", nullable=True, checks=_isin([t["code"] for t in serving["latency_tiers"]])),
            Col("status", "VARCHAR", checks=_isin(list(serving["request_statuses"]))),
            Col("task_id", "VARCHAR", nullable=True),
            Col("attempt", "INTEGER", checks=POSITIVE),
            Col("escalated_to", "VARCHAR", nullable=True),
            Col("human_handoff", "BOOLEAN"),
            Col("request_shape", "VARCHAR", checks=_isin(contract.request_shapes)),
        ),
        unique=("request_id",),
    )


def serving_replicas(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "serving_replicas",
        (
            Col("replica_id", "VARCHAR"),
            Col("model", "VARCHAR"),
            Col("gpus", "INTEGER", checks=POSITIVE),
            Col("started_at", "TIMESTAMP"),
            Col("ended_at", "TIMESTAMP"),
            Col(
                "gpu_hour_price",
                "DECIMAL(18,4)",
                nullable=True,
                checks=(pa.Check.str_matches(r"^\d{1,12}(\.\d{1,4})?$"),),
            ),
        ),
        unique=("replica_id",),
    )


def serving_monthly_costs(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "serving_monthly_costs",
        (
            Col("month", "VARCHAR", checks=(pa.Check.str_matches(MONTH_PATTERN),)),
            Col("item", "VARCHAR", checks=_isin(list(contract.serving["monthly_cost_items"]))),
            Col("amount", "DECIMAL(18,2)", checks=_money()),
        ),
    )


def task_outcomes(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "task_outcomes",
        (
            Col("task_id", "VARCHAR"),
            Col("task_category", "VARCHAR", nullable=True),
            Col("succeeded", "BOOLEAN"),
            Col("judged_by", "VARCHAR", nullable=True),
            Col("human_minutes", "DOUBLE", nullable=True, checks=NON_NEGATIVE),
            Col("human_cost_per_hour", "DECIMAL(18,2)", nullable=True, checks=_money()),
        ),
        unique=("task_id",),
    )


# Amounts as the billing loader writes them (plain decimal text, up to 18 decimals: the FinOps sample writes 11).
FOCUS_AMOUNT = (pa.Check.str_matches(r"^-?\d{1,20}(\.\d{1,18})?$"),)


def billing_focus(contract: Contract) -> SourceSchema:
    """FOCUS 1.x columns the pipeline uses; amounts keep up to 18 decimals as providers write them."""
    return SourceSchema(
        "billing_focus",
        (
            Col("billing_period_start", "TIMESTAMP", nullable=True),
            Col("billing_period_end", "TIMESTAMP", nullable=True),
            Col("charge_period_start", "TIMESTAMP"),
            Col("charge_period_end", "TIMESTAMP"),
            Col("charge_category", "VARCHAR", nullable=True, checks=_isin(contract.focus_charge_categories)),
            Col("charge_class", "VARCHAR", nullable=True, checks=_isin(contract.focus_charge_classes)),
            Col("charge_frequency", "VARCHAR", nullable=True),
            Col("pricing_category", "VARCHAR", nullable=True),
            Col("billed_cost", "DECIMAL(38,18)", checks=FOCUS_AMOUNT),
            Col("effective_cost", "DECIMAL(38,18)", checks=FOCUS_AMOUNT),
            Col("list_cost", "DECIMAL(38,18)", nullable=True, checks=FOCUS_AMOUNT),
            Col("contracted_cost", "DECIMAL(38,18)", nullable=True, checks=FOCUS_AMOUNT),
            Col("billing_currency", "VARCHAR", nullable=True, checks=_currency(contract)),
            Col("resource_id", "VARCHAR", nullable=True),
            Col("resource_name", "VARCHAR", nullable=True),
            Col("service_name", "VARCHAR", nullable=True),
            Col("service_category", "VARCHAR", nullable=True),
            Col("invoice_id", "VARCHAR", nullable=True),
            Col("sku_id", "VARCHAR", nullable=True),
            Col("consumed_quantity", "DOUBLE", nullable=True),
            Col("consumed_unit", "VARCHAR", nullable=True),
            Col("commitment_discount_id", "VARCHAR", nullable=True),
            Col("commitment_discount_status", "VARCHAR", nullable=True),
            Col("tags", "VARCHAR", nullable=True),
            Col("batch_id", "VARCHAR", nullable=True),
        ),
    )


def storage_prefix_rules(contract: Contract) -> SourceSchema:
    """Who owns what under a bucket prefix, for which batch and purpose; blank retention: the purpose's default."""
    return SourceSchema(
        "storage_prefix_rules",
        (
            Col("bucket", "VARCHAR"),
            Col("prefix", "VARCHAR", nullable=True),
            Col("purpose", "VARCHAR", checks=_isin(list(contract.storage_purposes))),
            Col("owner", "VARCHAR", nullable=True),
            Col("batch_id", "VARCHAR", nullable=True, checks=BATCH_KEY),
            Col("retention_days", "INTEGER", nullable=True, checks=NON_NEGATIVE),
        ),
    )


PRICE_PER_GB_MONTH = (pa.Check.str_matches(r"^\d{1,12}(\.\d{1,6})?$"),)


def storage_prices(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "storage_prices",
        (
            Col("storage_class", "VARCHAR"),
            Col("price_per_gb_month", "DECIMAL(18,6)", checks=PRICE_PER_GB_MONTH),
        ),
        unique=("storage_class",),
    )


# Device samples are validated inside DuckDB (cost_pipeline/ingest/telemetry.py); their column types live here
# so the contract entry and the raw table still share one definition.
DEVICE_SAMPLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("timestamp", "TIMESTAMP"),
    ("hostname", "VARCHAR"),
    ("gpu", "INTEGER"),
    ("job_id", "VARCHAR"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DOUBLE"),
    ("DCGM_FI_PROF_SM_ACTIVE", "DOUBLE"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DOUBLE"),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", "DOUBLE"),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", "DOUBLE"),
    ("DCGM_FI_DEV_POWER_USAGE", "DOUBLE"),
)
DEVICE_SAMPLE_ACTIVITY_COLUMNS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
)

# S3 Inventory rows (I6) are validated inside DuckDB too (cost_pipeline/ingest/s3_inventory.py), by AWS field
# name; extra inventory fields are not kept. version_id and etag may be null, size_bytes is never negative and
# inventory_date_from is manifest or file_name.
STORAGE_INVENTORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bucket", "VARCHAR"),
    ("object_key", "VARCHAR"),
    ("version_id", "VARCHAR"),
    ("size_bytes", "BIGINT"),
    ("last_modified_at", "TIMESTAMP"),
    ("etag", "VARCHAR"),
    ("storage_class", "VARCHAR"),
    ("inventory_at", "TIMESTAMP"),
    ("inventory_date_from", "VARCHAR"),
)
