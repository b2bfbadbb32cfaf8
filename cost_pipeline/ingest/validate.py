"""Contract validation of parsed rows with pandera, quarantining instead of dropping.

pandera's ``drop_invalid_rows`` loses rows silently; here every failing row becomes a ``Rejection``
naming the column and check (never the value: it may be confidential).
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa

from cost_pipeline.contract.schemas import SourceSchema
from cost_pipeline.ingest.records import ParsedFile, Rejection

_TRUE = {"true", "t", "yes", "1"}
_FALSE = {"false", "f", "no", "0"}


def _boolean(value: object) -> object:
    """CSV booleans arrive as text; unknown text is left as it is, for the dtype check to quarantine."""
    if isinstance(value, str):
        text = value.strip().lower()
        return True if text in _TRUE else False if text in _FALSE else value
    return value


def _rule(column: object, check: object) -> str:
    name = str(check).split("(")[0]
    return f"{column}.{name}" if column is not None else name


def validate_rows(parsed: ParsedFile, schema: SourceSchema) -> pd.DataFrame:
    """Validate ``parsed.rows``; failing rows move to ``parsed.rejections``; returns the valid, typed rows."""
    columns = [c.name for c in schema.columns]
    frame = pd.DataFrame(parsed.rows, columns=[*columns, "source_line"])
    if frame.empty:
        return frame
    frame.index = frame["source_line"].astype(int)
    for column in schema.columns:
        if column.sql_type == "BOOLEAN":
            frame[column.name] = frame[column.name].map(_boolean)
    model = schema.pandera()
    rejected: dict[int, Rejection] = {}
    current = frame
    while True:
        try:
            valid = model.validate(current[columns].copy(), lazy=True)
            break
        except pa.errors.SchemaErrors as errors:
            cases = errors.failure_cases
            indexed = cases[cases["index"].notna()]
            if indexed.empty:
                # A failure that names no row (a check that could not run) condemns what is left.
                first = cases.iloc[0]
                for line in current.index:
                    rejected[int(line)] = Rejection(int(line), _rule(first["column"], first["check"]),
                                                    "check could not be evaluated on this file's rows")
                valid = current[columns].iloc[0:0]
                break
            for case in indexed.itertuples():
                line = int(case.index)
                if line not in rejected:
                    rule = _rule(case.column, case.check)
                    rejected[line] = Rejection(line, rule, f"column {case.column} fails {case.check}")
            current = current.drop(index=[i for i in current.index if int(i) in rejected])
    for key in schema.unique:
        duplicated = valid[key].duplicated(keep="first")
        for line in valid.index[duplicated]:
            rejected[int(line)] = Rejection(int(line), f"{key}.unique", f"{key} repeats an earlier row")
        valid = valid[~duplicated]
    parsed.rejections.extend(rejected.values())
    parsed.rejections.sort(key=lambda r: r.line)
    valid = valid.copy()
    valid["source_line"] = valid.index.astype("int64")
    return valid.reset_index(drop=True)
