"""A dbt build writes no manifest of its own: the night's manifest is the prepared one (``dbt_setup``).

``dbt build``, ``run`` and ``test`` each write the whole manifest as JSON into their target folder twice (after
loading the partial-parse file, and again when the nodes have run), with the semantic manifest and the pickled graph
(``graph.gpickle``) beside it: about 0.6 s of the dbt process on the demo night, before and after its nodes run, while
nothing reads them. dagster-dbt and the pipeline read the manifest that ``prepare`` wrote
(``dbt_project/target/manifest.json``) and, from the build's folder, ``run_results.json`` alone, which is still
written, as are the partial-parse file and the graph's summary. ``dbt parse``, ``compile``, ``docs generate`` and
every other command are left as they are.
"""

from __future__ import annotations

BUILDING_COMMANDS = frozenset({"build", "run", "test"})


def write_no_build_manifest() -> None:
    """Patch dbt in this process (before dbt runs): a build, run or test writes no manifest or graph file."""
    from dbt.compilation import Compiler
    from dbt.flags import get_flags
    from dbt.parser import manifest as dbt_manifest
    from dbt.task import runnable

    writes, graph_writes = dbt_manifest.write_manifest, Compiler.write_graph_file

    def building() -> bool:
        return getattr(get_flags(), "WHICH", None) in BUILDING_COMMANDS

    def write_manifest(manifest, target_path, which=None) -> None:
        if not building():
            writes(manifest, target_path, which)

    def write_graph_file(self, linker, manifest) -> None:
        if not building():
            graph_writes(self, linker, manifest)

    write_manifest.skipped_in_builds = write_graph_file.skipped_in_builds = True
    if not getattr(writes, "skipped_in_builds", False):
        dbt_manifest.write_manifest = write_manifest
        runnable.write_manifest = write_manifest  # imported there by name
    if not getattr(graph_writes, "skipped_in_builds", False):
        Compiler.write_graph_file = write_graph_file
