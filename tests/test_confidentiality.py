"""Confidentiality against a determined reader (R20): the engineering file is attacked as a reader would attack it
(recompute a hash over guessed values, difference two nights or two history versions, subtract parts from a
total, compare a blanked figure with a published one) and no attack recovers a planted rate, while the finance
file still holds it.

One night is the demo (night 1). Night 2 delivers a late timesheet in two variants that differ only in two
people's rates: Gus Novak, a fifth person on B-7 (4 -> 5 people: the change is one person's), and Hana Sato on
B-10, the one person there whose own rate is known: two more book hours to B-10 without a rate (at the contract's
assumed rate, which a reader can apply to their published hours), so B-10 has three people and one measured.
Hana's hours are four entries with her name written four ways (HANA_SPELLINGS): they are one person, not four
measured people that would let B-10's labour, and her rate with it, through (docs/confidentiality.md, who is one
person). The engineering files of the two variants must be identical."""

from __future__ import annotations

import hashlib
import shutil
from decimal import Decimal
from itertools import combinations
from pathlib import Path

import duckdb
import jinja2
import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.fingerprint import table_fingerprints
from cost_pipeline.publish import ENGINEERING, FINANCE, published_path
from tests.helpers import nightly_assets_downstream_of
from tests.test_publish import all_text

# Its module-scoped nights run once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("confidentiality")

LATE_FILE = Path("timesheets") / "harvest_time_report_2026-11-late.csv"
GUS_HOURS, HANA_HOURS = Decimal("5"), Decimal("2")
# Hana Mei Satō as four Harvest exports may write her (First Name, Last Name), each booking a quarter of her hours:
# as written; lower case with a no-break space, a trailing space and ō decomposed (o + U+0304); full-width letters
# with a full-width and a double space and a zero-width space inside; an em space and upper case.
HANA_SPELLINGS = (
    ("Hana Mei", "Sat\u014d"),
    ("hana\u00a0mei ", "Sato\u0304"),
    ("\uff28\uff41\uff4e\uff41\u3000 \uff2d\uff45\uff49", "Sa\u200bt\u014d"),
    ("Hana\u2003Mei", "SAT\u014c"),
)
# Variant a and b: (Gus's rate on B-7, Hana's rate on B-10). Hana's rate a keeps B-10 inside its budget boundary
# (108.00 + 0.20 + 1.50 assumed against 100.00 ± 10 %), rate b takes it over: a comparison over her blanked cost
# would tell them.
RATES = {"a": (Decimal("211.13"), Decimal("0.10")), "b": (Decimal("157.91"), Decimal("98.76"))}
# The snapshot's content hash, as a reader of dbt_project/macros/insert_only_snapshot.sql would recompute it, over
# the columns snp_batch_costs hashes: its traced versions and the figure lists of dbt_project/macros/
# batch_cost_figures.sql (read from the macros, so a figure added there is hashed here too).
TRACED = ["contract_version", "config_version", "data_version"]
FIGURE_MACROS = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "batch_cost_figures.sql"


def snapshot_figures(macro: str) -> list[str] | dict[str, str]:
    """What a macro of batch_cost_figures.sql returns (dbt's ``return``), rendered with plain Jinja."""
    returned = []
    template = jinja2.Environment().from_string(FIGURE_MACROS.read_text(encoding="utf-8"))
    getattr(template.make_module({"return": lambda value: returned.append(value) or ""}), macro)()
    (value,) = returned
    return value


FIGURES = snapshot_figures("batch_cost_figures") + snapshot_figures("batch_full_cost_figures")
# Figures appended after versions were written: hashed only when they differ from their value in those versions.
APPENDED = snapshot_figures("batch_appended_cost_figures")
# Figures once whole seconds (snp_batch_costs' whole): a whole value is hashed as the whole number's text.
WHOLE = ["step_seconds_max"]


def late_timesheet(variant: str) -> str:
    gus, hana = RATES[variant]
    return (
        "Date,Project Code,Task,Hours,First Name,Last Name,Roles,Cost Rate\n"
        f"2026-11-10,B-7,Training runs,{GUS_HOURS},Gus,Novak,ML Engineer,{gus}\n"
        + "".join(
            f"2026-11-10,B-10,Business evaluation,{HANA_HOURS / len(HANA_SPELLINGS)},{first},{last},Product,{hana}\n"
            for first, last in HANA_SPELLINGS
        )
        + "2026-11-10,B-10,Coordination,0.01,Ivo,Petrov,Product,\n"
        "2026-11-10,B-10,Coordination,0.01,Jun,Park,Product,\n"
    )


# The timesheets' raw asset: night 2 changes only its files.
TIMESHEETS = (("raw", "timesheets"),)


@pytest.fixture(scope="module")
def nights(demo_run, tmp_path_factory) -> dict[str, Path]:
    """Warehouse per night: "1" is the demo; "a" and "b" the demo's next night with the late timesheet, of the
    timesheets' raw asset and every asset of the nightly job downstream of it (the labour and cost models, the
    history snapshots, their dbt tests, publishing): the rest reads nothing the late file touches and stays as the
    demo's night built it."""
    assert demo_run.succeeded
    found = {"1": demo_run.warehouse}
    keys = nightly_assets_downstream_of(
        TIMESHEETS, covering=("marts/fct_batch_costs", "history/snp_batch_costs", "published/marts")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        for variant in RATES:
            root = tmp_path_factory.mktemp(f"night-{variant}")
            landing = root / "landing"
            shutil.copytree(demo_run.landing, landing)
            (landing / LATE_FILE).write_text(late_timesheet(variant), encoding="utf-8")
            warehouse = root / "warehouse.duckdb"
            shutil.copyfile(demo_run.warehouse, warehouse)
            patch.setenv("COST_LANDING_DIR", str(landing))
            patch.setenv("COST_WAREHOUSE", str(warehouse))
            assert run_pipeline(landing, warehouse, asset_keys=list(keys.values()))
            found[variant] = warehouse
    return found


def rows(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def file_of(warehouse: Path, audience: str) -> Path:
    return published_path(warehouse, audience)


def test_the_finance_file_holds_the_planted_rates(nights):
    gus, hana = RATES["a"]
    finance = file_of(nights["a"], FINANCE)
    history = dict(
        rows(finance, "select snapshot_version, labour_cost from marts.fct_batch_cost_history where batch_id = 'B-7'")
    )
    assert history[2] - history[1] == GUS_HOURS * gus
    assert rows(
        finance,
        "select labour_cost - ?, labour_people, labour_measured_people from marts.fct_batch_costs"
        " where batch_id = 'B-10'",
        [assumed_labour(finance, "B-10")],
    ) == [(HANA_HOURS * hana, 3, 1)]


def assumed_labour(finance: Path, batch_id: str) -> Decimal:
    """The batch's labour at the contract's assumed rates: what a reader computes from the published hours."""
    ((assumed,),) = rows(
        finance,
        "select sum(amount) from marts.fct_cost_lines where batch_id = ? and cost_type = 'labour'"
        " and evidence_level = 'assumed'",
        [batch_id],
    )
    return assumed


def content_hash_sql(labour: str) -> str:
    """The snapshot hash of a history row with labour_cost (and the totals that add it) replaced by a guess."""
    parts = []
    for column in TRACED + FIGURES:
        value = f"cast({column} as varchar)"
        if column == "labour_cost":
            value = f"cast({labour} as varchar)"
        elif column.startswith("total_cost"):
            value = f"cast(({column} - labour_cost + {labour}) as varchar)"
        elif column in WHOLE:
            whole = f"cast(cast({column} as bigint) as varchar)"
            value = f"case when {column} = floor({column}) then {whole} else {value} end"
        parts.append(f"coalesce({value}, '-') || '|'")
    for column, unchanged in APPENDED.items():
        parts.append(
            f"case when {column} = {unchanged} then '' else coalesce(cast({column} as varchar), '-') || '|' end"
        )
    return f"md5({' || '.join(parts)})"


def hash_guesses(finance: Path, batch_id: str, version: int, candidates: list[Decimal]) -> dict[Decimal, str]:
    """What a reader who knew every other figure would compute for each guessed labour cost."""
    return {
        guess: rows(
            finance,
            f"select {content_hash_sql(f'cast({guess} as decimal(18, 2))')} from marts.fct_batch_cost_history "
            "where batch_id = ? and snapshot_version = ?",
            [batch_id, version],
        )[0][0]
        for guess in candidates
    }


def test_the_reconstructed_hash_is_every_stored_one(nights):
    """The attack below rests on recomputing the snapshot hash: over every version of every batch in the finance
    file (the unattributed bucket with the demo's running job 3002 among them: running_jobs 1), the reconstruction
    with the version's own labour cost gives its content_hash. A figure the snapshot hashed but the reconstruction
    left out would fail here, as would a column of the history that no figure list names."""
    finance = file_of(nights["a"], FINANCE)
    stored = rows(
        finance,
        f"select batch_id, snapshot_version, content_hash, {content_hash_sql('labour_cost')} "
        "from marts.fct_batch_cost_history order by 1, 2",
    )
    assert [(batch, version) for batch, version, hashed, rebuilt in stored if hashed != rebuilt] == []
    assert rows(finance, "select count(*) from marts.fct_batch_cost_history where running_jobs > 0")[0][0] > 0
    columns = [
        name
        for (name,) in rows(
            finance,
            "select column_name from information_schema.columns where table_schema = 'marts' "
            "and table_name = 'fct_batch_cost_history' order by ordinal_position",
        )
    ]
    kept = {"batch_id", "snapshot_version", "is_latest", *TRACED, "inputs_hash", "content_hash", "changed_columns"}
    assert set(columns) - kept - {"currency", "as_of"} == {*FIGURES, *APPENDED}


@pytest.mark.parametrize(("batch_id", "hours"), [("B-10", HANA_HOURS), ("B-7", GUS_HOURS)])
def test_a_hash_recomputed_over_guessed_rates_matches_nothing_in_the_engineering_file(nights, batch_id, hours):
    """Version 2 of B-10 (one person) and of B-7 (one person more than version 1): a reader who knew every other
    figure hashes the labour cost of each guessed rate, the planted one among them."""
    finance, engineering = file_of(nights["a"], FINANCE), file_of(nights["a"], ENGINEERING)
    ((labour, stored),) = rows(
        finance,
        "select labour_cost, content_hash from marts.fct_batch_cost_history "
        "where batch_id = ? and snapshot_version = 2",
        [batch_id],
    )
    guesses = hash_guesses(
        finance, batch_id, 2, [labour + hours * step for step in (Decimal("-0.01"), 0, Decimal("0.01"))]
    )
    assert guesses[labour] == stored  # the attack works on the finance file ...
    text = all_text(engineering)
    assert [guess for guess, digest in guesses.items() if digest in text] == []  # ... and finds nothing here


def test_a_file_hash_recomputed_over_guessed_rates_matches_nothing_in_the_engineering_file(nights):
    """The timesheet's sha256 is a hash over the rates in it: engineering's inputs ledger does not have it."""
    guesses = {variant: hashlib.sha256(late_timesheet(variant).encode()).hexdigest() for variant in RATES}
    finance_text = all_text(file_of(nights["a"], FINANCE))
    assert guesses["a"] in finance_text
    assert [v for v, digest in guesses.items() if digest in all_text(file_of(nights["a"], ENGINEERING))] == []


def labour_figures(path: Path, batch_id: str) -> list[Decimal]:
    """Every published figure of the batch that moves with its labour cost, in one file."""
    found = []
    for sql in (
        "select labour_cost, total_cost, total_cost_low, total_cost_high from marts.fct_batch_cost_history "
        "where batch_id = ?",
        "select labour_cost, total_cost, total_cost_low, total_cost_high, measured_cost, assumed_cost "
        "from marts.fct_batch_costs where batch_id = ?",
        "select actual_cost, variance, planned_work_cost, avoidable_rework_cost from marts.fct_batch_budget "
        "where batch_id = ?",
    ):
        found.extend(v for row in rows(path, sql, [batch_id]) for v in row if v is not None)
    return found


@pytest.mark.parametrize("audience", [FINANCE, ENGINEERING])
def test_differencing_two_nights_or_two_versions_does_not_give_a_persons_cost(nights, audience):
    """Night 1 and night 2 side by side, and history version 1 against 2: any two published B-7 figures differ by
    Gus's cost (5 h x his rate) only in the finance file."""
    gus_cost = GUS_HOURS * RATES["a"][0]
    figures = labour_figures(file_of(nights["1"], audience), "B-7") + labour_figures(
        file_of(nights["a"], audience), "B-7"
    )
    recovered = {abs(x - y) for x, y in combinations(figures, 2)} & {gus_cost}
    assert recovered == ({gus_cost} if audience == FINANCE else set())


@pytest.mark.parametrize("audience", [FINANCE, ENGINEERING])
def test_subtracting_the_parts_from_a_total_does_not_give_a_blanked_cost(nights, audience):
    """A model's task cost minus its requests' costs is its hand-offs' people cost; a batch's total minus its
    compute, storage and services is its labour, and less the labour at the assumed rate (the published hours at the
    contract's rate) B-10's one measured person's, beside two assumed ones."""
    path = file_of(nights["a"], audience)
    hand_offs = rows(
        path,
        "select e.task_cost - sum(c.request_cost) from marts.fct_model_task_economics as e "
        "join marts.fct_task_costs as c on c.routed_model = e.model group by e.model, e.task_cost "
        "having e.task_cost - sum(c.request_cost) <> 0",
    )
    hana = HANA_HOURS * RATES["a"][1]
    assumed = assumed_labour(file_of(nights["a"], FINANCE), "B-10")
    batch = rows(
        path,
        "select total_cost - compute_cost - storage_cost - services_cost - ? from marts.fct_batch_costs "
        "where batch_id = 'B-10'",
        [assumed],
    )
    phases = rows(
        path,
        "select b.actual_cost - sum(case when l.cost_type <> 'labour' then l.amount else 0 end) - ? "
        "from marts.fct_batch_budget as b join marts.fct_cost_lines as l on l.batch_id = b.batch_id "
        "where b.batch_id = 'B-10' group by b.actual_cost",
        [assumed],
    )
    people_costs = {v for (v,) in hand_offs if v is not None}
    if audience == FINANCE:
        (human,) = rows(path, "select sum(human_cost) from marts.fct_task_costs")[0]
        assert people_costs == {human} and batch == [(hana,)] and phases == [(hana,)]
    else:
        assert people_costs == set() and batch == [(None,)] and phases == [(None,)]


CLASSES = ("exploration", "unforeseeable_failure", "avoidable_rework", "planned_work")


@pytest.mark.parametrize("audience", [FINANCE, ENGINEERING])
def test_a_review_class_s_cost_does_not_give_a_small_group_s_labour(nights, audience):
    """A batch's people may be three or more while one review class's are fewer. B-8's avoidable rework holds one
    person's labour (2 h, 180.00) beside its compute lines: the class's cost less those lines is that person's cost.
    B-7's holds two people's (740.06): its actual cost less its other classes gives the class back. (The demo's
    night: on night 2 a late timesheet of one person blanks B-7's labour figures whole.)"""
    path = file_of(nights["1"], audience)
    less_lines = rows(
        path,
        "select b.avoidable_rework_cost - sum(case when l.cost_type <> 'labour' then l.amount else 0 end)"
        " from marts.fct_batch_budget as b join marts.fct_cost_lines as l on l.batch_id = b.batch_id"
        " and l.review_class = 'avoidable_rework' where b.batch_id = 'B-8' group by b.avoidable_rework_cost",
    )
    less_others = rows(
        path,
        "select actual_cost - exploration_cost - unforeseeable_failure_cost - planned_work_cost"
        " from marts.fct_batch_budget where batch_id = 'B-7'",
    )
    people = "select labour_people, actual_cost from marts.fct_batch_budget where batch_id in ('B-7', 'B-8')"
    assert all(n >= 3 and cost is not None for n, cost in rows(path, people)), "the batches' totals are published"
    if audience == FINANCE:
        assert less_lines == [(Decimal("180.00"),)] and less_others == [(Decimal("740.06"),)]
    else:
        assert less_lines == [(None,)] and less_others == [(None,)]
        # Whatever class is blanked, every class of that batch is.
        for batch, *costs in rows(
            path, f"select batch_id, {', '.join(f'{c}_cost' for c in CLASSES)} from marts.fct_batch_budget"
        ):
            assert all(c is None for c in costs) or all(c is not None for c in costs), batch


def test_a_comparison_over_a_blanked_cost_does_not_tell_two_rates_apart(nights):
    """B-10's budget check (over_boundary) compares its actual cost, Hana's cost included, with its budget."""
    sql = "select over_boundary from marts.fct_batch_budget where batch_id = 'B-10'"
    assert rows(file_of(nights["a"], FINANCE), sql) != rows(file_of(nights["b"], FINANCE), sql)
    assert rows(file_of(nights["a"], ENGINEERING), sql) == rows(file_of(nights["b"], ENGINEERING), sql) == [(None,)]


def test_the_engineering_file_is_the_same_whichever_rates_were_planted(nights):
    """Every table of the engineering file is the same for either pair of rates: no hash,
    total, difference or ordering in it depends on them. The finance files differ."""
    fingerprints = {
        variant: {
            audience: {s: table_fingerprints(file_of(nights[variant], audience), s) for s in ("marts", "main")}
            for audience in (FINANCE, ENGINEERING)
        }
        for variant in RATES
    }
    for variant in RATES:  # main.published holds as_of and the rules' digest: not a figure
        for audience in (FINANCE, ENGINEERING):
            assert set(fingerprints[variant][audience]["main"]) == {"inputs", "published", "stale"}
            del fingerprints[variant][audience]["main"]["published"]
    assert fingerprints["a"][FINANCE] != fingerprints["b"][FINANCE]
    assert fingerprints["a"][ENGINEERING] == fingerprints["b"][ENGINEERING]


# Figures read off a blanked one: each blanked wherever (within a night, or while a blanked version is the latest)
# the figure it is read off is.
# (stop_reason and the forecast's projected_over_boundary are blanked by the same contract entries; the demo's
# nights have no stop reason and no forecast row on a blanked batch to prove it with.)
DERIVED = [
    ("fct_batch_costs", "assumed_cost", "weakest_evidence_level"),  # 'pending', 'measured': is the cost zero?
    ("fct_batch_budget", "projected_over_boundary", "stop_signal"),  # the comparison or-ed in
]


@pytest.mark.parametrize(("table", "blanked", "derived"), DERIVED, ids=[f"{t}.{d}" for t, _, d in DERIVED])
def test_a_figure_read_off_a_blanked_one_is_blanked_with_it(nights, table, blanked, derived):
    engineering = file_of(nights["a"], ENGINEERING)
    finance = file_of(nights["a"], FINANCE)
    sql = f"select batch_id from marts.{table} where {blanked} is null order by 1"
    hidden = sorted(set(rows(engineering, sql)) - set(rows(finance, sql)))  # blanked for engineering only
    assert hidden, f"no row of {table} has {blanked} blanked: the test proves nothing"
    shown = rows(engineering, f"select batch_id, {derived} from marts.{table} where {derived} is not null")
    assert [batch for batch, _ in shown if (batch,) in hidden] == []


def test_a_version_written_before_the_measured_people_were_kept_has_no_labour_for_engineering(demo_copy):
    """A warehouse's history from before the count was kept: its versions count every person (B-7's 4, one of them
    at an assumed rate), which may hide one measured person beside assumed ones. Engineering sees no labour in such
    a version; finance keeps it."""
    from cost_pipeline.publish import publish_marts

    warehouse = demo_copy / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("update marts.fct_batch_cost_history set labour_measured_people = null")
    files = publish_marts(warehouse)
    sql = (
        "select batch_id, labour_cost is null, total_cost is null from marts.fct_batch_cost_history"
        " where labour_people > 0 order by 1"
    )
    assert rows(files[ENGINEERING], sql) == [("B-7", True, True), ("B-8", True, True), ("unattributed", True, True)]
    assert all(not blank for _, blank, _ in rows(files[FINANCE], sql))
