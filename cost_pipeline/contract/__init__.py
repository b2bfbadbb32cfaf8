"""The versioned definitions contract (DOMAIN.md R3).

The contract is data, not code: one YAML file per version in this package. Validation schemas
(``schemas.py``) and the warehouse's contract tables are both built from it, so changing an
enumeration changes validation and the dbt tests without touching code.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from cost_pipeline.contract.due import DeliveryDue, parse_due

_FILE_PATTERN = re.compile(r"^definitions_(v\d+)\.yaml$")
# A MIG profile (docs/fractional_gpus.md): its compute slices first (the group `slices`), then g., its memory and the
# options newer drivers add: 1g.10gb, 3g.40gb, 1g.10gb+me, 1g.10gb+me.all, 1g.10gb+gfx.
# A GPU's largest possible power draw in watts when a contract names no energy.max_gpu_power_watts: the largest
# accelerators draw about 1,200-1,500 W per board, so 3,000 W leaves headroom and still refuses milliwatts (NVML's
# unit: 120,000 for a 120 W GPU).
DEFAULT_MAX_GPU_POWER_WATTS = Decimal(3000)
MIG_PROFILE_PATTERN = r"(?P<slices>[1-9][0-9]?)g\.[0-9]+gb(?:[+-][a-z]+(?:\.[a-z]+)?)*"


# Enumeration name in raw.contract_enumerations -> its section of the contract (code -> description).
_DESCRIBED_ENUMERATIONS = {
    "asset_class": "asset_classes",
    "facility_item": "facility_items",
    "focus_charge_category": "focus_charge_categories",
    "focus_charge_class": "focus_charge_classes",
    "scheduler_record_type": "scheduler_record_types",
    "scheduler_event": "scheduler_events",
    "request_shape": "request_shapes",
}


@dataclass(frozen=True)
class Complement:
    """A total over parts (R20): where a part is blanked, its total must not give it back by subtraction."""

    parts_table: str
    parts_column: str
    total_table: str
    by: tuple[tuple[str, str], ...]  # (part column, total column) pairs that match a part to its total row
    people: str | None  # the total's column counting the people behind its parts; None: unknown
    columns: tuple[str, ...]  # the total's columns that add the parts up
    where: str | None = None  # which parts rows the columns add up (SQL on the parts row, aliased p); None: all


@dataclass(frozen=True)
class OverVersions:
    """Suppression across the versions of a history (R20): see small_groups.over_versions in the contract."""

    key: str
    version: str
    figure: str
    people: str
    columns: tuple[str, ...]
    changes: str | None
    latest_in: tuple[str, ...]


@dataclass(frozen=True)
class GlAccount:
    account: str
    name: str


@dataclass(frozen=True)
class GeneralLedger:
    """Where the journal posts (contract general_ledger): cost type -> expense and balancing account, and the cost
    centres of teams and batches with the fallback for cost no mapping names."""

    expense_accounts: dict[str, GlAccount]
    balancing_accounts: dict[str, GlAccount]
    team_cost_centres: dict[str, str]
    batch_cost_centres: dict[str, str]
    fallback_cost_centre: str


@dataclass(frozen=True)
class Contract:
    version: str
    document: dict[str, Any]

    @property
    def phases(self) -> list[str]:
        return list(self.document["phases"])

    @property
    def run_reasons(self) -> list[str]:
        return list(self.document["run_reasons"])

    @property
    def rerun_reasons(self) -> list[str]:
        return [k for k, v in self.document["run_reasons"].items() if v["rerun"]]

    @property
    def termination_reasons(self) -> dict[str, str]:
        """Termination reason -> category."""
        return {k: v["category"] for k, v in self.document["termination_reasons"].items()}

    @property
    def end_reasons(self) -> list[str]:
        return list(self.document["end_reasons"])

    @property
    def sacct_states(self) -> dict[str, str]:
        return dict(self.document["sacct_states"])

    @property
    def discard_reasons(self) -> list[str]:
        return list(self.document["discard_reasons"])

    @property
    def tiers(self) -> dict[str, Any]:
        return dict(self.document["utilization_tiers"])

    @property
    def utilization_tiers(self) -> dict[str, int | None]:
        """Tier -> precedence (a sample takes the lowest-precedence tier whose condition holds; None for a tier no
        sample takes, unobserved), in the contract's order."""
        tiers = {}
        for code, spec in self.document["utilization_tiers"].items():
            if isinstance(spec, dict):  # the scalars beside the tiers are the sampling parameters
                tiers[str(code)] = None if spec.get("precedence") is None else int(spec["precedence"])
        ranked = [p for p in tiers.values() if p is not None]
        if len(ranked) != len(set(ranked)):
            raise ValueError(f"contract {self.version}: two utilization tiers share a precedence")
        return tiers

    @property
    def fractional_gpus(self) -> tuple[int, str]:
        """(MIG compute slices of a GPU, the rule that splits a GPU several jobs share); docs/fractional_gpus.md."""
        spec = self.document.get("fractional_gpus") or {}
        slices, rule = spec.get("mig_total_slices", 7), spec.get("shared_gpu_rule", "equal")
        if not isinstance(slices, int) or isinstance(slices, bool) or slices < 1:
            raise ValueError(
                f"contract {self.version}: fractional_gpus.mig_total_slices {slices!r} is not a whole number"
            )
        if rule == "by_activity":
            raise ValueError(
                f"contract {self.version}: fractional_gpus.shared_gpu_rule by_activity needs per-process activity, "
                "which no telemetry input carries (DCGM samples are per GPU or MIG instance); use equal"
            )
        if rule != "equal":
            raise ValueError(f"contract {self.version}: fractional_gpus.shared_gpu_rule {rule!r} is not equal")
        return slices, rule

    @property
    def mig_total_slices_by_model(self) -> dict[str, int]:
        """GPU model (as Slurm's GRES type names it, lower case: a30) -> its MIG compute slices, where not 7."""
        spec = (self.document.get("fractional_gpus") or {}).get("mig_total_slices_by_model") or {}
        totals = {}
        for model, total in spec.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", str(model)):
                raise ValueError(
                    f"contract {self.version}: fractional_gpus.mig_total_slices_by_model names {model!r}, which is "
                    "not a GPU model as a GRES type names it, in lower case (a30)"
                )
            if not isinstance(total, int) or isinstance(total, bool) or total < 1:
                raise ValueError(
                    f"contract {self.version}: fractional_gpus.mig_total_slices_by_model {model} is {total!r}, not a "
                    "whole number of slices"
                )
            totals[str(model)] = total
        return totals

    @property
    def cloud_gpu_sku(self) -> tuple[str, int] | None:
        """(FOCUS SkuId of the owned fleet's GPU in the cloud, GPUs per ConsumedUnit), or None; docs/forecast.md."""
        spec = self.document.get("owned_vs_cloud")
        if not spec:
            return None
        sku, gpus = spec.get("cloud_gpu_sku"), spec.get("gpus_per_unit", 1)
        if not isinstance(sku, str) or not sku.strip():
            raise ValueError(f"contract {self.version}: owned_vs_cloud.cloud_gpu_sku should be a FOCUS SkuId")
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
            raise ValueError(
                f"contract {self.version}: owned_vs_cloud.gpus_per_unit {gpus!r} is not a whole number of GPUs"
            )
        return sku, gpus

    @property
    def cloud_clusters(self) -> tuple[str, ...]:
        """The clusters whose GPUs are rented (owned_vs_cloud.cloud_clusters): their jobs cost what the provider bills,
        never owned capacity; a job there with no bill yet is pending (docs/forecast.md)."""
        names = (self.document.get("owned_vs_cloud") or {}).get("cloud_clusters") or []
        if not isinstance(names, list) or any(not isinstance(n, str) or not n.strip() for n in names):
            raise ValueError(
                f"contract {self.version}: owned_vs_cloud.cloud_clusters should be a list of cluster names "
                "(the Cluster field of sacct, the cluster of a job event)"
            )
        return tuple(n.strip() for n in names)

    def slurm_shares_per_gpu(self, kind: str) -> int | None:
        """Slurm GPU shards (``kind`` shards) or CUDA MPS shares (mps) that make one GPU
        (fractional_gpus.slurm_<kind>_per_gpu, gres.conf's Count per GPU), or None when not stated."""
        key = f"slurm_{kind}_per_gpu"
        count = (self.document.get("fractional_gpus") or {}).get(key)
        if count is None:
            return None
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(
                f"contract {self.version}: fractional_gpus.{key} {count!r} is not a whole number (gres.conf's Count "
                "over the node's GPUs)"
            )
        return count

    @property
    def mig_total_slices_by_profile(self) -> dict[str, int]:
        """MIG profile -> the compute slices of the GPU model it exists on, where not mig_total_slices (A30: 4)."""
        spec = (self.document.get("fractional_gpus") or {}).get("mig_total_slices_by_profile") or {}
        totals = {}
        for profile, total in spec.items():
            match = re.fullmatch(MIG_PROFILE_PATTERN, str(profile))
            if not match:
                raise ValueError(
                    f"contract {self.version}: fractional_gpus.mig_total_slices_by_profile names {profile!r}, "
                    "which is not a MIG profile such as 2g.12gb"
                )
            if not isinstance(total, int) or isinstance(total, bool) or total < int(match.group("slices")):
                raise ValueError(
                    f"contract {self.version}: fractional_gpus.mig_total_slices_by_profile {profile} is {total!r}, "
                    f"not a whole number of slices of at least {match.group('slices')}"
                )
            totals[str(profile)] = total
        return totals

    def codes(self, enumeration: str) -> list[str]:
        """The codes of a top-level enumeration of the contract (a mapping code -> description)."""
        section = self.document.get(enumeration)
        if not isinstance(section, dict) or not section:
            raise ValueError(f"contract {self.version} defines no {enumeration}")
        return [str(code) for code in section]

    @property
    def asset_classes(self) -> list[str]:
        return self.codes("asset_classes")

    @property
    def facility_items(self) -> list[str]:
        return self.codes("facility_items")

    @property
    def focus_charge_categories(self) -> list[str]:
        return self.codes("focus_charge_categories")

    @property
    def focus_charge_classes(self) -> list[str]:
        return self.codes("focus_charge_classes")

    @property
    def scheduler_record_types(self) -> list[str]:
        return self.codes("scheduler_record_types")

    @property
    def scheduler_events(self) -> list[str]:
        return self.codes("scheduler_events")

    @property
    def request_shapes(self) -> list[str]:
        return self.codes("request_shapes")

    @property
    def storage_purposes(self) -> dict[str, int]:
        """Storage purpose -> default retention in days (empty for a version that defines none)."""
        return {k: int(v["default_retention_days"]) for k, v in (self.document.get("storage_purposes") or {}).items()}

    @property
    def storage_default_class(self) -> str | None:
        """The storage class an S3 Inventory configured without StorageClass is priced at (None: such files are
        rejected)."""
        value = self.document.get("storage_default_class")
        return None if value is None else str(value)

    @property
    def serving(self) -> dict[str, Any]:
        return dict(self.document["serving"])

    @property
    def labour_roles(self) -> list[str]:
        return list(self.document["labour_roles"])

    @property
    def labour_categories(self) -> list[str]:
        return list(self.document["labour_categories"])

    @property
    def labour_tasks(self) -> dict[str, tuple[str, str]]:
        """Harvest task name -> (role, category); a task naming an unknown role or category is a contract error."""
        tasks = {}
        for task, spec in self.document["labour_tasks"].items():
            role, category = spec["role"], spec["category"]
            if role not in self.labour_roles or category not in self.labour_categories:
                raise ValueError(f"contract {self.version}: labour task {task!r} names an unknown role or category")
            tasks[str(task)] = (role, category)
        return tasks

    @property
    def labour_assumed_rates(self) -> dict[str, dict[str, Decimal]]:
        """Role -> {low, typical, high} hourly rate, for entries without a Cost Rate; every role needs one."""
        rates = {}
        for role in self.labour_roles:
            spec = self.document["labour_assumed_rates"].get(role)
            if spec is None:
                raise ValueError(f"contract {self.version}: labour role {role!r} has no assumed rate")
            levels = {level: Decimal(str(spec[level])) for level in ("low", "typical", "high")}
            if any(rate != rate.quantize(Decimal("0.01")) for rate in levels.values()):
                raise ValueError(f"contract {self.version}: assumed rates of {role!r} are not whole cents")
            if not levels["low"] <= levels["typical"] <= levels["high"]:
                raise ValueError(f"contract {self.version}: assumed rates of {role!r} are not low <= typical <= high")
            rates[role] = levels
        return rates

    @property
    def max_gpu_power_watts(self) -> Decimal:
        """The most one GPU (board) can draw, in watts (energy.max_gpu_power_watts): a device sample's power draw
        above it, or its energy counter rising faster, is no GPU's (docs/energy.md)."""
        value = (self.document.get("energy") or {}).get("max_gpu_power_watts")
        watts = DEFAULT_MAX_GPU_POWER_WATTS if value is None else Decimal(str(value))
        if not watts.is_finite() or watts <= 0:
            raise ValueError(f"contract {self.version}: energy.max_gpu_power_watts {value!r} is not a positive number")
        return watts

    @property
    def reporting_currency(self) -> str:
        return str(self.document["reporting_currency"])

    @property
    def focus_negative_amounts(self) -> dict[str, Any]:
        """Which FOCUS lines may carry a negative amount (FOCUS's own credit, adjustment and correction by default),
        and which may carry no positive one unless they are a correction (a credit, by default)."""
        rule = self.document.get("focus_negative_amounts") or {}
        return {
            "charge_categories": list(rule.get("charge_categories", ["Credit", "Adjustment"])),
            "charge_classes": list(rule.get("charge_classes", ["Correction"])),
            "negative_consumed_quantity": bool(rule.get("negative_consumed_quantity", False)),
            "never_positive_categories": list(rule.get("never_positive_categories", ["Credit"])),
        }

    def _operations(self, part: str) -> dict[str, Any]:
        section = (self.document.get("operations") or {}).get(part)
        if not section or "default" not in section:
            raise ValueError(f"contract {self.version}: operations.{part} needs a default")
        return section

    def owners(self, name: str, kind: str = "sources") -> list[str]:
        """The Dagster owners of an ingest asset (``kind="sources"``, by source) or a dbt model (``"layers"``, by
        its schema), from ``operations.owners``; the default for a name the contract does not list."""
        owners = self._operations("owners")
        return [str(owner) for owner in ((owners.get(kind) or {}).get(name) or owners["default"])]

    def delivery_alternatives(self, source: str) -> tuple[str, ...]:
        """The other sources whose delivery stands in for ``source``'s (``operations.freshness.alternatives``)."""
        groups = self._operations("freshness").get("alternatives") or []
        for group in groups:
            if not isinstance(group, list) or not all(isinstance(name, str) for name in group):
                raise ValueError(f"contract {self.version}: operations.freshness.alternatives: {group!r} is not a list")
        return tuple(name for group in groups if source in group for name in group if name != source)

    def delivery_expected(self, source: str) -> bool:
        """False when ``operations.freshness.sources.<source>.expected`` says the organisation has no such feed."""
        spec = (self._operations("freshness").get("sources") or {}).get(source) or {}
        expected = spec.get("expected", True)
        if not isinstance(expected, bool):
            raise ValueError(
                f"contract {self.version}: operations.freshness of {source}: expected {expected!r} is not true or false"
            )
        return expected

    def delivery_due(self, source: str) -> DeliveryDue | None:
        """When ``source``'s delivery is due (``operations.freshness.sources.<source>.due``, ``contract.due``), or
        None: then its newest delivery may be ``max_age_hours`` old."""
        spec = (self._operations("freshness").get("sources") or {}).get(source) or {}
        if "due" not in spec:
            return None
        where = f"contract {self.version}: operations.freshness of {source}"
        if "max_age_hours" in spec:
            raise ValueError(f"{where}: give max_age_hours or due, not both")
        return parse_due(spec["due"], where)

    def max_age_hours(self, source: str) -> float:
        """How old a source's newest delivery may be before its freshness check warns (``operations.freshness``)."""
        freshness = self._operations("freshness")
        spec = (freshness.get("sources") or {}).get(source) or {}
        hours = (spec if "max_age_hours" in spec else freshness["default"])["max_age_hours"]
        if not isinstance(hours, int | float) or isinstance(hours, bool) or hours <= 0:
            raise ValueError(f"contract {self.version}: operations.freshness of {source}: {hours!r} is not > 0 hours")
        return float(hours)

    @property
    def first_month(self) -> date:
        """The first month the warehouse holds costs for (``operations.first_month``, YYYY-MM), as its first day."""
        text = str((self.document.get("operations") or {}).get("first_month") or "")
        match = re.fullmatch(r"(\d{4})-(\d{2})", text)
        if not match or not 1 <= int(match.group(2)) <= 12:
            raise ValueError(f"contract {self.version}: operations.first_month {text!r} is not a month (YYYY-MM)")
        return date(int(match.group(1)), int(match.group(2)), 1)

    @property
    def general_ledger(self) -> GeneralLedger | None:
        """The journal's accounts and cost centres (None for a version without a general_ledger section); raises
        ``ValueError`` for a mapping the journal could not balance or reconcile."""
        section = self.document.get("general_ledger")
        if not section:
            return None

        def accounts(key: str) -> dict[str, GlAccount]:
            return {str(k): GlAccount(str(v["account"]), str(v["name"])) for k, v in (section.get(key) or {}).items()}

        expense, balancing = accounts("expense_accounts"), accounts("balancing_accounts")
        problem = None
        if not expense or set(expense) != set(balancing):
            problem = "expense_accounts and balancing_accounts must name the same cost types"
        elif len({a.account for a in expense.values()}) != len(expense):
            problem = "two cost types share an expense account"
        elif {a.account for a in expense.values()} & {a.account for a in balancing.values()}:
            problem = "an account is both an expense and a balancing account"
        elif any(
            a.name != b.name
            for a in [*expense.values(), *balancing.values()]
            for b in [*expense.values(), *balancing.values()]
            if a.account == b.account
        ):
            problem = "one account is given two names"
        centres = section.get("cost_centres") or {}
        fallback = centres.get("fallback")
        if problem is None and not fallback:
            problem = "cost_centres needs a fallback cost centre"
        if problem:
            raise ValueError(f"contract {self.version}: general_ledger: {problem}")
        return GeneralLedger(
            expense_accounts=expense,
            balancing_accounts=balancing,
            team_cost_centres={str(k): str(v) for k, v in (centres.get("teams") or {}).items()},
            batch_cost_centres={str(k): str(v) for k, v in (centres.get("batches") or {}).items()},
            fallback_cost_centre=str(fallback),
        )

    @property
    def service_stages(self) -> list[str]:
        return list(self.document["service_stages"])

    @property
    def confidential_columns(self) -> dict[tuple[str, str], str]:
        """(marts table, column) -> why it is for finance only (R20); an empty dict when the version lists none."""
        columns = {}
        for entry, reason in (self.document.get("confidential") or {}).items():
            table, dot, column = str(entry).partition(".")
            if not (dot and table and column) or "." in column:
                raise ValueError(f"contract {self.version}: confidential entry {entry!r} is not <table>.<column>")
            columns[(table.lower(), column.lower())] = str(reason)
        return columns

    @property
    def small_groups(self) -> tuple[int, dict[str, tuple[str, tuple[str, ...]]]]:
        """(min_people, marts table -> (SQL condition, columns published as null in the engineering file))."""
        section = self.document.get("small_groups") or {}
        min_people = int(section.get("min_people", 3))
        tables = {}
        for table, rule in (section.get("suppress") or {}).items():
            condition = str(rule["when"]).format(min_people=min_people)
            tables[str(table).lower()] = (condition, tuple(str(c).lower() for c in rule["columns"]))
        return min_people, tables

    @property
    def confidential_sources(self) -> tuple[str, ...]:
        """Sources whose landing files hold confidential values: their file hashes are for finance only (R20)."""
        return tuple(str(source) for source in self.document.get("confidential_sources") or ())

    @property
    def complements(self) -> tuple[Complement, ...]:
        """Totals over parts that engineering could subtract a blanked part from (secondary suppression, R20)."""
        section = self.document.get("small_groups") or {}
        complements = []
        for rule in section.get("complements") or ():
            table, dot, column = str(rule["parts"]).partition(".")
            if not (dot and table and column):
                raise ValueError(f"contract {self.version}: complement parts {rule['parts']!r} is not <table>.<column>")
            complements.append(
                Complement(
                    parts_table=table.lower(),
                    parts_column=column.lower(),
                    total_table=str(rule["total"]).lower(),
                    by=tuple((str(p).lower(), str(t).lower()) for p, t in rule["by"].items()),
                    people=str(rule["people"]).lower() if rule.get("people") else None,
                    columns=tuple(str(c).lower() for c in rule["columns"]),
                    where=str(rule["where"]) if rule.get("where") else None,
                )
            )
        return tuple(complements)

    @property
    def over_versions(self) -> dict[str, OverVersions]:
        """History table -> how its figures are suppressed across versions (R20)."""
        section = self.document.get("small_groups") or {}
        return {
            str(table).lower(): OverVersions(
                key=str(rule["key"]).lower(),
                version=str(rule["version"]).lower(),
                figure=str(rule["figure"]).lower(),
                people=str(rule["people"]).lower(),
                columns=tuple(str(c).lower() for c in rule["columns"]),
                changes=str(rule["changes"]).lower() if rule.get("changes") else None,
                latest_in=tuple(str(t).lower() for t in rule.get("latest_in") or ()),
            )
            for table, rule in (section.get("over_versions") or {}).items()
        }

    def enumeration_rows(self) -> list[dict[str, Any]]:
        """Every enumeration as rows.

        Columns: contract_version, enumeration, code, category, is_rerun (run reasons),
        is_same_cause (termination categories whose repeats are flagged), lower_bound and upper_bound
        (bucket edges; for storage_purpose, upper_bound is the default retention in days; for utilization_tier,
        lower_bound is the precedence), description.
        """
        doc = self.document
        rows: list[dict[str, Any]] = []

        def add(
            enumeration: str,
            code: str,
            category: str | None = None,
            is_rerun: bool | None = None,
            is_same_cause: bool | None = None,
            description: str | None = None,
            lower_bound: float | None = None,
            upper_bound: float | None = None,
        ) -> None:
            rows.append(
                {
                    "contract_version": self.version,
                    "enumeration": enumeration,
                    "code": code,
                    "category": category,
                    "is_rerun": is_rerun,
                    "is_same_cause": is_same_cause,
                    "lower_bound": lower_bound,
                    "upper_bound": upper_bound,
                    "description": description,
                }
            )

        for code, text in doc["phases"].items():
            add("phase", code, description=text)
        for code, spec in doc["run_reasons"].items():
            add("run_reason", code, is_rerun=spec["rerun"], description=spec["description"])
        for code, text in doc["termination_categories"].items():
            add(
                "termination_category", code, is_same_cause=code in doc["repeated_failure_categories"], description=text
            )
        for code, spec in doc["termination_reasons"].items():
            add("termination_reason", code, category=spec["category"])
        for code in doc["end_reasons"]:
            add("end_reason", code, category=doc["termination_reasons"][code]["category"])
        for state, reason in doc["sacct_states"].items():
            add("sacct_state", state, category=reason)
        for code, text in doc["discard_reasons"].items():
            add("discard_reason", code, description=text)
        for code, spec in (doc.get("storage_purposes") or {}).items():
            add("storage_purpose", code, upper_bound=spec["default_retention_days"], description=spec["description"])
        # Tiers: lower_bound is the precedence (null for unobserved, which no sample takes).
        for code, precedence in self.utilization_tiers.items():
            add(
                "utilization_tier",
                code,
                lower_bound=precedence,
                description=doc["utilization_tiers"][code]["description"],
            )
        for enumeration, section in _DESCRIBED_ENUMERATIONS.items():
            for code in self.codes(section):
                add(enumeration, code, description=doc[section][code])
        add("gpu_share_rule", self.fractional_gpus[1], description="Jobs on one GPU at one instant share it equally.")
        cloud = self.cloud_gpu_sku
        if cloud is not None:
            add("cloud_gpu_sku", cloud[0], lower_bound=cloud[1], description="The owned fleet's GPU as a cloud SKU.")
        for name in self.cloud_clusters:
            add("cloud_cluster", name, description="A cluster of rented GPUs: its jobs are billed, not owned capacity.")
        for code, text in doc["evidence_levels"].items():
            add("evidence_level", code, description=text)
        for code, text in doc["misread_fields"].items():
            add("misread_field", code, description=text)
        for code, spec in doc["quantities"].items():
            add("quantity", code, category=spec["source"], description=spec["definition"])
        serving = doc["serving"]
        for code, text in serving["request_statuses"].items():
            category = "completed" if code in serving["completed_statuses"] else "not_completed"
            add("request_status", code, category=category, description=text)
        for enumeration in ("input_bucket", "output_bucket", "latency_tier"):
            for bucket in serving[f"{enumeration}s"]:
                add(enumeration, bucket["code"], lower_bound=bucket["lower"], upper_bound=bucket.get("upper"))
        for code, text in serving["monthly_cost_items"].items():
            add("serving_cost_item", code, description=text)
        for code in serving["allocation_keys"]:
            add("allocation_key", code, category="default" if code == serving["allocation_key"] else None)
        for review_class, spec in doc["plan_review"]["classes"].items():
            add("review_class", review_class, description=spec["description"])
            for key, enumeration in (
                ("termination_categories", "review_termination_category"),
                ("run_reasons", "review_run_reason"),
                ("phases", "review_phase"),
                ("labour_categories", "review_labour_category"),
            ):
                for code in spec.get(key, []):
                    add(enumeration, code, category=review_class)

        for code, text in doc["labour_roles"].items():
            add("labour_role", code, description=text)
        for code, text in doc["labour_categories"].items():
            add("labour_category", code, description=text)
        # A task maps to two codes: one row per mapping, the task name as code and the role or category as category.
        for task, (role, category) in self.labour_tasks.items():
            add("labour_task_role", task, category=role)
            add("labour_task_category", task, category=category)
        for code, text in doc["service_stages"].items():
            add("service_stage", code, description=text)
        # The journal's mapping (general_ledger): the cost type, team or batch as code, the account or cost centre
        # as category; the fallback cost centre is one row with code 'fallback'.
        ledger = self.general_ledger
        if ledger is not None:
            for cost_type, account in ledger.expense_accounts.items():
                add("gl_expense_account", cost_type, category=account.account, description=account.name)
            for cost_type, account in ledger.balancing_accounts.items():
                add("gl_balancing_account", cost_type, category=account.account, description=account.name)
            for team, centre in ledger.team_cost_centres.items():
                add("gl_team_cost_centre", team, category=centre)
            for batch, centre in ledger.batch_cost_centres.items():
                add("gl_batch_cost_centre", batch, category=centre)
            add("gl_fallback_cost_centre", "fallback", category=ledger.fallback_cost_centre)
        return rows

    def parameter_rows(self) -> list[dict[str, Any]]:
        """Numeric parameters (the utilization-tier rule, serving weights, labour assumed rates, the pending range,
        the first month) as rows (contract_version, name, value)."""
        t = self.document["utilization_tiers"]
        values = {
            "sample_interval_seconds": t["sample_interval_seconds"],
            "max_gap_factor": t["max_gap_factor"],
            "comm_wait_min_nvlink_bytes_per_second": t["comm_wait"]["min_nvlink_bytes_per_second"],
            "comm_wait_max_tensor_active": t["comm_wait"]["max_tensor_active"],
            "effective_min_gr_engine_active": t["effective_compute"]["min_gr_engine_active"],
            "serving_input_token_weight": self.document["serving"]["input_token_weight"],
            "serving_output_token_weight": self.document["serving"]["output_token_weight"],
            "serving_allocation_by_tokens": self.document["serving"]["allocation_key"] == "token_weighted_gpu_time",
            "stop_signal_rounds": self.document["plan_review"]["stop_signal_rounds"],
            "mig_total_slices": self.fractional_gpus[0],
        }
        for kind in ("shards", "mps"):
            if self.slurm_shares_per_gpu(kind) is not None:
                values[f"slurm_{kind}_per_gpu"] = self.slurm_shares_per_gpu(kind)
        # A GPU model's slices (named in a Slurm GRES type), as mig_total_slices_model.<model>.
        for model, total in self.mig_total_slices_by_model.items():
            values[f"mig_total_slices_model.{model}"] = total
        # A profile's GPU model's slices where it is not mig_total_slices, as mig_total_slices.<profile>.
        for profile, total in self.mig_total_slices_by_profile.items():
            values[f"mig_total_slices.{profile}"] = total
        values["pending_range_pct"] = self.document["pending_range_pct"]
        # Cost-to-complete method parameters (R21) as forecast_<name>.
        for name, value in self.document["plan_review"].get("forecast", {}).items():
            values[f"forecast_{name}"] = value
        # Energy (docs/energy.md): the facility's PUE, and per month the grid's carbon intensity
        # (grid_intensity_g_co2e_per_kwh.<YYYY-MM>) and the electricity price per facility kWh
        # (energy_price_per_kwh.<YYYY-MM>).
        energy = self.document.get("energy") or {}
        if "pue" in energy:
            values["energy_pue"] = energy["pue"]
        values["energy_max_gpu_power_watts"] = self.max_gpu_power_watts
        for key, prefix in (
            ("grid_intensity_g_co2e_per_kwh", "grid_intensity_g_co2e_per_kwh"),
            ("price_per_kwh", "energy_price_per_kwh"),
        ):
            for month, value in (energy.get(key) or {}).items():
                if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", str(month)):
                    raise ValueError(f"contract {self.version}: energy.{key} month {month!r} is not YYYY-MM")
                values[f"{prefix}.{month}"] = value
        # Assumed labour rates as labour_assumed_rate.<role>.<low|typical|high>; whole cents, so the double the
        # table holds casts back to the exact DECIMAL(18,2) rate.
        for role, levels in self.labour_assumed_rates.items():
            for level, rate in levels.items():
                values[f"labour_assumed_rate.{role}.{level}"] = rate
        # The first month the warehouse holds costs for, as first_month.<YYYY-MM> (value 1): owned capacity's
        # depreciation is reconciled from it on (int_gpu_hour_prices_derived), not from the purchase.
        values[f"first_month.{self.first_month:%Y-%m}"] = 1
        return [{"contract_version": self.version, "name": k, "value": float(v)} for k, v in values.items()]


_extra_directories: list[Path] = []


def add_contract_directory(path: str | Path) -> None:
    """Also look for definitions_<version>.yaml in ``path`` (a deployment's own contract folder, or a test's)."""
    _extra_directories.append(Path(path))
    load_contract.cache_clear()


def remove_contract_directory(path: str | Path) -> None:
    _extra_directories.remove(Path(path))
    load_contract.cache_clear()


def _contract_files() -> dict[str, Traversable]:
    """Contract version -> its file; the package's own files first, then added directories."""
    files: dict[str, Traversable] = {}
    for folder in [resources.files(__package__), *_extra_directories]:
        for entry in folder.iterdir():
            match = _FILE_PATTERN.match(entry.name)
            if match and match.group(1) not in files:
                files[match.group(1)] = entry
    return files


def contract_files_sha256() -> str:
    """One sha256 over every contract version's file (name and bytes), the package's and added directories'."""
    digest = hashlib.sha256()
    for version, entry in sorted(_contract_files().items()):
        digest.update(version.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


def available_versions() -> list[str]:
    """Contract versions available, oldest first."""
    return sorted(_contract_files(), key=lambda v: int(v[1:]))


@cache
def load_contract(version: str | None = None) -> Contract:
    """Load one contract version; the newest when ``version`` is None."""
    files = _contract_files()
    version = version or available_versions()[-1]
    if version not in files:
        raise ValueError(f"unknown contract version {version!r}; available: {available_versions()}")
    document = yaml.safe_load(files[version].read_text(encoding="utf-8"))
    if document.get("version") != version:
        raise ValueError(f"definitions_{version}.yaml declares version {document.get('version')!r}")
    return Contract(version=version, document=document)
