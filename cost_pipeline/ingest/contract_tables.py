"""The contract's enumerations and parameters, loaded into the warehouse for dbt's tests and joins."""

from __future__ import annotations

import duckdb
import pandas as pd

from cost_pipeline.contract import available_versions, load_contract

# The raw tables this writes, with their descriptions (the asset's and the dbt source's).
TABLES = {
    "contract_enumerations": "Every enumeration of every shipped contract version (R3).",
    "contract_parameters": "Numeric parameters of every contract version (the utilization-tier rule).",
}
ENUMERATION_COLUMNS = (
    "contract_version",
    "enumeration",
    "code",
    "category",
    "is_rerun",
    "is_same_cause",
    "lower_bound",
    "upper_bound",
    "description",
)


def load_contract_tables(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Replace raw.contract_enumerations and raw.contract_parameters with every shipped version."""
    contracts = [load_contract(v) for v in available_versions()]
    enumerations = pd.DataFrame([r for c in contracts for r in c.enumeration_rows()], columns=ENUMERATION_COLUMNS)
    parameters = pd.DataFrame(
        [r for c in contracts for r in c.parameter_rows()], columns=["contract_version", "name", "value"]
    )
    con.execute("begin transaction")
    try:
        con.register("incoming_enumerations", enumerations)
        con.register("incoming_parameters", parameters)
        con.execute("""
            create or replace table raw.contract_enumerations as
            select cast(contract_version as varchar) as contract_version, cast(enumeration as varchar) as enumeration,
                   cast(code as varchar) as code, cast(category as varchar) as category,
                   cast(is_rerun as boolean) as is_rerun, cast(is_same_cause as boolean) as is_same_cause,
                   cast(lower_bound as double) as lower_bound, cast(upper_bound as double) as upper_bound,
                   cast(description as varchar) as description
            from incoming_enumerations""")
        con.execute("""
            create or replace table raw.contract_parameters as
            select cast(contract_version as varchar) as contract_version, cast(name as varchar) as name,
                   cast(value as double) as value
            from incoming_parameters""")
        con.unregister("incoming_enumerations")
        con.unregister("incoming_parameters")
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return {"enumerations": len(enumerations), "parameters": len(parameters)}
