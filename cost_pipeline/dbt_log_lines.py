"""dbt's log lines, built only for a logger that writes them.

dbt fires an event for every SQL statement, connection and cache action of a build, most of them at debug level.
Each of its loggers (standard output, JSON for Dagster; the log file beside the build's artifacts) builds every
event's line first (the event as JSON through protobuf, each environment variable scanned for secrets to scrub, then
``json.dumps``) and only then hands it to Python's logging, which drops it below the logger's level
(``dbt_common.events.logger._Logger.write_line``). On the demo night 17 % of the dbt process's profile samples were
in firing events; skipping the dropped lines took a demo ``dbt build`` from 22.0 s to 18.4 s of CPU
(docs/benchmarks.md). ``build_only_written_lines`` makes a logger skip an event its Python logger would drop: the same
lines are written, in the same order; dbt's print events go out as errors, as dbt sends them. The one thing a dropped
line no longer does: if protobuf could not turn its event into JSON, dbt's JSON logger fired a warning about it.

Before any logger sees it, dbt's event manager turns every event into its message (``msg_from_base_event``: the event
and its metadata through protobuf's ``ParseDict``), about 6 % of the dbt process's samples on the demo night. The
manager then skips that too for an event no logger writes and no callback reads (dbt's only callback in a command-line
run, ``track_behavior_change_warn``, reads its behaviour-change events alone); warnings and errors are always built,
since dbt may turn a warning into an error.
"""

from __future__ import annotations

import os


def build_only_written_lines() -> None:
    """Patch dbt's loggers in this process (before dbt runs): a line below its logger's level is not built."""
    from dbt_common.events import event_manager as dbt_events
    from dbt_common.events import logger as dbt_logger

    # dbt's own map of its levels to Python's ("test" is debug)
    python_levels = {level.value: number for level, number in dbt_logger._log_level_map.items()}
    writes, fires = dbt_logger._Logger.write_line, dbt_events.EventManager.fire_event

    def logs(python_logger, level: str) -> bool:
        """A Python logger keeps a line at dbt's ``level`` (a level dbt does not map, it is left to decide)."""
        number = python_levels.get(level)
        return number is None or (python_logger is not None and python_logger.isEnabledFor(number))

    def write_line(self, msg) -> None:
        if logs(self._python_logger, "error" if dbt_logger._is_print_event(msg) else msg.info.level):
            writes(self, msg)  # else dbt would build the line, then drop it

    write_line.builds_only_written_lines = True
    if not getattr(writes, "builds_only_written_lines", False):
        dbt_logger._Logger.write_line = write_line

    def written(manager, level: str) -> bool:
        """A logger of ``manager`` writes a line at ``level``."""
        return level not in python_levels or any(logs(logger._python_logger, level) for logger in manager.loggers)

    def read(manager, event) -> bool:
        """A callback of ``manager`` may read ``event``."""
        return any(
            not (
                getattr(callback, "__module__", None) == "dbt.tracking"
                and getattr(callback, "__name__", None) == "track_behavior_change_warn"
                and type(event).__name__ != "BehaviorChangeEvent"
            )
            for callback in manager.callbacks
        )

    def fire_event(self, e, level=None, node=None, force_warn_or_error_handling=False) -> None:
        tag = (level or e.level_tag()).value
        kept = (
            force_warn_or_error_handling
            or tag in ("warn", "error")
            or os.environ.get("DBT_TEST_BINARY_SERIALIZATION")
            or written(self, "error" if type(e).__name__ in dbt_logger.PRINT_EVENT_NAMES else tag)
            or read(self, e)
        )
        if kept:
            fires(self, e, level, node, force_warn_or_error_handling)

    fire_event.builds_only_read_messages = True
    if not getattr(fires, "builds_only_read_messages", False):
        dbt_events.EventManager.fire_event = fire_event
