"""Validation schemas for every input, built from the contract.

One ``SourceSchema`` per raw table gives both the pandera schema that validates incoming rows and the
warehouse column types, so the contract entry, the check and the raw column share one name.
Enumerations come from the contract: a new contract version changes validation without code changes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import partial

import pandas as pd
import pandera.pandas as pa

from cost_pipeline.contract import DEFAULT_MAX_GPU_POWER_WATTS, MIG_PROFILE_PATTERN, Contract, available_versions
from cost_pipeline.night_clock import AFTER_NIGHT, CLOCK_SKEW, latest_instant, latest_month

MONEY_PATTERN = r"^-?\d{1,15}(\.\d{1,2})?$"
MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])(-01)?$"
PLAIN_NUMBER = r"^\d{1,15}(\.\d{1,2})?$"  # a non-negative number with up to two decimals


def as_number(value: object) -> Decimal | None:
    """A value as a number, NaN and infinities included; None when it is no number (the type check refuses it)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else Decimal(str(value))
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, str):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return None
    return None


NOT_FINITE = "not_finite"  # NaN, Infinity or -Infinity
TOO_LARGE = "too_large"  # above the domain's high bound
WHOLE_NUMBER = "whole_number"  # a fraction where the domain holds whole numbers (a GPU index of 1.5)


@dataclass(frozen=True)
class Domain:
    """What a numeric column may hold: a finite number (no NaN, no infinity) from ``low`` to ``high``.

    ``high`` keeps every value far inside its warehouse type, so sums and products in dbt cannot overflow. A row
    outside the domain is quarantined under ``<column>.<rule>``, the rule naming what broke: ``not_finite`` for NaN
    or an infinity, ``below`` for a value under ``low`` (``non_negative`` for a negative count or amount) and
    ``above`` for one over ``high`` (``too_large``), and, where the domain is ``whole``, ``whole_number`` for a
    fraction (a cast to an integer type would round 1.5 to 2 without a word), with ``what`` and the range as its
    message. The pandas path (``Col.domain``) and the in-database path (``sql_breaks``) check the same declaration.
    """

    below: str  # the rule's suffix for a value under low
    what: str  # what the value is, with an example: "a finite non-negative amount such as 12.34"
    low: Decimal
    high: Decimal
    above: str = TOO_LARGE  # the rule's suffix for a value over high
    whole: bool = False  # whole numbers only: counts, indexes, tokens

    def broken(self, value: object) -> str | None:
        """The rule suffix a number outside the domain breaks; None for a number inside it, or anything else."""
        number = as_number(value)
        if number is None:
            return None
        if not number.is_finite():
            return NOT_FINITE
        if number < self.low:
            return self.below
        if number > self.high:
            return self.above
        return WHOLE_NUMBER if self.whole and number != number.to_integral_value() else None

    def admits(self, value: object) -> bool:
        """False for a number outside the domain (NaN and infinities too); True for anything else."""
        return self.broken(value) is None

    def rules(self) -> tuple[str, ...]:
        """Every rule suffix the domain records, each once: not finite, below, above (and whole number)."""
        return tuple(dict.fromkeys((NOT_FINITE, self.below, self.above, *([WHOLE_NUMBER] if self.whole else []))))

    def describe(self) -> str:
        return f"{self.what}, from {_plain(self.low)} to {_plain(self.high)}"

    def checks(self) -> tuple[pa.Check, ...]:
        """One pandera check per rule, named by it; a value breaks at most one."""
        return tuple(
            pa.Check(partial(self._keeps, rule), element_wise=True, name=rule, description=self.describe())
            for rule in self.rules()
        )

    def _keeps(self, rule: str, value: object) -> bool:
        return self.broken(value) != rule

    def sql_breaks(self, expression: str, nullable: bool) -> list[tuple[str, str]]:
        """Each rule suffix with a SQL condition true when ``expression`` (text or a number) breaks it, in the order
        ``broken`` tries them. Text that is no number (or, required, a blank) breaks the ``below`` rule."""
        value = f"try_cast({expression} as double)"
        conditions = {
            NOT_FINITE: f"(isnan({value}) or isinf({value}))",
            self.below: f"coalesce({value} < {self.low}, true)",
        }
        above = f"{value} > {self.high}"
        conditions[self.above] = f"({conditions[self.above]} or {above})" if self.above in conditions else above
        if self.whole:
            conditions[WHOLE_NUMBER] = f"{value} <> floor({value})"
        return [
            (rule, f"({expression} is not null and {condition})" if nullable else condition)
            for rule, condition in conditions.items()
        ]


def _plain(number: Decimal) -> str:
    return f"{number:,f}"


# The domains, declared once. Each high bound is far below its warehouse type's limit (BIGINT 9.2e18, DECIMAL(18,2)
# 1e16) so that a product of two of them (GPUs x seconds, tokens x weight) still fits. A domain that may be negative
# names either bound out_of_range; an activity outside 0..1 is out of its unit_range on either side.
OUT_OF_RANGE = "out_of_range"
AMOUNT = Domain("non_negative", "a finite non-negative amount such as 12.34", Decimal(0), Decimal("999999999999.99"))
FOCUS_AMOUNT_RANGE = Domain(
    OUT_OF_RANGE,
    "a finite amount such as 12.34 (negative only as the contract allows)",
    Decimal(-(10**15)),
    Decimal(10**15),
    OUT_OF_RANGE,
)
QUANTITY = Domain(OUT_OF_RANGE, "a finite quantity such as 1.5", Decimal(-(10**15)), Decimal(10**15), OUT_OF_RANGE)
HOURS_DOMAIN = Domain("non_negative", "a finite non-negative number of hours such as 7.5", Decimal(0), Decimal(10**9))
PERCENT = Domain("non_negative", "a finite non-negative percentage such as 10.00", Decimal(0), Decimal(10**6))
GPU_COUNT = Domain("non_negative", "a non-negative number of GPUs such as 8", Decimal(0), Decimal(10**6), whole=True)
COUNT = Domain("non_negative", "a non-negative whole number such as 42", Decimal(0), Decimal(10**9), whole=True)
BIG_COUNT = Domain("non_negative", "a non-negative whole number such as 42", Decimal(0), Decimal(10**15), whole=True)
SECONDS = Domain("non_negative", "a non-negative number of seconds such as 3600", Decimal(0), Decimal(10**11))
MILLISECONDS = Domain("non_negative", "a non-negative number of milliseconds such as 850", Decimal(0), Decimal(10**12))
MINUTES = Domain("non_negative", "a finite non-negative number of minutes such as 12.5", Decimal(0), Decimal(10**9))
TOKENS = Domain("non_negative", "a non-negative number of tokens such as 512", Decimal(0), Decimal(10**12), whole=True)
BYTES = Domain("non_negative", "a non-negative number of bytes such as 1048576", Decimal(0), Decimal(10**17))
FRACTION = Domain("unit_range", "a finite activity such as 0.93", Decimal(0), Decimal(1), "unit_range")
BYTES_PER_SECOND = Domain(
    "non_negative", "a finite non-negative rate such as 1000000000 bytes a second", Decimal(0), Decimal(10**15)
)


def gpu_watts(max_watts: Decimal) -> Domain:
    """One GPU's power draw in watts, up to the contract's energy.max_gpu_power_watts: above it a reading is in
    milliwatts (NVML's unit, 1,000 times the watts) or otherwise no GPU's, and would price its energy 1,000 times."""
    return Domain(
        "non_negative",
        "a finite non-negative power draw of one GPU in watts such as 300 (not milliwatts), at most the contract's "
        "energy.max_gpu_power_watts",
        Decimal(0),
        max_watts,
    )


# A GPU's energy counter since its driver loaded: 10**16 mJ is a 1 kW GPU for 300 years.
MILLIJOULES = Domain("non_negative", "a non-negative energy such as 128996013 millijoules", Decimal(0), Decimal(10**16))
GPU_INDEX = Domain("index", "a non-negative GPU index such as 0", Decimal(0), Decimal(10**6), whole=True)
TIME_UNITS = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": Decimal("0.001")}


@dataclass(frozen=True)
class NotBefore:
    """A cross-field rule: ``later`` is not below ``earlier`` when a row holds both (end >= start,
    salvage <= price, allocated <= requested). The row is quarantined under ``rule``."""

    later: str
    earlier: str
    rule: str
    expects: str  # what the row should have, as the quarantine message says it
    unsaid: float | None = None  # a value of ``later`` that means the export did not say (the rule then holds)

    def holds(self, row: pd.Series) -> bool:
        later, earlier = row[self.later], row[self.earlier]
        if pd.isna(later) or pd.isna(earlier):
            return True
        if self.unsaid is not None and not isinstance(later, str) and later == self.unsaid:
            return True
        if isinstance(later, str) or isinstance(earlier, str):  # DECIMAL columns travel as text
            first, second = as_number(later), as_number(earlier)
            return first is None or second is None or not (first.is_finite() and second.is_finite()) or first >= second
        return bool(later >= earlier)

    def check(self) -> pa.Check:
        return pa.Check(self.holds, element_wise=True, name=self.rule, description=self.expects)


@dataclass(frozen=True)
class SumAtMost:
    """A rule across the rows of one file: the rows sharing ``key`` have ``column`` adding up to at most ``limit``
    (a person's hours of one day, across entries). Every row of a group over it is quarantined under ``rule``: which
    of them is wrong the file does not say, and none is priced. The key columns in ``names`` hold a person's name
    and are compared as a reader compares them, as person_key does (cost_pipeline/person_name.py): "Alice Zhang" and
    "alice  zhang" are one person, whose day is one day."""

    key: tuple[str, ...]
    column: str
    limit: Decimal
    rule: str
    expects: str  # what each row should have, as the quarantine message says it
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Disjoint:
    """A rule across the rows of one file: the rows sharing ``key`` hold spans ``[start, end)`` that do not overlap
    (a replica's runs: one replica cannot run twice at once). Every row whose span overlaps another's of its group is
    quarantined under ``rule``: which of them is wrong the file does not say, and counting both would count the
    overlap twice. A span ending when the next starts does not overlap it."""

    key: tuple[str, ...]
    start: str
    end: str
    rule: str
    expects: str  # what each row should have, as the quarantine message says it


def ends_after_start(end: str, start: str) -> NotBefore:
    return NotBefore(end, start, f"{end}.not_before_{start}", f"{end} at or after {start}")


# A MIG profile names its compute slices first (docs/fractional_gpus.md): 1g.10gb, 3g.40gb, 1g.10gb+me, 1g.10gb+gfx.
MIG_PROFILE = (pa.Check.str_matches(f"^{MIG_PROFILE_PATTERN}$"),)
SALVAGE_EXPECTS = "a salvage value no higher than the unit price it was bought at"
# Kubernetes job events: a pod holds no more GPUs than it asked for. A GPU is an extended resource, which Kubernetes
# never overcommits (its request must equal its limit) and the device plugin hands out exactly that many, so more
# allocated than requested is an exporter's error. A request of 0 is one the event does not state; a job that asked
# for no GPU gets none. Slurm is not held to it (scheduler_jobs): a job given whole nodes (--exclusive, a partition
# with OverSubscribe=EXCLUSIVE) is allocated every GPU on them, ReqTRES gres/gpu=4 and AllocTRES gres/gpu=8, and it
# occupied and is charged for the 8 (R4); the 4 it did not ask for and left idle are R24's over_requested saving.
ALLOCATED_AT_MOST_REQUESTED = NotBefore(
    "gpus_requested",
    "gpus_allocated",
    "gpus_allocated.at_most_requested",
    "no more GPUs allocated than requested (where a request is stated): Kubernetes allocates exactly the GPUs a "
    "pod requests",
    unsaid=0,
)


@dataclass(frozen=True)
class Col:
    name: str
    sql_type: str
    nullable: bool = False
    checks: tuple[pa.Check, ...] = ()
    # The quarantine rule a failed check of this column is recorded under, when the contract names one
    # (labour_task); otherwise <column>.<check>.
    rule: str | None = None
    # A numeric column's domain: finite, its sign and a range that fits the warehouse type.
    domain: Domain | None = None
    # A TIMESTAMP column that may arrive as a number: the number's unit since the epoch (s, ms, us, ns). Without
    # one a number in a time column is refused (``<column>.time_unit``), never read as a 1970 date.
    unit: str | None = None
    # An id compared case-folded wherever rows are matched by it (a key unique within a file, a group of rows):
    # R-L1 and r-l1 are one replica, as staging compares it (dbt macro same_id). The row keeps what the file said.
    folded: bool = False

    @property
    def all_checks(self) -> tuple[pa.Check, ...]:
        """The contract's checks of the column, its domain's last."""
        return self.checks if self.domain is None else (*self.checks, *self.domain.checks())

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
    # Keys unique within a file: a column, or a tuple of columns that together name a record.
    unique: tuple[str | tuple[str, ...], ...] = field(default=())
    # Checks across columns of one row (element-wise on the row); a failure is quarantined under the check's name.
    row_checks: tuple[pa.Check, ...] = field(default=())
    # Cross-field order rules (end >= start, salvage <= price), declared as data; checked like row checks.
    ordered: tuple[NotBefore, ...] = field(default=())
    # Sums across the rows of one file sharing a key (a person's hours of a day), checked after the row checks.
    sums: tuple[SumAtMost, ...] = field(default=())
    # Spans of the rows of one file sharing a key that must not overlap (a replica's runs), checked after the sums.
    disjoint: tuple[Disjoint, ...] = field(default=())

    @property
    def folded(self) -> frozenset[str]:
        """The columns compared case-folded where rows are matched (``Col.folded``)."""
        return frozenset(c.name for c in self.columns if c.folded)

    @property
    def all_row_checks(self) -> tuple[pa.Check, ...]:
        return (*self.row_checks, *(rule.check() for rule in self.ordered))

    def pandera(self) -> pa.DataFrameSchema:
        return pa.DataFrameSchema(
            {
                c.name: pa.Column(c.pandas_dtype, checks=list(c.all_checks), nullable=c.nullable, coerce=True)
                for c in self.columns
            },
            checks=list(self.all_row_checks),
            strict="filter",
        )


def _isin(values: list[str]) -> tuple[pa.Check, ...]:
    return (pa.Check.isin(values),)


def _shares_priced(contract: Contract, kind: str) -> tuple[pa.Check, ...]:
    """A job holding GPU shards (``kind`` shards) or CUDA MPS shares (mps) needs the contract to say how many make
    one GPU (gres.conf's Count per GPU); without it, a count is refused rather than priced as no GPU."""
    if contract.slurm_shares_per_gpu(kind) is not None:
        return ()
    gres = "gres/shard" if kind == "shards" else "gres/mps"
    return (
        pa.Check(
            lambda value: value == 0,
            element_wise=True,
            name=f"{kind}_per_gpu_in_contract",
            description=f"0 ({gres}) until the contract's fractional_gpus.slurm_{kind}_per_gpu says how many make "
            "one GPU",
        ),
    )


def _money() -> tuple[pa.Check, ...]:
    return (pa.Check.str_matches(MONEY_PATTERN),)


def _currency(contract: Contract) -> tuple[pa.Check, ...]:
    """The contract's reporting currency, the only one an amount may be in (there are no exchange rates)."""
    code = contract.reporting_currency
    return (pa.Check(lambda value: value == code, element_wise=True, name="reporting_currency"),)


def _date() -> tuple[pa.Check, ...]:
    return (pa.Check.str_matches(r"^\d{4}-\d{2}-\d{2}$"),)


_SKEW_TEXT = f"allowing {CLOCK_SKEW.seconds // 60} minutes of clock skew"


def _instant_not_after_night() -> tuple[pa.Check, ...]:
    """A time no later than the night reading the file (``night_clock``): a file records what has happened."""
    return (
        pa.Check(
            lambda times: times <= latest_instant(),
            name=AFTER_NIGHT,
            description=f"a time no later than the night that reads the file (its clock, {_SKEW_TEXT}): the file "
            "records what has happened",
        ),
    )


def _not_after(texts: pd.Series, pattern: str, bound: str) -> pd.Series:
    """Each text of ``pattern`` no later than ``bound`` as text (ISO dates and months sort as text); any other
    value passes here."""
    return texts.map(
        lambda text: not (isinstance(text, str) and re.match(pattern, text)) or text[: len(bound)] <= bound
    ).astype(bool)


def _text_not_after_night(pattern: str, latest: Callable[[], str], what: str) -> tuple[pa.Check, ...]:
    """A text of ``pattern`` (an ISO date or month, compared as text) no later than ``latest()``, read once per
    validation; text of another form passes here (the pattern's own check refuses it)."""
    return (
        pa.Check(
            lambda texts: _not_after(texts, pattern, latest()),
            name=AFTER_NIGHT,
            description=f"{what} (its clock, {_SKEW_TEXT})",
        ),
    )


def _date_not_after_night() -> tuple[pa.Check, ...]:
    """An ISO date (``_date``) no later than the night's date: a file records what has happened."""
    return _text_not_after_night(
        _date()[0].statistics["pattern"],
        lambda: latest_instant().date().isoformat(),
        "a date no later than the night that reads the file",
    )


# A month (YYYY-MM or YYYY-MM-01) no later than the night's: a month starting after the night is no cost yet.
MONTH_NOT_AFTER_NIGHT = (
    pa.Check.str_matches(MONTH_PATTERN),
    *_text_not_after_night(
        MONTH_PATTERN,
        lambda: f"{latest_month():%Y-%m}",
        "a month no later than the month of the night that reads the file",
    ),
)

POSITIVE = (pa.Check.gt(0),)
BATCH_KEY = (pa.Check.str_matches(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"),)


def batch_registry(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "batch_registry",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY, folded=True),
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
    """The batch plan (R18) beside the registry's attributes: each value may be blank, but a registry file names the
    columns (``csv_columns``): one without them read as no plan for every batch."""
    return (
        Col("budget_cost", "DECIMAL(18,2)", nullable=True, checks=_money(), domain=AMOUNT),
        Col(
            "budget_gpu_hours",
            "DECIMAL(18,2)",
            nullable=True,
            checks=(pa.Check.str_matches(PLAIN_NUMBER),),
            domain=HOURS_DOMAIN,
        ),
        Col("max_trial_rounds", "INTEGER", nullable=True, checks=POSITIVE, domain=COUNT),
        Col("stop_condition", "VARCHAR", nullable=True),
        Col(
            "variance_boundary_pct",
            "DECIMAL(18,2)",
            nullable=True,
            checks=(pa.Check.str_matches(PLAIN_NUMBER),),
            domain=PERCENT,
        ),
    )


def batch_rounds(contract: Contract) -> SourceSchema:
    """Trial rounds (R18): a round is a time window of its batch; evidence is what the round newly established."""
    return SourceSchema(
        "batch_rounds",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY, folded=True),
            Col("round", "INTEGER", checks=POSITIVE, domain=COUNT),
            Col("started_at", "TIMESTAMP"),
            Col("ended_at", "TIMESTAMP"),
            Col("evidence", "VARCHAR", nullable=True),
        ),
        # A round is its batch's number: a file naming one twice says two things of it (a newer file restates it).
        unique=(("batch_id", "round"),),
        ordered=(ends_after_start("ended_at", "started_at"),),
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
            Col("cost_rate", "DECIMAL(18,2)", nullable=True, checks=_money(), domain=AMOUNT),
            Col("currency", "VARCHAR", nullable=True, checks=_currency(contract)),
        ),
        # 32 hours of one person on one day in three entries of 8, 4 and 20 were all priced: no entry broke 24. A
        # person is their name as person_key folds it: a second spelling of a name got another 24 hours.
        sums=(
            SumAtMost(
                ("entry_date", "first_name", "last_name"),
                "hours",
                Decimal(24),
                "hours_of_a_person_day",
                "with the file's other entries of its person and day, at most 24 hours (each is quarantined)",
                names=("first_name", "last_name"),
            ),
        ),
    )


def service_invoices(contract: Contract) -> SourceSchema:
    """Vendor invoices and accruals (I8). ``service_month`` (YYYY-MM, optional) dates the service; without it the
    month of ``invoiced_on``. An accrual (blank ``invoiced_on``) must carry it. A service month after the night's,
    or an invoice dated after the night, is no cost yet (``<column>.after_night``, ``night_clock``)."""
    return SourceSchema(
        "service_invoices",
        (
            Col("invoice_id", "VARCHAR"),
            Col("vendor", "VARCHAR", folded=True),  # LABELCRAFT is Labelcraft, as staging compares vendors
            Col("batch_id", "VARCHAR", nullable=True),
            Col("stage", "VARCHAR", checks=_isin(contract.service_stages)),
            Col("amount", "DECIMAL(18,2)", checks=_money(), domain=AMOUNT),
            Col("currency", "VARCHAR", checks=_currency(contract)),
            # A service not yet delivered, or an invoice not yet written, is no cost yet (docs/inputs.md).
            Col("invoiced_on", "DATE", nullable=True, checks=(*_date(), *_date_not_after_night())),
            Col("service_month", "VARCHAR", nullable=True, checks=MONTH_NOT_AFTER_NIGHT),
        ),
        unique=(("vendor", "invoice_id"),),  # an invoice number is the vendor's own: two vendors may share one
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
            Col("restarts", "INTEGER", domain=COUNT),
            Col("submit_at", "TIMESTAMP", nullable=True),
            # sacct Eligible: when the job could first start (dependencies met, --begin passed, hold released); its
            # queue for capacity starts here. Null when the export has no Eligible or it is Unknown: then at Submit.
            Col("eligible_at", "TIMESTAMP", nullable=True),
            Col("start_at", "TIMESTAMP", nullable=True),
            Col("end_at", "TIMESTAMP", nullable=True),
            Col("elapsed_seconds", "BIGINT", nullable=True, domain=SECONDS),
            Col("time_limit_seconds", "BIGINT", nullable=True, domain=SECONDS),
            # The requested counts are null (unknown) for a row of an export without ReqTRES (issue 10): never 0,
            # never the allocated ones copied.
            Col("gpus_requested", "INTEGER", nullable=True, domain=GPU_COUNT),
            Col("gpus_allocated", "INTEGER", domain=GPU_COUNT),
            # Of the GPUs, the MIG instances and their compute slices (docs/fractional_gpus.md).
            Col("mig_instances_requested", "INTEGER", nullable=True, domain=GPU_COUNT),
            Col("mig_slices_requested", "INTEGER", nullable=True, domain=COUNT),
            Col("mig_instances_allocated", "INTEGER", domain=GPU_COUNT),
            Col("mig_slices_allocated", "INTEGER", domain=COUNT),
            Col("gpu_instance_profile", "VARCHAR", nullable=True, checks=MIG_PROFILE),
            # The GRES type before the profile (nvidia_a30 in nvidia_a30_2g.11gb): the GPU model, for its slices.
            Col("mig_gpu_type", "VARCHAR", nullable=True),
            # GPU shards (Slurm gres/shard): a share of a GPU only the contract's slurm_shards_per_gpu can price.
            Col("shards_requested", "INTEGER", nullable=True, domain=COUNT, checks=_shares_priced(contract, "shards")),
            Col("shards_allocated", "INTEGER", domain=COUNT, checks=_shares_priced(contract, "shards")),
            # CUDA MPS shares (Slurm gres/mps): priced by the contract's slurm_mps_per_gpu.
            Col("mps_requested", "INTEGER", nullable=True, domain=COUNT, checks=_shares_priced(contract, "mps")),
            Col("mps_allocated", "INTEGER", domain=COUNT, checks=_shares_priced(contract, "mps")),
            Col("node_count", "INTEGER", nullable=True, domain=COUNT),
            Col("node_list", "VARCHAR", nullable=True),
            *_label_columns(contract),
        ),
        # No allocated <= requested here: Slurm allocates a whole node's GPUs to a job given the node (see
        # ALLOCATED_AT_MOST_REQUESTED); the GPU counts' domains still refuse a negative, fractional or absurd count.
        ordered=(ends_after_start("end_at", "start_at"),),
    )


def scheduler_events(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "scheduler_events",
        (
            Col("job_id", "VARCHAR"),
            # The cluster the job ran on (blank: the one cluster of an export that names none); a Job name
            # submitted on two clusters is two jobs, and the contract's owned_vs_cloud.cloud_clusters are rented.
            Col("cluster", "VARCHAR", nullable=True),
            # The Job's namespace (blank: a stream that names none): Job names are namespace-scoped, so team-a/eval
            # and team-b/eval are two jobs.
            Col("namespace", "VARCHAR", nullable=True),
            Col("event", "VARCHAR", checks=_isin(contract.scheduler_events)),
            Col("at", "TIMESTAMP", checks=_instant_not_after_night()),
            Col("gpus_requested", "INTEGER", nullable=True, domain=GPU_COUNT),
            Col("gpus_allocated", "INTEGER", nullable=True, domain=GPU_COUNT),
            # The GPUs are MIG instances of this profile (nvidia.com/mig-1g.10gb: 1g.10gb); blank: whole GPUs.
            Col("gpu_instance_profile", "VARCHAR", nullable=True, checks=MIG_PROFILE),
            Col("time_limit_s", "BIGINT", nullable=True, domain=SECONDS),
            Col("state", "VARCHAR", nullable=True, checks=_isin(list(contract.sacct_states))),
            *_label_columns(contract),
        ),
        ordered=(ALLOCATED_AT_MOST_REQUESTED,),
    )


def training_steps(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "training_steps",
        (
            Col("batch_id", "VARCHAR", checks=BATCH_KEY),
            Col("job_id", "VARCHAR"),
            Col("step", "BIGINT", domain=BIG_COUNT),
            # A step file records steps that ran: one stamped after the night would count tokens not yet trained.
            Col("started_at", "TIMESTAMP", checks=_instant_not_after_night()),
            Col("ended_at", "TIMESTAMP", checks=_instant_not_after_night()),
            Col("committed", "BOOLEAN"),
            Col("discarded_reason", "VARCHAR", nullable=True, checks=_isin(contract.discard_reasons)),
            Col("samples", "BIGINT", nullable=True, domain=BIG_COUNT),
            Col("tokens", "BIGINT", nullable=True, domain=TOKENS),
            Col("config_version", "VARCHAR", nullable=True),
            Col("data_version", "VARCHAR", nullable=True),
        ),
        # A step is its job, number and start (stg_steps__training_steps' record key): a file naming one twice says
        # two things of it, or one thing twice. Another file naming it again restates it (newest_delivery).
        unique=(("job_id", "step", "started_at"),),
        ordered=(ends_after_start("ended_at", "started_at"),),
    )


def ledger_purchases(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "ledger_purchases",
        (
            Col("purchase_id", "VARCHAR", folded=True),
            # A purchase dated after the night has not been made: depreciating it would charge capacity not owned.
            Col("purchased_on", "DATE", checks=(*_date(), *_date_not_after_night())),
            Col("asset_class", "VARCHAR", checks=_isin(contract.asset_classes)),
            Col("description", "VARCHAR", nullable=True),
            Col("quantity", "INTEGER", checks=POSITIVE, domain=COUNT),
            Col("unit_price", "DECIMAL(18,2)", checks=_money(), domain=AMOUNT),
            Col("currency", "VARCHAR", checks=_currency(contract)),
            Col("gpus_per_unit", "INTEGER", domain=GPU_COUNT),
            Col("depreciation_years", "INTEGER", checks=POSITIVE, domain=COUNT),
            Col("salvage_value", "DECIMAL(18,2)", checks=_money(), domain=AMOUNT),
        ),
        unique=("purchase_id",),
        ordered=(NotBefore("unit_price", "salvage_value", "salvage_value.at_most_unit_price", SALVAGE_EXPECTS),),
    )


def ledger_facility(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "ledger_facility",
        (
            Col("month", "VARCHAR", checks=MONTH_NOT_AFTER_NIGHT),
            Col("item", "VARCHAR", checks=_isin(contract.facility_items)),
            Col("amount", "DECIMAL(18,2)", checks=_money(), domain=AMOUNT),
            Col("currency", "VARCHAR", checks=_currency(contract)),
        ),
    )


def serving_requests(contract: Contract) -> SourceSchema:
    serving = contract.serving
    return SourceSchema(
        "serving_requests",
        (
            Col("request_id", "VARCHAR", folded=True),
            Col("requested_at", "TIMESTAMP"),
            Col("model", "VARCHAR"),
            Col("tenant", "VARCHAR", nullable=True),
            Col("business_line", "VARCHAR", nullable=True),
            Col("input_tokens", "BIGINT", domain=TOKENS),
            Col("output_tokens", "BIGINT", domain=TOKENS),
            Col("cache_hit", "BOOLEAN"),
            Col("latency_ms", "BIGINT", nullable=True, domain=MILLISECONDS),
            Col("latency_tier", "VARCHAR", nullable=True, checks=_isin([t["code"] for t in serving["latency_tiers"]])),
            Col("status", "VARCHAR", checks=_isin(list(serving["request_statuses"]))),
            Col("task_id", "VARCHAR", nullable=True),
            Col("attempt", "INTEGER", checks=POSITIVE, domain=COUNT),
            Col("escalated_to", "VARCHAR", nullable=True),
            Col("human_handoff", "BOOLEAN"),
            Col("request_shape", "VARCHAR", checks=_isin(contract.request_shapes)),
        ),
        # A request is its id (case-folded) and its start, as staging tells requests apart (stg_serving__requests):
        # providers reuse ids for other requests, and a log may spell an id in another case.
        unique=(("request_id", "requested_at"),),
        # A request's latency tier is given, or derived from latency_ms: without either it has no tier to be
        # grouped by (it got past ingest and stopped the night in dbt).
        row_checks=(
            pa.Check(
                lambda row: not (pd.isna(row["latency_tier"]) and pd.isna(row["latency_ms"])),
                element_wise=True,
                name="latency_known",
            ),
        ),
    )


def serving_replicas(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "serving_replicas",
        (
            Col("replica_id", "VARCHAR", folded=True),
            Col("model", "VARCHAR"),
            Col("gpus", "INTEGER", checks=POSITIVE, domain=GPU_COUNT),
            Col("started_at", "TIMESTAMP"),
            Col("ended_at", "TIMESTAMP"),
            Col(
                "gpu_hour_price",
                "DECIMAL(18,4)",
                nullable=True,
                checks=(pa.Check.str_matches(r"^\d{1,12}(\.\d{1,4})?$"),),
                domain=AMOUNT,
            ),
        ),
        unique=(("replica_id", "started_at"),),  # a replica id runs again: each run is its id and start
        ordered=(ends_after_start("ended_at", "started_at"),),
        # Two runs of one replica in one file that overlap in time were both counted: its GPU cost twice for the
        # overlap. A newer file's run superseding an older file's is staging's (stg_serving__replicas).
        disjoint=(
            Disjoint(
                ("replica_id",),
                "started_at",
                "ended_at",
                "replica_runs.overlap",
                "no overlap in time with another run of its replica_id in the file (each run that overlaps one is "
                "quarantined)",
            ),
        ),
    )


def serving_monthly_costs(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "serving_monthly_costs",
        (
            Col("month", "VARCHAR", checks=MONTH_NOT_AFTER_NIGHT),
            Col("item", "VARCHAR", checks=_isin(list(contract.serving["monthly_cost_items"]))),
            Col("amount", "DECIMAL(18,2)", checks=_money(), domain=AMOUNT),
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
            Col("human_minutes", "DOUBLE", nullable=True, domain=MINUTES),
            Col("human_cost_per_hour", "DECIMAL(18,2)", nullable=True, checks=_money(), domain=AMOUNT),
        ),
        unique=("task_id",),
        row_checks=(
            # A hand-off's minutes without the cost of a person's hour would cost nothing (R14's trap).
            pa.Check(
                lambda row: (
                    pd.isna(row["human_minutes"])
                    or row["human_minutes"] == 0
                    or not pd.isna(row["human_cost_per_hour"])
                ),
                element_wise=True,
                name="handoff_cost_per_hour",
            ),
        ),
    )


def _focus_amount_sign(contract: Contract) -> pa.Check:
    """A negative FOCUS amount only on the lines the contract allows it on (a credit, a correction...)."""
    allowed = contract.focus_negative_amounts
    categories, classes = set(allowed["charge_categories"]), set(allowed["charge_classes"])
    reversal = allowed["negative_consumed_quantity"]

    def holds(row: pd.Series) -> bool:
        numbers = [as_number(row[c]) for c in FOCUS_AMOUNT_COLUMNS if not pd.isna(row[c])]
        if not any(n is not None and n.is_finite() and n < 0 for n in numbers):
            return True
        if row["charge_category"] in categories or row["charge_class"] in classes:
            return True
        quantity = row["consumed_quantity"]
        return reversal and not pd.isna(quantity) and quantity < 0

    expects = (
        f"non-negative amounts, unless its ChargeCategory is {' or '.join(sorted(categories))}, its ChargeClass is "
        f"{' or '.join(sorted(classes))}" + (", or it reverses usage (a negative ConsumedQuantity)" if reversal else "")
    )
    return pa.Check(holds, element_wise=True, name="focus_amount.sign", description=expects)


def _focus_credit_sign(contract: Contract) -> tuple[pa.Check, ...]:
    """No positive amount on a credit (the contract's never-positive categories) unless the line is a correction:
    a credit gives money back, and a positive one would add to the cost it should reduce. FOCUS lets a correction
    (ChargeClass Correction) reverse a credit of an earlier billing period. No check when no category is named."""
    allowed = contract.focus_negative_amounts
    categories, classes = set(allowed["never_positive_categories"]), set(allowed["charge_classes"])
    if not categories:
        return ()

    def holds(row: pd.Series) -> bool:
        if row["charge_category"] not in categories or row["charge_class"] in classes:
            return True
        numbers = [as_number(row[c]) for c in FOCUS_AMOUNT_COLUMNS if not pd.isna(row[c])]
        return not any(n is not None and n.is_finite() and n > 0 for n in numbers)

    expects = f"no positive amount on a line whose ChargeCategory is {' or '.join(sorted(categories))}" + (
        f", unless its ChargeClass is {' or '.join(sorted(classes))} (a correction may reverse a credit of an earlier "
        "billing period)"
        if classes
        else ""
    )
    return (pa.Check(holds, element_wise=True, name="focus_credit.sign", description=expects),)


FOCUS_AMOUNT_COLUMNS = ("billed_cost", "effective_cost", "list_cost", "contracted_cost")
# Amounts as the billing loader writes them (plain decimal text, up to 18 decimals: the FinOps sample writes 11).
FOCUS_AMOUNT = (pa.Check.str_matches(r"^-?\d{1,20}(\.\d{1,18})?$"),)


def billing_focus(contract: Contract) -> SourceSchema:
    """FOCUS 1.x columns the pipeline uses; amounts keep up to 18 decimals as providers write them."""
    return SourceSchema(
        "billing_focus",
        (
            # Whose bill a line is on: two accounts' exports may hold lines alike in every other column (a support
            # fee, a tax), and they are two charges (stg_billing__focus_charges compares every column; a line with
            # neither, loaded before they were kept, matches a later line of any account).
            Col("billing_account_id", "VARCHAR", nullable=True),
            Col("sub_account_id", "VARCHAR", nullable=True),
            Col("billing_period_start", "TIMESTAMP", nullable=True),
            Col("billing_period_end", "TIMESTAMP", nullable=True),
            Col("charge_period_start", "TIMESTAMP"),
            Col("charge_period_end", "TIMESTAMP"),
            Col("charge_category", "VARCHAR", nullable=True, checks=_isin(contract.focus_charge_categories)),
            Col("charge_class", "VARCHAR", nullable=True, checks=_isin(contract.focus_charge_classes)),
            Col("charge_frequency", "VARCHAR", nullable=True),
            Col("pricing_category", "VARCHAR", nullable=True),
            Col("billed_cost", "DECIMAL(38,18)", checks=FOCUS_AMOUNT, domain=FOCUS_AMOUNT_RANGE),
            Col("effective_cost", "DECIMAL(38,18)", checks=FOCUS_AMOUNT, domain=FOCUS_AMOUNT_RANGE),
            Col("list_cost", "DECIMAL(38,18)", nullable=True, checks=FOCUS_AMOUNT, domain=FOCUS_AMOUNT_RANGE),
            Col("contracted_cost", "DECIMAL(38,18)", nullable=True, checks=FOCUS_AMOUNT, domain=FOCUS_AMOUNT_RANGE),
            Col("billing_currency", "VARCHAR", nullable=True, checks=_currency(contract)),
            Col("resource_id", "VARCHAR", nullable=True),
            Col("resource_name", "VARCHAR", nullable=True),
            Col("service_name", "VARCHAR", nullable=True),
            Col("service_category", "VARCHAR", nullable=True),
            Col("invoice_id", "VARCHAR", nullable=True),
            Col("sku_id", "VARCHAR", nullable=True),
            Col("consumed_quantity", "DOUBLE", nullable=True, domain=QUANTITY),
            Col("consumed_unit", "VARCHAR", nullable=True),
            Col("commitment_discount_id", "VARCHAR", nullable=True),
            Col("commitment_discount_status", "VARCHAR", nullable=True),
            Col("provider_name", "VARCHAR", nullable=True),
            Col("publisher_name", "VARCHAR", nullable=True),
            Col("invoice_issuer_name", "VARCHAR", nullable=True),
            Col("tags", "VARCHAR", nullable=True),
            Col("batch_id", "VARCHAR", nullable=True),
            # The export run whose manifest lists the line's file (AWS Data Exports' executionId, Azure's
            # runInfo.runId), the run's own time where the manifest gives one (Azure's runInfo.submittedTime; AWS's
            # gives none), how many data files it lists and the manifest's landing path; a file in a run's folder
            # or beside one that no manifest lists yet: its folder as the run, the rest null; null for any other
            # file (billing.py, stg_billing__focus_charges: the newest complete run replaces older ones).
            Col("export_run_id", "VARCHAR", nullable=True),
            Col("export_run_at", "TIMESTAMP", nullable=True),
            Col("export_run_files", "INTEGER", nullable=True, domain=COUNT),
            Col("export_run_manifest", "VARCHAR", nullable=True),
        ),
        row_checks=(_focus_amount_sign(contract), *_focus_credit_sign(contract)),
        ordered=(
            ends_after_start("charge_period_end", "charge_period_start"),
            ends_after_start("billing_period_end", "billing_period_start"),
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
            Col("retention_days", "INTEGER", nullable=True, domain=COUNT),
        ),
        # One rule per bucket prefix in a file (a blank prefix is the whole bucket); a newer file restates it.
        unique=(("bucket", "prefix"),),
    )


PRICE_PER_GB_MONTH = (pa.Check.str_matches(r"^\d{1,12}(\.\d{1,6})?$"),)


def storage_prices(contract: Contract) -> SourceSchema:
    return SourceSchema(
        "storage_prices",
        (
            Col("storage_class", "VARCHAR", folded=True),
            Col("price_per_gb_month", "DECIMAL(18,6)", checks=PRICE_PER_GB_MONTH, domain=AMOUNT),
        ),
        unique=("storage_class",),
    )


# Device samples are validated inside DuckDB (cost_pipeline/ingest/telemetry.py); their column types live here
# so the contract entry and the raw table still share one definition. DEVICE_SAMPLE_BASE_COLUMNS are the wide
# format's columns before the GPU energy counter; a file without the counter loads with it null.
DEVICE_SAMPLE_ENERGY_COUNTER = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DEVICE_SAMPLE_BASE_COLUMNS: tuple[tuple[str, str], ...] = (
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
# A MIG instance's samples (docs/fractional_gpus.md) name the instance and its profile: dcgm-exporter's GPU_I_ID and
# GPU_I_PROFILE labels (such as 3 and 3g.40gb). Both blank: the sample is of the whole GPU.
DEVICE_SAMPLE_MIG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gpu_instance_id", "INTEGER"),
    ("gpu_instance_profile", "VARCHAR"),
)
# The cluster the host is in (a cluster or Prometheus external label; a column of the wide format): two clusters may
# each have a gpu-01, and a sample matches only the jobs of its cluster (or of none). Blank: the one cluster of a
# site whose telemetry names none, matched as before clusters were named.
DEVICE_SAMPLE_CLUSTER = ("cluster", "VARCHAR")
DEVICE_SAMPLE_COLUMNS = (
    *DEVICE_SAMPLE_BASE_COLUMNS,
    (DEVICE_SAMPLE_ENERGY_COUNTER, "BIGINT"),
    *DEVICE_SAMPLE_MIG_COLUMNS,
    DEVICE_SAMPLE_CLUSTER,
)
DEVICE_SAMPLE_ACTIVITY_COLUMNS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
)


def device_sample_domains(max_watts: Decimal = DEFAULT_MAX_GPU_POWER_WATTS) -> dict[str, Domain]:
    """The device samples' numeric domains, in the order their rules are checked, with the power draw bounded by
    the contract's energy.max_gpu_power_watts; power and the energy counter (mJ since the driver loaded) may be
    blank."""
    return {
        "gpu": GPU_INDEX,
        **dict.fromkeys(DEVICE_SAMPLE_ACTIVITY_COLUMNS, FRACTION),
        "DCGM_FI_PROF_NVLINK_TX_BYTES": BYTES_PER_SECOND,
        "DCGM_FI_PROF_NVLINK_RX_BYTES": BYTES_PER_SECOND,
        "DCGM_FI_DEV_POWER_USAGE": gpu_watts(max_watts),
        DEVICE_SAMPLE_ENERGY_COUNTER: MILLIJOULES,
        "gpu_instance_id": GPU_INDEX,
    }


DEVICE_SAMPLE_DOMAINS = device_sample_domains()
DEVICE_SAMPLE_OPTIONAL = (
    "job_id",
    "DCGM_FI_DEV_POWER_USAGE",
    DEVICE_SAMPLE_ENERGY_COUNTER,
    *(name for name, _ in DEVICE_SAMPLE_MIG_COLUMNS),
    DEVICE_SAMPLE_CLUSTER[0],
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
# The inventory's numeric domain, checked in DuckDB like the device samples' (a size must also be whole digits).
STORAGE_INVENTORY_DOMAINS: dict[str, Domain] = {"size_bytes": BYTES}
