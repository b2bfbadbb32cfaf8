"""Contract validation of parsed rows with pandera, quarantining instead of dropping.

pandera's ``drop_invalid_rows`` loses rows silently; here every failing row becomes a ``Rejection``
naming the column and check, with a message that says what the column should hold and gives an example
(``expectations.py``), never the value (it may be confidential) nor the check's regular expression.

These rules come before and after the contract's own checks, for every source alike:

- a cell holding a list or an object (JSON) where the column wants one value is rejected (``<column>.scalar``),
  rather than stored as its Python text, and so is timestamp text too long to be one
  (``<column>.timestamp_length``), a number in a time column whose unit the contract does not name
  (``<column>.time_unit``: it would read as a 1970 date) and NaN or an infinity in a numeric column (its domain's
  rule: pandera would take NaN for a blank);
- each value of a typed column is made its type on its own (``_typed``): one value that cannot be quarantines
  its own row (``<column>.coerce_dtype``), never, as pandera's column-wide coercion would, the whole column;
- every time value is made naive UTC first (``timestamps.utc_time``): an offset or ``Z`` is honoured, a naive
  time is UTC whatever the host's zone, a number is converted by its declared unit;
- each numeric column's domain (``schemas.Domain``: finite, its sign, a range that fits the warehouse type) and
  the schema's cross-field rules (``schemas.NotBefore``: end >= start, salvage <= price) run as pandera checks;
- a row that passes pandera must also fit the warehouse column it is written to (``<column>.warehouse_type``):
  pandera's Int64 takes 2**31 for an INTEGER column, and the contract's date and money patterns take
  2026-02-30 and non-ASCII digits (``\\d``), all of which DuckDB refuses at insert time, and with them the
  whole source's load. The check is the writer's own cast, run as ``try_cast`` in DuckDB on the same frame;
- a key column's repeats are rejected after the first occurrence that passed everything else;
- then a sum across the rows of one file sharing a key (``schemas.SumAtMost``: a person's hours of one day, the
  person by their name as person_key folds it) above its limit rejects every row of that group;
- last, spans of the rows of one file sharing a key that overlap (``schemas.Disjoint``: a replica's runs) reject
  every row whose span overlaps another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from functools import cache, partial
from itertools import groupby
from operator import itemgetter

import duckdb
import pandas as pd
import pandera.pandas as pa

from cost_pipeline import duckdb_session
from cost_pipeline.contract.schemas import NOT_FINITE, Col, Disjoint, SourceSchema, SumAtMost, as_number
from cost_pipeline.ingest.lib.expectations import column_message, row_message, warehouse_text
from cost_pipeline.ingest.lib.records import ParsedFile, Rejection
from cost_pipeline.ingest.lib.timestamps import is_number, number_time_message, utc_time
from cost_pipeline.ingest.lib.warehouse import quote
from cost_pipeline.person_name import person_name

_TRUE = {"true", "t", "yes", "1"}
_FALSE = {"false", "f", "no", "0"}


def _boolean(value: object) -> object:
    """CSV booleans arrive as text; unknown text is left as it is, for the dtype check to quarantine."""
    if isinstance(value, str):
        text = value.strip().lower()
        return True if text in _TRUE else False if text in _FALSE else value
    return value


def _as_text(value: object) -> object:
    """pandera's coercion to ``str`` for one value: text stays, null stays null, anything else becomes its text."""
    if value is None or isinstance(value, str) or pd.isna(value):
        return value
    return str(value)


def _checks(schema: SourceSchema) -> dict[tuple[str | None, str], pa.Check]:
    """Each contract check by (column, the name pandera's failure cases give it); row checks under column None."""
    found: dict[tuple[str | None, str], pa.Check] = {}
    for column in schema.columns:
        for check in column.all_checks:
            found[(column.name, str(check.error or check.name))] = check
    for check in schema.all_row_checks:
        found[(None, str(check.error or check.name))] = check
    return found


def _rule(column: object, check: object) -> str:
    name = str(check).split("(")[0]
    return f"{column}.{name}" if column is not None else name


# No timestamp text is longer; a longer value (a corrupt field can be megabytes) is refused before the date
# parser, which falls back to dateutil and takes seconds over such a string.
MAX_TIMESTAMP_TEXT = 64


def _refusal(column: Col, value: object) -> tuple[str, str] | None:
    """The rule and message a raw value breaks before pandera sees it, if any."""
    if isinstance(value, list | dict | tuple | set):
        return f"{column.name}.scalar", f"column {column.name} holds a list or an object, not one value"
    if column.sql_type == "TIMESTAMP":
        if isinstance(value, str) and len(value) > MAX_TIMESTAMP_TEXT:
            return f"{column.name}.timestamp_length", f"column {column.name} is too long to be a timestamp"
        if column.unit is None and is_number(value):
            return f"{column.name}.time_unit", number_time_message(column.name)
    # NaN and infinities before pandera, which takes NaN in a nullable column for a blank.
    number = as_number(value) if column.domain is not None else None
    if number is not None and not number.is_finite():
        return f"{column.name}.{NOT_FINITE}", f"column {column.name} should hold {column.domain.describe()}"
    return None


def _precheck(rows: list[dict[str, object]], schema: SourceSchema) -> dict[int, Rejection]:
    """Rows with a list or an object (parsed JSON) in a column that holds one value, over-long timestamp text, a
    number in a time column whose unit the contract does not name, or NaN or an infinity in a numeric column."""
    rejected: dict[int, Rejection] = {}
    for row in rows:
        line = int(row["source_line"])
        for column in schema.columns:
            refused = _refusal(column, row.get(column.name))
            if refused is not None:
                rejected[line] = Rejection(line, *refused)
                break
    return rejected


def _coerced(values: pd.Series, dtype: str | type) -> object | None:
    """One value made the column's type on its own, as pandas would make it alone; None when it cannot be."""
    try:
        return pd.array(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        return None


def _typed(frame: pd.DataFrame, schema: SourceSchema) -> dict[int, Rejection]:
    """Make each typed column of ``frame`` its pandas type, value by value; rows holding a value that cannot be
    one are returned (``<column>.coerce_dtype``) and dropped from ``frame``.

    pandera coerces a column as a whole, and when that fails it looks for the failing values one by one, each
    alone; a column failing only as a whole (``true`` beside ``1`` in a boolean column, ``1.5`` beside whole
    numbers in an integer one) then names no value, and every row of the file would be quarantined. Here a
    column that does not convert as a whole is converted value by value: only a value that cannot be the
    column's type on its own is refused, and pandera's own coercion finds the column typed already.
    """
    rejected: dict[int, Rejection] = {}
    for column in schema.columns:
        dtype = column.pandas_dtype
        if column.sql_type == "TIMESTAMP":
            # A time is made naive UTC first (``utc_time``); text left is no ISO 8601 time, and pandas would guess
            # at it (``2026-11-02T09:00:00 EST`` read as 09:00 UTC): refused here, never coerced.
            message = column_message(column.name, column.sql_type, "coerce_dtype", None)
            for line, value in frame[column.name].items():
                if isinstance(value, str):
                    rejected[int(line)] = Rejection(int(line), column.rule or f"{column.name}.coerce_dtype", message)
            frame.drop(index=[i for i in frame.index if int(i) in rejected], inplace=True)
            continue
        if dtype is str:
            continue  # text is made text (``_as_text``)
        values = frame[column.name]
        typed = _coerced(values, dtype)
        if typed is None:
            one_by_one = {line: _coerced(values.loc[[line]], dtype) for line in values.index}
            message = column_message(column.name, column.sql_type, "coerce_dtype", None)
            for line, one in one_by_one.items():
                if one is None:
                    rejected[int(line)] = Rejection(int(line), column.rule or f"{column.name}.coerce_dtype", message)
            frame.drop(index=[i for i in frame.index if int(i) in rejected], inplace=True)
            typed = pd.array([one_by_one[line][0] for line in frame.index], dtype=dtype)
        frame[column.name] = pd.Series(typed, index=frame.index)
    return rejected


_MODELS: dict[int, tuple[SourceSchema, pa.DataFrameSchema]] = {}


def _model(schema: SourceSchema) -> pa.DataFrameSchema:
    """The schema's pandera model, built once per schema object (a load validates file after file with it).

    Text columns are made text here (``_as_text``), so the model leaves out pandera's own str coercion and its
    element-wise dtype check, which format an empty failure report for every column on every call (about 3 ms
    a column, most of a small file's validation); nullability and the contract's checks still run.
    """
    cached = _MODELS.get(id(schema))
    if cached is None or cached[0] is not schema:
        if len(_MODELS) > 64:
            _MODELS.clear()
        text = {c.name: {"dtype": None} for c in schema.columns if c.pandas_dtype is str}
        cached = _MODELS[id(schema)] = (schema, schema.pandera().update_columns(text))
    return cached[1]


# After pandera's coercion these columns hold pandas values every one of which the warehouse type takes
# (str, Int64, float64, boolean, datetime64[ns]); the others (INTEGER, DECIMAL, DATE) are checked.
_ALWAYS_FIT = {"VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMP"}


def _misfits(valid: pd.DataFrame, schema: SourceSchema, con: duckdb.DuckDBPyConnection | None) -> dict[int, Rejection]:
    """Rows holding a value the writer's ``cast(<column> as <sql type>)`` would refuse."""
    checked = [(i, c) for i, c in enumerate(schema.columns) if c.sql_type not in _ALWAYS_FIT]
    if valid.empty or not checked:
        return {}
    own = con is None
    con = duckdb_session.connect(config={"enable_external_access": False}) if own else con
    failed = (
        "case "
        + " ".join(
            f"when {quote(c.name)} is not null and try_cast({quote(c.name)} as {c.sql_type}) is null then {i}"
            for i, c in checked
        )
        + " end"
    )
    try:
        rows = valid[[c.name for _, c in checked]].assign(validating_line=valid.index.astype("int64"))
        con.register("validating_rows", rows)
        found = con.execute(
            f"select validating_line, failed from (select validating_line, {failed} as failed "
            "from validating_rows) where failed is not null"
        ).fetchall()
        con.unregister("validating_rows")
    finally:
        if own:
            con.close()
    rejected = {}
    for line, index in found:
        column = schema.columns[index]
        rejected[int(line)] = Rejection(
            int(line),
            f"{column.name}.warehouse_type",
            f"column {column.name} should hold {warehouse_text(column.sql_type)}",
        )
    return rejected


class _NoRowNamed(Exception):
    """A check failed without naming a row: in a batch of files, each file must be judged on its own."""


def validate_files(
    parsed_files: Sequence[ParsedFile], schema: SourceSchema, con: duckdb.DuckDBPyConnection | None = None
) -> list[pd.DataFrame]:
    """``validate_rows`` of every file, in one pass over all their rows: the same rejections and valid rows, file by
    file, as one call per file gives. A pass has a fixed cost of about 40 ms (pandera's and pandas' own), which
    10,000 one-record files paid 10,000 times (7 minutes). A check that fails without naming a row, or anything
    unforeseen, sends each file through ``validate_rows`` on its own, so an error names its file."""
    if sum(1 for parsed in parsed_files if parsed.rows) < 2:
        return [validate_rows(parsed, schema, con) for parsed in parsed_files]
    origin: list[tuple[int, int]] = []  # row number in the batch - 1 -> (file's position, its line)
    batch = ParsedFile(path=parsed_files[0].path, sha256="")
    for position, parsed in enumerate(parsed_files):
        for row in parsed.rows:
            origin.append((position, int(row["source_line"])))
            batch.rows.append({**row, "source_line": len(origin)})
    try:
        valid = validate_rows(batch, schema, con, file_of=[position for position, _ in origin])
    except Exception:  # noqa: BLE001 - judged again file by file, where an error names its file
        return [validate_rows(parsed, schema, con) for parsed in parsed_files]
    for rejection in batch.rejections:
        position, line = origin[rejection.line - 1]
        parsed_files[position].rejections.append(
            Rejection(line, rejection.rule, rejection.message, rejection.raw, rejection.records)
        )
    for parsed in parsed_files:
        parsed.rejections.sort(key=lambda r: r.line)
    where = [origin[number - 1] for number in valid["source_line"]]
    positions = pd.Series([position for position, _ in where], index=valid.index, dtype="int64")
    valid["source_line"] = pd.Series([line for _, line in where], index=valid.index, dtype="int64")
    frames = []
    for position, parsed in enumerate(parsed_files):
        if not parsed.rows:
            frames.append(validate_rows(parsed, schema, con))
        else:
            frames.append(valid[positions == position].reset_index(drop=True))
    return frames


def _over_sum(valid: pd.DataFrame, rule: SumAtMost, file_of: Sequence[int] | None, folded: frozenset[str]) -> pd.Series:
    """Each valid row: whether its group (``rule.key``, within its own file) adds ``rule.column`` up above the limit.
    Summed as Decimal: a DECIMAL column travels as text, and 0.1 + 0.2 hours is no float's business."""
    groups = _file_groups(valid, rule.key, file_of, folded, rule.names)
    totals: dict[tuple, Decimal] = {}
    for group, value in zip(groups, valid[rule.column], strict=True):
        totals[group] = totals.get(group, Decimal(0)) + Decimal(str(value))
    return pd.Series([totals[group] > rule.limit for group in groups], index=valid.index, dtype=bool)


def _keyed(valid: pd.DataFrame, key: Sequence[str], folded: frozenset[str]) -> pd.DataFrame:
    """The ``key`` columns of the valid rows as rows are matched by them: a folded id (``Col.folded``) in lower
    case, so R-L1 and r-l1 are one."""
    within = valid[list(key)]
    return within.assign(**{c: within[c].str.lower() for c in key if c in folded})


def _file_groups(
    valid: pd.DataFrame,
    key: tuple[str, ...],
    file_of: Sequence[int] | None,
    folded: frozenset[str],
    names: tuple[str, ...] = (),
) -> list[tuple]:
    """Each valid row's group: its ``key`` values as text (a folded id in lower case; those in ``names`` as a reader
    compares a person's name: ``person_name``), and its file when the rows are several files'."""
    within = _keyed(valid, key, folded).astype(str)
    for column in names:
        within[column] = within[column].map(person_name)
    if file_of is not None:
        within = within.assign(_file=[file_of[i - 1] for i in valid.index])
    return [tuple(row) for row in within.itertuples(index=False)]


def _overlapping(
    valid: pd.DataFrame, rule: Disjoint, file_of: Sequence[int] | None, folded: frozenset[str]
) -> pd.Series:
    """Each valid row: whether its span ``[start, end)`` overlaps another's of its group (``rule.key``, within its own
    file). Two spans overlap when each starts before the other ends. Sorted by start, a span overlaps one starting
    earlier when it starts before the latest end of those, one starting later when the next start is before its end,
    and one starting with it when both last a while. A row without a start or an end overlaps nothing."""
    spans: dict[tuple, list[tuple]] = {}
    for group, line, start, end in zip(
        _file_groups(valid, rule.key, file_of, folded), valid.index, valid[rule.start], valid[rule.end], strict=True
    ):
        if not (pd.isna(start) or pd.isna(end)):
            spans.setdefault(group, []).append((start, end, line))
    over: set[int] = set()
    for group_spans in spans.values():
        by_start = [list(same) for _, same in groupby(sorted(group_spans, key=itemgetter(0)), key=itemgetter(0))]
        reach = None  # the latest end of the spans starting earlier
        for position, same in enumerate(by_start):
            start = same[0][0]
            following = by_start[position + 1][0][0] if position + 1 < len(by_start) else None
            lasting = sum(1 for _, end, _ in same if start < end)
            for _, end, line in same:
                if (
                    (reach is not None and start < reach)
                    or (following is not None and following < end)
                    or (start < end and lasting > 1)
                ):
                    over.add(int(line))
            latest = max(end for _, end, _ in same)
            reach = latest if reach is None else max(reach, latest)
    return pd.Series([int(line) in over for line in valid.index], index=valid.index, dtype=bool)


@cache
def _no_rows(columns: tuple[str, ...]) -> pd.DataFrame:
    """The valid rows of a file without any (a copy each time): making an empty frame of a source's ~40 columns cost
    ~3 ms, paid by every empty or wholly refused file."""
    return pd.DataFrame(columns=[*columns, "source_line"])


def validate_rows(
    parsed: ParsedFile,
    schema: SourceSchema,
    con: duckdb.DuckDBPyConnection | None = None,
    file_of: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Validate ``parsed.rows``; failing rows move to ``parsed.rejections``; returns the valid, typed rows.

    ``con`` (the warehouse connection, when there is one) runs the warehouse-type check; without it a private
    in-memory database does. ``file_of`` (``validate_files``: the rows of several files, numbered 1, 2, ...) gives
    each row's file, so that a key is unique within its own file.
    """
    columns = [c.name for c in schema.columns]
    if not parsed.rows:
        return _no_rows(tuple(columns)).copy()
    rejected: dict[int, Rejection] = _precheck(parsed.rows, schema)
    rows = [row for row in parsed.rows if int(row["source_line"]) not in rejected]
    data = {}
    for column in schema.columns:
        prepare = (
            _boolean
            if column.sql_type == "BOOLEAN"
            else _as_text
            if column.pandas_dtype is str
            else partial(utc_time, unit=column.unit)
            if column.sql_type == "TIMESTAMP"
            else None
        )
        values = [row.get(column.name) for row in rows]
        data[column.name] = values if prepare is None else [prepare(v) for v in values]
    # Object columns: a JSON integer beyond 64 bits would otherwise break the frame's own construction.
    frame = pd.DataFrame(data, columns=columns, index=[int(row["source_line"]) for row in rows], dtype=object)
    rejected.update(_typed(frame, schema))
    model = _model(schema)
    named_rules = {c.name: c.rule for c in schema.columns if c.rule}
    row_rules = {str(check.name) for check in schema.all_row_checks}
    checks = _checks(schema)
    sql_types = {c.name: c.sql_type for c in schema.columns}
    current = frame
    while True:
        try:
            valid = model.validate(current[columns].copy(), lazy=True)
            break
        except pa.errors.SchemaErrors as errors:
            cases = errors.failure_cases
            indexed = cases[cases["index"].notna()]
            if indexed.empty:
                if file_of is not None:
                    raise _NoRowNamed from None
                # A failure that names no row (a check that could not run) condemns what is left.
                first = cases.iloc[0]
                for line in current.index:
                    rejected[int(line)] = Rejection(
                        int(line),
                        _rule(first["column"], first["check"]),
                        "check could not be evaluated on this file's rows",
                    )
                valid = current[columns].iloc[0:0]
                break
            for case in indexed.itertuples():
                line = int(case.index)
                if line not in rejected:
                    failed = str(case.check)
                    if failed in row_rules:
                        rule, message = failed, row_message(checks.get((None, failed)), failed)
                    else:
                        rule = named_rules.get(case.column) or _rule(case.column, case.check)
                        message = column_message(
                            str(case.column), sql_types.get(case.column, ""), failed, checks.get((case.column, failed))
                        )
                    rejected[line] = Rejection(line, rule, message)
            current = current.drop(index=[i for i in current.index if int(i) in rejected])
    misfits = _misfits(valid, schema, con)
    rejected.update(misfits)
    valid = valid.drop(index=list(misfits))
    for key in schema.unique:
        columns = [key] if isinstance(key, str) else list(key)
        within = _keyed(valid, columns, schema.folded)
        if file_of is not None:
            within = within.assign(_file=[file_of[i - 1] for i in valid.index])
        duplicated = within.duplicated(keep="first")
        said = f"{columns[0]} repeats" if len(columns) == 1 else f"{', '.join(columns[:-1])} and {columns[-1]} repeat"
        for line in valid.index[duplicated]:
            rejected[int(line)] = Rejection(int(line), f"{'+'.join(columns)}.unique", f"{said} an earlier row")
        valid = valid[~duplicated]
    for rule in schema.sums:
        over = _over_sum(valid, rule, file_of, schema.folded)
        for line in valid.index[over]:
            rejected[int(line)] = Rejection(int(line), rule.rule, f"the row should have {rule.expects}")
        valid = valid[~over]
    for rule in schema.disjoint:
        over = _overlapping(valid, rule, file_of, schema.folded)
        for line in valid.index[over]:
            rejected[int(line)] = Rejection(int(line), rule.rule, f"the row should have {rule.expects}")
        valid = valid[~over]
    parsed.rejections.extend(rejected.values())
    parsed.rejections.sort(key=lambda r: r.line)
    valid = valid.copy()
    valid["source_line"] = valid.index.astype("int64")
    return valid.reset_index(drop=True)
