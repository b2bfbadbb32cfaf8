"""``cost-pipeline docs --site``: the dbt docs site as one HTML file that works offline (issue 11), with the marts'
column descriptions and the warehouse's column types, and nothing fetched from elsewhere."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import cost_pipeline
from cost_pipeline.cli import main
from cost_pipeline.dbt_setup import dbt_project

# An element that would load something from the network when the page opens.
EXTERNAL = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def test_the_docs_site_is_one_offline_file_with_the_catalog(demo_run, tmp_path, capsys):
    assert demo_run.succeeded
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    out = tmp_path / "site" / "cost_pipeline_docs.html"
    assert main(["docs", "--site", str(out), "--warehouse", str(warehouse)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    assert not EXTERNAL.findall(html)
    assert '"send_anonymous_usage_stats": false' in html  # the page sends nothing either
    assert '"model.cost_pipeline.fct_batch_costs"' in html  # the manifest, inside
    # the catalog, inside: each relation's columns with the warehouse's types
    assert '"inventory_cost": {"type": "DECIMAL(18,2)"' in html
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # nothing left beside it


def test_the_docs_site_needs_a_warehouse(capsys, tmp_path):
    assert main(["docs", "--site", str(tmp_path / "site.html")]) == 2
    assert "needs --warehouse" in capsys.readouterr().err
    assert main(["docs", "--site", str(tmp_path / "site.html"), "--warehouse", str(tmp_path / "none.duckdb")]) == 5


def test_exposures_cover_every_mart_finance_the_statement_and_the_journal_read():
    """Each reader is an exposure naming the marts it reads: the statement, the journal and the FOCUS export by the
    marts their code queries, and the published finance file by every mart."""
    manifest = json.loads(dbt_project.manifest_path.read_text())
    exposures = {
        e["name"]: {n.split(".")[-1] for n in e["depends_on"]["nodes"]} for e in manifest["exposures"].values()
    }
    marts = {
        n["name"]
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model" and n["config"]["schema"] == "marts"
    }
    package = Path(cost_pipeline.__file__).parent
    for exposure, module in [
        ("batch_statement", "statement.py"),
        ("gl_journal", "journal.py"),
        ("focus_export", "focus_export.py"),
    ]:
        read = set(re.findall(r"\bmarts\.([a-z_]+)", (package / module).read_text(encoding="utf-8"))) & marts
        assert read and read <= exposures[exposure], (exposure, sorted(read - exposures[exposure]))
    assert exposures["published_finance_file"] == marts
