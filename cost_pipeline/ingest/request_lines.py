"""Inference requests (I9) loaded inside DuckDB: JSON Lines and Parquet, native or LiteLLM spend-log shaped.

A night can bring ten million requests, too many for pandas. Each file goes through the shared in-database path
(``lib/in_database.py``: content-hash dedup, one transaction per source, rows in = staged + quarantined), and
every line is mapped into the raw shape in SQL, as ``serving.request_row`` maps it in Python.

The rules, their names and their messages stay those of the contract schema (``schemas.serving_requests``) as
pandera checks them. SQL vouches only for a line it can map without doubt: a JSON object (no repeated key, no
``NaN``, no trailing comma, no ``\\u`` escape of a surrogate or NUL), every value of the JSON type its column
takes (a whole number where tokens are, an ISO 8601 date-time with seconds and at most microseconds where a time
is, a code the contract lists where a status is) and inside its domain. A blank text is absent, as null is
(``request_rows.given``), in SQL and in Python alike. Every other line, the broken ones, which
are few, is parsed and checked by the pandas path itself (``request_line_parser`` and ``validate_rows``), so its
rule and message are the same as before, and its valid rows join the file's. A request id repeating an earlier
staged row of the file at the same start is then quarantined (``request_id+requested_at.unique``; the id compared
case-folded), whichever path checked either row.

A Parquet file is read as the same JSON objects. When a column has a type whose reading in Python could differ
from SQL's (a float where a count is, a date, an interval, a nested time), the whole file takes the pandas path.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb

from cost_pipeline.contract import Contract
from cost_pipeline.contract.schemas import SourceSchema
from cost_pipeline.ingest.lib.in_database import (
    InDatabaseSource,
    ReadAlone,
    Stage,
    StageGroup,
    file_position,
    load_in_database,
    trimmed_sql,
)
from cost_pipeline.ingest.lib.parquet import parse_parquet
from cost_pipeline.ingest.lib.records import FileRejected, ParsedFile, Rejection, read_text, split_lines
from cost_pipeline.ingest.lib.validate import validate_rows
from cost_pipeline.ingest.lib.warehouse import IngestReport, file_pattern, quote
from cost_pipeline.ingest.request_rows import (
    BLANK_TEXT,
    LITELLM_STATUS,
    READ_FIELDS,
    request_line_parser,
    request_row,
)

if TYPE_CHECKING:
    from cost_pipeline.ingest.lib.source import Source

# Text that Python's json module refuses (or reads otherwise) while DuckDB's parser takes it: a trailing comma,
# NaN or an infinity, an escaped surrogate (an emoji's pair too: Python's check decides) or NUL. One pattern per
# leading character: a pattern that starts with one literal character is searched for it first, a pattern that
# starts with a class ([:,\[]) is tried at every character, four times as long over a file of requests.
_DOUBTFUL_TEXTS = (
    r",\s*([\]}]|[-+]?(?i:nan|inf))",
    r":\s*[-+]?(?i:nan|inf)",
    r"\[\s*[-+]?(?i:nan|inf)",
    r"\\u([dD][89a-fA-F]|0000)",
)
# The time text SQL reads as Python's ``timestamps.from_iso`` does, within pandas' nanosecond range.
_ISO_TIME = r"\d{4}-\d{2}-\d{2}[T ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?"
_FLAG_TRUE = "[Tt][Rr][Uu][Ee]"
_FLAG_FALSE = "[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo][Nn][Ee]|"
_TOKENS_MAX, _MILLISECONDS_MAX, _COUNT_MAX = 10**12, 10**12, 10**9
_META_FIELDS = ("business_line", "task_id", "attempt", "escalated_to", "human_handoff", "status")
# Parquet column types Python reads as SQL does; any other type sends the whole file to the pandas path.
_PARQUET_SCALARS = {
    *("VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"),
    *("UBIGINT", "HUGEINT", "DOUBLE", "FLOAT", "JSON"),
}
_PARQUET_TIMES = {"TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "DATE"}
_PARQUET_NESTED_UNSAFE = re.compile(r"TIME|DATE|INTERVAL|BLOB|BIT|UNION|UUID|MAP|ENUM|VARINT|DOUBLE|FLOAT|DECIMAL")
# The request fields' Parquet types SQL maps as Python does (a float count, a date or a decimal does not).
_PARQUET_FIELD_TYPES = {
    *("VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"),
    *("UBIGINT", "JSON", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"),
}


@dataclass(frozen=True)
class _Json:
    """One JSON value of a line, by its JSON type (null: absent) and its text (a string's own, unescaped)."""

    kind: str
    text: str


def _value(name: str) -> _Json:
    """A field of the line: its JSON type is ``k[index + 1]`` (``k[1]`` is the line's own), its text ``t[index]``."""
    index = READ_FIELDS.index(name) + 1
    return _Json(f"k[{index + 1}]", f"t[{index}]")


def _meta(name: str) -> _Json:
    index = _META_FIELDS.index(name) + 1
    return _Json(f"mk[{index}]", f"mt[{index}]")


def _blank(x: _Json) -> str:
    return f"coalesce({x.kind}, 'NULL') = 'NULL'"


def _text(x: _Json) -> str:
    """A JSON string's text; null for anything else."""
    return f"case when {x.kind} = 'VARCHAR' then {x.text} end"


def _given(x: _Json) -> str:
    """A field's text, null when it is no string or a blank one (``request_rows.given``): what a Go gateway or a
    serialiser writes for an unset field is absent. Only a text below ``'!'`` (empty, or led by a space or a control
    character) can be blank, so the others pay no regular expression."""
    return (
        f"case when {x.kind} = 'VARCHAR' and ({x.text} >= '!' or not regexp_full_match({x.text}, '{BLANK_TEXT}')) "
        f"then {x.text} end"
    )


def _optional_text_ok(x: _Json) -> str:
    return f"coalesce({x.kind}, 'NULL') in ('NULL', 'VARCHAR')"


def _whole(x: _Json) -> str:
    """A JSON whole number that fits a bigint; null for anything else."""
    return f"case when {x.kind} in ('BIGINT', 'UBIGINT') then try_cast({x.text} as bigint) end"


def _flag(x: _Json) -> str:
    """``_flag`` then the boolean coercion, for the values SQL is sure of; null: not sure."""
    return (
        f"case when {_blank(x)} then false when {x.kind} = 'BOOLEAN' then {x.text} = 'true' "
        f"when {x.kind} = 'VARCHAR' and regexp_full_match({x.text}, '{_FLAG_TRUE}') then true "
        f"when {x.kind} = 'VARCHAR' and regexp_full_match({x.text}, '{_FLAG_FALSE}') then false end"
    )


def _time(x: _Json) -> str:
    """ISO text as naive UTC; null for anything SQL is not sure Python reads alike.

    What ``utc_timestamp_sql`` makes of the text, without its trim and its two patterns: text ``_ISO_TIME`` matches
    whole has nothing to trim, is ISO 8601 unless its year is 0000 (null there too), and has an offset exactly when
    its sixth character from the end is a sign (+hh:mm, -hh:mm; a naive time's is a digit or a colon); a time in Z
    is read as UTC by the cast to ``timestamp`` too. Each pattern walked every request's time;
    ``tests/test_in_database_text.py`` checks the two agree."""
    zoned = f"substr({x.text}, -6, 1) in ('+', '-')"
    return (
        f"case when {x.kind} = 'VARCHAR' and regexp_full_match({x.text}, '{_ISO_TIME}') "
        f"and not starts_with({x.text}, '0000') then case when {zoned} "
        f"then timezone('UTC', try_cast({x.text} as timestamptz)) else try_cast({x.text} as timestamp) end end"
    )


def _in_pandas_range(t: str) -> str:
    return f"({t} between timestamp '1700-01-01' and timestamp '2200-01-01')"


def _listed(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _doubtful(text: str) -> str:
    """``text`` holds something Python's json module may read otherwise than DuckDB (``_DOUBTFUL_TEXTS``)."""
    return "(" + " or ".join(f"regexp_matches({text}, '{pattern}')" for pattern in _DOUBTFUL_TEXTS) + ")"


def _json_ok(text: str) -> str:
    """SQL is sure Python's json module reads ``text`` as DuckDB does."""
    return f"(json_valid({text}) and not {_doubtful(text)})"


def _unique_keys(x: str) -> str:
    """No key of the JSON object ``x`` repeats: each key is first found where it is (the keys read once, through
    ``list_apply``; ``list_distinct`` hashes every row's list and took four times as long)."""
    return (
        f"(list_apply([json_keys({x})], lambda k: len(list_filter(k, lambda key, i: list_position(k, key) <> i)))[1]"
        " = 0)"
    )


def _mapped_sql(schema: SourceSchema) -> str:
    """``landing_lines(landing_file, line, text)`` -> each line's raw columns (after its line and its file's
    position among the files staged together) and whether SQL vouches for it (``sure``)."""
    listed = {
        c.name: c.checks[0].statistics["allowed_values"]
        for c in schema.columns
        if c.checks and c.name in ("latency_tier", "status")
    }
    statuses, tiers = _listed(listed["status"]), _listed(listed["latency_tier"])
    paths = "[" + ", ".join(f"'$.\"{name}\"'" for name in READ_FIELDS) + "]"
    typed_paths = "['$', " + paths[1:]  # the line's own JSON type first, then its fields'
    meta_paths = "[" + ", ".join(f"'$.\"{name}\"'" for name in _META_FIELDS) + "]"
    renamed = " ".join(f"when '{k}' then '{v}'" for k, v in LITELLM_STATUS.items())
    meta = _value("metadata")
    meta_once = _text(meta)
    litellm_status = f"coalesce({_given(_value('status'))}, {_given(_meta('status'))}, 'success')"
    return f"""
        with typed as (
            select landing_file, line, text, json_type(text, {typed_paths}) as k
            from landing_lines where {_json_ok("text")}
        ), objects as (
            select landing_file, line, k, json_extract_string(text, {paths}) as t,
                   k[1] = 'OBJECT' and {_unique_keys("text")} as object_ok
            from typed
        ), meta_once as (
            select *, {meta_once} as meta_text1,
                   case when {meta.kind} <> 'VARCHAR' then {meta.text}::json end as meta_raw
            from objects
        ), meta_twice as (
            select *, case when meta_text1 is null then meta_raw
                           when {_json_ok("meta_text1")} then meta_text1::json end as m1,
                   meta_text1 is not null and not {_json_ok("meta_text1")} as meta_doubt1
            from meta_once
        ), meta_thrice as (
            select *, case when json_type(m1) = 'VARCHAR' then m1 ->> '$' end as meta_text2 from meta_twice
        ), meta as (
            select *, case when meta_text2 is null then m1 when {_json_ok("meta_text2")} then meta_text2::json
                      end as m2,
                   meta_doubt1 or (meta_text2 is not null and not {_json_ok("meta_text2")}) as meta_doubt
            from meta_thrice
        ), shaped as (
            select *,
                   not {_blank(_value("requested_at"))} or {_blank(_value("startTime"))} as native,
                   case when json_type(m2) = 'OBJECT' then m2 end as m
            from meta
        ), fields as (
            select landing_file, line, native, object_ok,
                   {_given(_value("request_id"))} as request_id,
                   case when native then {_time(_value("requested_at"))} else {_time(_value("startTime"))}
                       end as requested_at,
                   {_time(_value("endTime"))} as ended_at,
                   {_given(_value("model"))} as native_model,
                   {_given(_value("model_group"))} as model_group,
                   {_given(_value("tenant"))} as native_tenant,
                   {_given(_value("team_id"))} as team_id,
                   {_given(_value("business_line"))} as native_business_line,
                   {_whole(_value("input_tokens"))} as native_input_tokens,
                   {_whole(_value("output_tokens"))} as native_output_tokens,
                   {_whole(_value("prompt_tokens"))} as prompt_tokens,
                   {_whole(_value("completion_tokens"))} as completion_tokens,
                   {_flag(_value("cache_hit"))} as cache_hit,
                   {_whole(_value("latency_ms"))} as native_latency_ms,
                   {_given(_value("latency_tier"))} as latency_tier,
                   {_given(_value("status"))} as native_status,
                   {_given(_value("task_id"))} as native_task_id,
                   {_whole(_value("attempt"))} as native_attempt,
                   {_given(_value("escalated_to"))} as native_escalated_to,
                   {_flag(_value("human_handoff"))} as native_human_handoff,
                   {_optional_text_ok(_value("tenant"))} and {_optional_text_ok(_value("business_line"))}
                       and {_optional_text_ok(_value("task_id"))} and {_optional_text_ok(_value("escalated_to"))}
                       and {_optional_text_ok(_value("latency_tier"))} as native_texts_ok,
                   {_blank(_value("latency_ms"))} as native_latency_blank,
                   {_blank(_value("endTime"))} as end_blank,
                   {_optional_text_ok(_value("team_id"))} and {_optional_text_ok(_value("status"))}
                       and {_optional_text_ok(_value("model_group"))} as litellm_texts_ok,
                   not meta_doubt and (m is null or {_unique_keys("m")}) as meta_ok,
                   mk, mt, {litellm_status} as litellm_status_text
            from (select *, json_type(m, {meta_paths}) as mk, json_extract_string(m, {meta_paths}) as mt from shaped)
        ), litellm as (
            select *,
                   {_given(_meta("business_line"))} as meta_business_line,
                   {_given(_meta("task_id"))} as meta_task_id,
                   case when {_meta("attempt").kind} is null then 1 else {_whole(_meta("attempt"))} end as meta_attempt,
                   {_given(_meta("escalated_to"))} as meta_escalated_to,
                   {_flag(_meta("human_handoff"))} as meta_human_handoff,
                   {_optional_text_ok(_meta("business_line"))} and {_optional_text_ok(_meta("task_id"))}
                       and {_optional_text_ok(_meta("escalated_to"))} and {_optional_text_ok(_meta("status"))}
                       as meta_texts_ok,
                   case lower(litellm_status_text) {renamed} else lower(litellm_status_text) end as litellm_status,
                   regexp_full_match(litellm_status_text, '[A-Za-z_]+') as litellm_status_ascii,
                   cast(trunc(cast(epoch_us(ended_at) - epoch_us(requested_at) as double) / 1000000.0 * 1000.0)
                        as bigint) as litellm_latency_ms
            from fields
        ), mapped as (
            select landing_file, line,
                   request_id, requested_at,
                   case when native then native_model else coalesce(model_group, native_model) end as model,
                   case when native then native_tenant else team_id end as tenant,
                   case when native then native_business_line else meta_business_line end as business_line,
                   case when native then native_input_tokens else prompt_tokens end as input_tokens,
                   case when native then native_output_tokens else completion_tokens end as output_tokens,
                   cache_hit,
                   case when native then native_latency_ms else litellm_latency_ms end as latency_ms,
                   case when native then latency_tier end as latency_tier,
                   case when native then native_status else litellm_status end as status,
                   case when native then native_task_id else meta_task_id end as task_id,
                   case when native then native_attempt else meta_attempt end as attempt,
                   case when native then native_escalated_to else meta_escalated_to end as escalated_to,
                   case when native then native_human_handoff else meta_human_handoff end as human_handoff,
                   case when native then 'native' else 'litellm' end as request_shape,
                   native, object_ok, native_texts_ok, native_latency_blank, end_blank, litellm_texts_ok,
                   meta_ok, meta_texts_ok, litellm_status_ascii, ended_at
            from litellm
        )
        select line, landing_file, request_id, requested_at, model, tenant, business_line, input_tokens,
               output_tokens, cache_hit, latency_ms, latency_tier, status, task_id, attempt, escalated_to,
               human_handoff, request_shape,
               coalesce(
                   object_ok and request_id is not null and model is not null
                   and {_in_pandas_range("requested_at")}
                   and input_tokens between 0 and {_TOKENS_MAX} and output_tokens between 0 and {_TOKENS_MAX}
                   and cache_hit is not null and human_handoff is not null
                   and attempt between 1 and {_COUNT_MAX}
                   and (latency_ms is null or latency_ms between 0 and {_MILLISECONDS_MAX})
                   and (latency_tier is null or list_contains({tiers}, latency_tier))
                   and (latency_tier is not null or latency_ms is not null)
                   and list_contains({statuses}, status)
                   and case when native then native_texts_ok and (native_latency_blank or latency_ms is not null)
                            else litellm_texts_ok and meta_ok and meta_texts_ok and litellm_status_ascii
                                 and (end_blank or ended_at is not null) end,
                   false) as sure
        from mapped
    """


def _columns(schema: SourceSchema) -> list[tuple[str, str]]:
    return [(c.name, c.sql_type) for c in schema.columns]


def _join_valid(
    con: duckdb.DuckDBPyConnection, schema: SourceSchema, parsed: ParsedFile, company: set[int]
) -> list[Rejection] | None:
    """Check ``parsed``'s rows with pandera; the valid ones join ``landing_rows``, the others are returned.

    ``company`` names rows SQL vouched for, checked beside the doubtful ones so that pandera sees each column
    with the kinds of values the whole file gives it (its coercion of a column depends on them). Their verdict
    is SQL's; should pandera refuse one of them (a check it could not run condemns a file's remaining rows), the
    subset did not behave as the whole file would: None, and the caller checks the whole file in Python.
    """
    rejections = list(parsed.rejections)
    parsed.rejections = []
    valid = validate_rows(parsed, schema, con)
    if any(r.line in company and r.rule != _UNIQUE[0] for r in parsed.rejections):
        return None
    rejections.extend(r for r in parsed.rejections if r.line not in company)
    valid = valid[~valid["source_line"].isin(company)]
    if not valid.empty:
        select = ", ".join(f"cast({quote(n)} as {t})" for n, t in _columns(schema))
        con.register("python_checked_rows", valid)
        try:
            con.execute(
                f"insert into landing_rows select cast(source_line as bigint), 0, {select} from python_checked_rows"
            )
        finally:
            con.unregister("python_checked_rows")
    return sorted(rejections, key=lambda r: r.line)


def _company(con: duckdb.DuckDBPyConnection, schema: SourceSchema) -> set[int]:
    """The first row SQL vouched for, and for each nullable column its first row with and without a value."""
    firsts = ["min(line)"] + [
        f"min(line) filter (where {quote(c.name)} is {kind} null)"
        for c in schema.columns
        if c.nullable
        for kind in ("", "not")
    ]
    # fetchall: a result fetched with fetchone is unfinished, and DuckDB refuses to register the rows pandera checks
    # on a connection holding one (a Parquet file's doubtful rows, read without SQL, were the whole file refused).
    [(lines,)] = con.execute(f"select [{', '.join(firsts)}] from landing_rows").fetchall()
    return {int(line) for line in lines if line is not None}


def _in_python(
    con: duckdb.DuckDBPyConnection, schema: SourceSchema, doubtful: set[int], read: Callable[[set[int]], ParsedFile]
) -> list[Rejection]:
    """The doubtful rows (``read`` parses the rows of the lines given, None: every line) checked in Python."""
    if not doubtful:
        return []
    company = _company(con, schema)
    checked = _join_valid(con, schema, read(doubtful | company), company)
    if checked is None:
        con.execute("delete from landing_rows")
        checked = _join_valid(con, schema, read(None), set())
    return checked or []


def _jsonl_in_python(lines: list[tuple[int, str]], path: Path) -> ParsedFile:
    """Lines parsed by the pandas path's own line parser, keeping their numbers."""
    parse = request_line_parser()
    parsed = ParsedFile(path=path, sha256="")
    for number, text in lines:
        one = ParsedFile(path=path, sha256="")
        parse([text], one)
        parsed.rows_in += one.rows_in
        parsed.rows.extend(dict(row, source_line=number) for row in one.rows)
        parsed.rejections.extend(dataclasses.replace(r, line=number) for r in one.rejections)
    return parsed


# The files' lines, numbered, a byte-order mark dropped: split at \r\n, \r or \n, by the faster string_split when
# a file has no \r. ``_lines`` fills in how a line names its file.
_LINES = r"""
    create or replace temp table landing_lines as
    select * from (
        select landing_file, unnest(lines) as text, cast(unnest(generate_series(1, len(lines))) as bigint) as line
        from (select landing_file,
                     case when contains(content, chr(13)) then regexp_split_to_array(content, '\r\n|\r|\n')
                          else string_split(content, chr(10)) end as lines
              from (select {landing_file} as landing_file,
                           case when starts_with(content, chr(65279)) then substr(content, 2) else content end
                           as content
                    from read_text(?)))
    ) where {trimmed} <> ''
"""


def _lines(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> None:
    """``landing_lines`` of the files, each line with its file's position among them (``landing_file``)."""
    patterns = [file_pattern(path) for path in paths]
    named = [] if len(paths) == 1 else [patterns]
    con.execute(_LINES.format(landing_file=file_position(len(paths)), trimmed=trimmed_sql("text")), [*named, patterns])


def _empty_landing(con: duckdb.DuckDBPyConnection, schema: SourceSchema) -> None:
    con.execute(f"create or replace temp table landing_rows as select * from ({_mapped_sql(schema)}) limit 0")
    con.execute("alter table landing_rows drop sure")


def _stage_jsonl(con: duckdb.DuckDBPyConnection, path: Path, schema: SourceSchema) -> list[Rejection]:
    try:
        _lines(con, [path])
    except duckdb.Error:  # not UTF-8 (rejected whole, as the pandas path does) or otherwise unreadable by SQL
        lines = list(enumerate(split_lines(read_text(path)), start=1))
        con.execute("create or replace temp table landing_lines (landing_file integer, line bigint, text varchar)")
        _empty_landing(con, schema)
        return _join_valid(con, schema, _jsonl_in_python(lines, path), set()) or []
    con.execute(
        f"create or replace temp table landing_rows as select line, * exclude (line, sure) "
        f"from ({_mapped_sql(schema)}) where sure"
    )
    doubtful = {
        line for (line,) in con.execute("select line from landing_lines anti join landing_rows using (line)").fetchall()
    }

    def read(lines: set[int] | None) -> ParsedFile:
        selected = "" if lines is None else "where list_contains(?, line)"
        texts = con.execute(
            f"select line, text from landing_lines {selected} order by line", [] if lines is None else [sorted(lines)]
        ).fetchall()
        return _jsonl_in_python(texts, path)

    return _in_python(con, schema, doubtful, read)


def _parquet_columns_read_alike(con: duckdb.DuckDBPyConnection, pattern: str, types: dict[str, str]) -> bool:
    """Whether Python would read every column of the file as SQL does (a time within Python's calendar too)."""
    for name, kind in types.items():
        nested = kind.endswith("]") or kind.startswith("STRUCT")
        if name in READ_FIELDS and kind not in _PARQUET_FIELD_TYPES and not (name == "metadata" and nested):
            return False
        if kind in _PARQUET_TIMES:
            [(outside,)] = con.execute(
                f"select count(*) from read_parquet(?) where {quote(name)} not between "
                "timestamp '0002-01-01' and timestamp '9998-12-31'",
                [pattern],
            ).fetchall()
            if outside:
                return False
        elif kind not in _PARQUET_SCALARS and not (nested and not _PARQUET_NESTED_UNSAFE.search(kind)):
            return False
    return True


def _parquet_value(name: str, kind: str) -> str:
    column = quote(name)
    if kind == "TIMESTAMP":
        return f"strftime({column}, '%Y-%m-%dT%H:%M:%S.%f')"
    if kind == "TIMESTAMP WITH TIME ZONE":
        return f"strftime(timezone('UTC', {column}), '%Y-%m-%dT%H:%M:%S.%fZ')"
    if kind == "JSON":  # Python reads a JSON column as its text
        return f"cast({column} as varchar)"
    return column


def _stage_parquet(con: duckdb.DuckDBPyConnection, path: Path, schema: SourceSchema) -> list[Rejection]:
    pattern = file_pattern(path)
    try:
        types = {row[0]: row[1] for row in con.execute("describe select * from read_parquet(?)", [pattern]).fetchall()}
        alike = _parquet_columns_read_alike(con, pattern, types)
        fields = [name for name in READ_FIELDS if name in types]
        packed = ", ".join(f"{quote(n)} := {_parquet_value(n, types[n])}" for n in fields) or "none := null"
        con.execute(
            "create or replace temp table landing_lines as select 0 as landing_file, "
            "cast(file_row_number + 1 as bigint) as line, "
            f"cast(to_json(struct_pack({packed})) as varchar) as text "
            f"from read_parquet(?, file_row_number = true) where {str(alike).lower()}",
            [pattern],
        )
        _empty_landing(con, schema)
        if alike:
            con.execute(f"insert into landing_rows select * exclude (sure) from ({_mapped_sql(schema)}) where sure")
        [(rows,)] = con.execute("select count(*) from read_parquet(?)", [pattern]).fetchall()
        [(sure,)] = con.execute("select count(*) from landing_rows").fetchall()
    except duckdb.Error:
        raise FileRejected("file_format", "file is not readable Parquet") from None
    if sure == rows:
        return []
    parsed = parse_parquet(path, request_row)  # the rows as the pandas path reads them
    if any(r.line == 0 for r in parsed.rejections):
        raise FileRejected("file_format", "file is not readable Parquet")
    kept = {line for (line,) in con.execute("select line from landing_rows").fetchall()}
    doubtful = {row["source_line"] for row in parsed.rows} | {r.line for r in parsed.rejections}
    doubtful -= kept

    def read(lines: set[int] | None) -> ParsedFile:
        return dataclasses.replace(
            parsed,
            rows=[row for row in parsed.rows if lines is None or row["source_line"] in lines],
            rejections=[r for r in parsed.rejections if lines is None or r.line in lines],
        )

    return _in_python(con, schema, doubtful, read)


def request_stage(schema: SourceSchema) -> Stage:
    def stage(con: duckdb.DuckDBPyConnection, path: Path, _blank_lines: list[int]) -> list[Rejection]:
        try:
            if path.suffix.lower() == ".parquet":
                return _stage_parquet(con, path, schema)
            return _stage_jsonl(con, path, schema)
        finally:
            con.execute("drop table if exists landing_lines")

    return stage


def request_stage_group(schema: SourceSchema) -> StageGroup:
    """Small JSON Lines files staged by one read, when SQL vouches for every line of them; a line it does not vouch
    for takes the pandas path's parser, which reads a file at a time: then they are read one by one."""

    def stage(con: duckdb.DuckDBPyConnection, files: Sequence[tuple[Path, list[int]]]) -> list[list[Rejection]]:
        try:
            _lines(con, [path for path, _ in files])
            con.execute(
                f"create or replace temp table landing_rows as select line, * exclude (line, sure) "
                f"from ({_mapped_sql(schema)}) where sure"
            )
            [(doubtful,)] = con.execute(
                "select (select count(*) from landing_lines) - (select count(*) from landing_rows)"
            ).fetchall()
        finally:
            con.execute("drop table if exists landing_lines")
        if doubtful:
            raise ReadAlone(f"{doubtful} lines need the pandas path's parser")
        return [[] for _ in files]

    return stage


def _jsonl_group(path: Path) -> str | None:
    """JSON Lines files are staged together; a Parquet file is read alone."""
    return None if path.suffix.lower() == ".parquet" else "jsonl"


# A request id repeating an earlier staged row of its file: the pandas path's last rule, kept last.
_UNIQUE = (
    "request_id+requested_at.unique",
    "line <> min(line) over (partition by landing_file, lower(request_id), requested_at)",
    "request_id and requested_at repeat an earlier row",
)


@dataclass(frozen=True)
class RequestLoader:
    """The request log's loader: in DuckDB, by the contract's request schema (its codes and domains)."""

    schema: Any  # Callable[[Contract], SourceSchema]: the contract schema, as a ``RowLoader`` names it
    kind: ClassVar[str] = "in DuckDB"

    def reads_parquet(self) -> bool:
        return True

    def in_database(self, contract: Contract) -> InDatabaseSource:
        schema = self.schema(contract)
        columns = _columns(schema)
        return InDatabaseSource(
            columns,
            ", ".join(quote(n) for n, _ in columns),
            [_UNIQUE],
            request_stage(schema),
            stage_group=request_stage_group(schema),
            group_key=_jsonl_group,
        )

    def load(
        self, con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source, contract: Contract, _options: Any
    ) -> IngestReport:
        return load_in_database(con, landing_dir, source.files(landing_dir), source.name, self.in_database(contract))
