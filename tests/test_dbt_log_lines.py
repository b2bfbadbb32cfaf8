"""dbt's loggers build a line only when they write it (cost_pipeline.dbt_log_lines): the same lines as dbt's own
loggers write, at every level and format, and none built for an event below the logger's level; dbt's event manager
builds no message for an event no logger writes and no callback reads."""

from __future__ import annotations

import io
import json
from datetime import datetime

import pytest
from dbt_common.events import event_manager as dbt_events
from dbt_common.events import logger as dbt_logger
from dbt_common.events.base_types import EventLevel, msg_from_base_event
from dbt_common.events.types import Note, PrintEvent

from cost_pipeline.dbt_log_lines import build_only_written_lines

EVENTS = [
    (Note(msg="a debug note"), EventLevel.DEBUG),
    (Note(msg="an info note"), EventLevel.INFO),
    (Note(msg="a test-level note"), EventLevel.TEST),
    (Note(msg="a warning"), EventLevel.WARN),
    (Note(msg="an error"), EventLevel.ERROR),
    (PrintEvent(msg="printed whatever the level"), None),
]


class _Frozen(datetime):
    """The clock of dbt's text lines, stopped: a second passing between two runs changes no line."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 12, 5, 6, 0, 0, tzinfo=tz)


def _written(level: EventLevel, line_format: dbt_logger.LineFormat) -> tuple[list[str], int]:
    """What a dbt logger at ``level`` writes for EVENTS (their times fixed), and how many lines it built."""
    stream = io.StringIO()
    config = dbt_logger.LoggerConfig(name=f"test_{level}_{line_format}", level=level, line_format=line_format)
    config.output_stream = stream
    json = line_format == dbt_logger.LineFormat.Json
    logger = dbt_logger._JsonLogger(config) if json else dbt_logger._TextLogger(config)
    built = 0
    create_line = logger.create_line

    def counted(msg):
        nonlocal built
        built += 1
        return create_line(msg)

    logger.create_line = counted
    for event, event_level in EVENTS:
        msg = msg_from_base_event(event, level=event_level)
        msg.info.ts.FromSeconds(0)
        logger.write_line(msg)
    return stream.getvalue().splitlines(), built


@pytest.mark.parametrize("line_format", list(dbt_logger.LineFormat))
def test_a_logger_writes_the_same_lines_and_builds_only_those(monkeypatch: pytest.MonkeyPatch, line_format) -> None:
    monkeypatch.setattr(dbt_logger, "datetime", _Frozen)
    levels = [EventLevel.DEBUG, EventLevel.INFO, EventLevel.WARN, EventLevel.ERROR]
    dbts = {level: _written(level, line_format) for level in levels}
    monkeypatch.setattr(dbt_logger._Logger, "write_line", dbt_logger._Logger.write_line)  # undone after the test
    monkeypatch.setattr(dbt_events.EventManager, "fire_event", dbt_events.EventManager.fire_event)
    build_only_written_lines()
    build_only_written_lines()  # a second call changes nothing
    ours = {level: _written(level, line_format) for level in levels}
    for level in levels:
        (dbt_lines, dbt_built), (lines, built) = dbts[level], ours[level]
        assert lines == dbt_lines and dbt_built == len(EVENTS)
        assert built == len(lines)  # one line built for each line written
    assert [len(ours[level][0]) for level in levels] == [6, 4, 3, 2]  # the print event at every level


def _fired(level: EventLevel, callbacks: list, built: list) -> list[str]:
    """The messages an event manager with one JSON logger at ``level`` and ``callbacks`` writes for EVENTS (each
    message the manager builds is appended to ``built``)."""
    stream = io.StringIO()
    manager = dbt_events.EventManager()
    config = dbt_logger.LoggerConfig(name=f"test_manager_{level}", level=level, line_format=dbt_logger.LineFormat.Json)
    config.output_stream = stream
    manager.add_logger(config)
    for callback in callbacks:
        manager.add_callback(callback)
    for event, event_level in EVENTS:
        manager.fire_event(event, level=event_level)
    return [json.loads(line)["info"]["msg"] for line in stream.getvalue().splitlines()]


def test_the_event_manager_builds_a_message_only_for_a_logger_or_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt.tracking import track_behavior_change_warn

    built: list[str] = []

    def counted(event, level=None):
        built.append(event.message())
        return msg_from_base_event(event, level=level)

    monkeypatch.setattr(dbt_events, "msg_from_base_event", counted)
    monkeypatch.setattr(dbt_logger._Logger, "write_line", dbt_logger._Logger.write_line)  # undone after the test
    monkeypatch.setattr(dbt_events.EventManager, "fire_event", dbt_events.EventManager.fire_event)
    levels = [EventLevel.DEBUG, EventLevel.INFO, EventLevel.ERROR]
    dbts = {level: _fired(level, [track_behavior_change_warn], built) for level in levels}
    assert len(built) == len(EVENTS) * len(levels)
    build_only_written_lines()
    ours = {}
    for level in levels:
        built.clear()
        ours[level] = (_fired(level, [track_behavior_change_warn], built), len(built))
    assert {level: lines for level, (lines, _) in ours.items()} == dbts
    # every message written is built, and warnings and errors always are (dbt may raise on a warning)
    assert [count for _, count in ours.values()] == [6, 4, 3]
    read: list = []
    built.clear()
    _fired(EventLevel.ERROR, [read.append], built)
    assert len(read) == len(built) == len(EVENTS), "a callback of another kind reads every event"


def test_an_event_dbt_must_handle_as_a_warning_or_error_still_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever its level, an event fired with ``force_warn_or_error_handling`` is dbt's to raise (warn_error)."""
    from dbt_common.exceptions.events import EventCompilationError

    monkeypatch.setattr(dbt_logger._Logger, "write_line", dbt_logger._Logger.write_line)  # undone after the test
    monkeypatch.setattr(dbt_events.EventManager, "fire_event", dbt_events.EventManager.fire_event)
    build_only_written_lines()
    manager = dbt_events.EventManager()
    manager.warn_error = True
    with pytest.raises(EventCompilationError, match="a debug note"):
        manager.fire_event(Note(msg="a debug note"), level=EventLevel.DEBUG, force_warn_or_error_handling=True)


def test_each_patch_is_applied_once_whatever_the_other_s_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logger's patch and the event manager's each have their own guard: one already applied does not keep the
    other out, and a second call wraps neither again."""
    monkeypatch.setattr(dbt_logger._Logger, "write_line", dbt_logger._Logger.write_line)  # undone after the test
    monkeypatch.setattr(dbt_events.EventManager, "fire_event", dbt_events.EventManager.fire_event)
    dbt_fires = dbt_events.EventManager.fire_event
    build_only_written_lines()
    patched = dbt_logger._Logger.write_line, dbt_events.EventManager.fire_event
    assert patched[1] is not dbt_fires
    monkeypatch.setattr(dbt_events.EventManager, "fire_event", dbt_fires)  # the manager's patch undone alone
    build_only_written_lines()
    assert dbt_logger._Logger.write_line is patched[0]
    assert getattr(dbt_events.EventManager.fire_event, "builds_only_read_messages", False)
    again = dbt_events.EventManager.fire_event
    build_only_written_lines()
    assert (dbt_logger._Logger.write_line, dbt_events.EventManager.fire_event) == (patched[0], again)
