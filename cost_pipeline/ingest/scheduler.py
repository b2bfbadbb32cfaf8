"""The scheduler (I1): Slurm ``sacct --parsable2`` output as real clusters write it, and Kubernetes-style job events.

The field parsers are pure functions, no I/O: each turns one messy sacct field into a typed value or raises
``FieldError`` with the contract rule it broke, so the caller can quarantine the row. Kubernetes job events map
their labels and states onto the same columns. Both sources are declared at the end (``SOURCES``).

sacct prints Submit, Start and End in the local time of the machine that runs it (its ``TZ``), without a zone
unless ``SLURM_TIME_FORMAT`` asks for one (``%z``; such a time keeps its offset). The source's ``time_zone`` option
names that zone (an IANA name, UTC by default, as ``TZ=UTC sacct`` writes) and every time is converted to UTC with
it: read as UTC, a cluster on Asia/Shanghai would put its jobs eight hours after the device samples that measured
them. Across a daylight-saving change a local time can be skipped (quarantined) or repeated (resolved by the row's
own Elapsed, else quarantined); never guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import product
from typing import NamedTuple
from zoneinfo import ZoneInfo, available_timezones

from cost_pipeline.contract import MIG_PROFILE_PATTERN, schemas
from cost_pipeline.ingest.lib.records import FileRejected, ParsedFile, Rejection, jsonl_line_parser
from cost_pipeline.ingest.lib.source import LineParser, RowLoader, Source
from cost_pipeline.ingest.lib.timestamps import from_iso
from cost_pipeline.night_clock import AFTER_NIGHT, CLOCK_SKEW, latest_instant

SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "Account",
    "Partition",
    "User",
    "WCKey",
    "State",
    "ExitCode",
    "DerivedExitCode",
    "Reason",
    "FailedNode",
    "Restarts",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "Timelimit",
    "NNodes",
    "NodeList",
    "ReqTRES",
    "AllocTRES",
    "Comment",
    "AdminComment",
)
REQUIRED_FIELDS: tuple[str, ...] = ("JobID", "State", "Start", "End", "AllocTRES", "Timelimit")
# ReqTRES is optional (issue 10): an export without it (NordicHPC/sonar asks sacct for none) loads, and the GPUs its
# jobs requested are unknown, null in every requested column: never 0, never the allocated ones copied. A ReqTRES
# field that is there and names no GPU is 0 GPUs requested, as sacct says.
# sacct's raw twins of a duration field, each a bare number of its unit in seconds (TimelimitRaw minutes, ElapsedRaw
# seconds): an export may name either field of a pair (NordicHPC/sonar asks for the raw ones); the formatted one is
# read when it has both.
RAW_DURATION_FIELDS: dict[str, tuple[str, int]] = {"Timelimit": ("TimelimitRaw", 60), "Elapsed": ("ElapsedRaw", 1)}
LABEL_KEYS: tuple[str, ...] = ("batch", "phase", "reason", "restart_of", "continues", "end_reason")

_NO_TIME = {"", "none", "unknown", "n/a"}
_NO_LIMIT = {"unlimited", "partition_limit", "invalid", "none", ""}
# Patterns are ASCII: ``\d`` would also take other scripts' digits (``int`` reads some of them, not others).
_DURATION = re.compile(r"^(?:(?P<days>\d+)-)?(?P<rest>\d+(?::\d+){0,2})(?:\.\d+)?$", re.ASCII)
# A pending array's tasks as sacct writes them (Slurm's xlate_array_task_str, src/common/slurm_protocol_defs.c): numbers
# and ranges separated by commas, or one range with a step when the tasks are evenly spaced (`5908801_[1-99:2]`: more
# than five tasks, more than ten apart, the first two not adjacent), then its `%` limit of tasks run at once
# (`5908801_[1,3,5-7%2]`); staging expands them (stg_scheduler__sacct_jobs), so nothing else is a JobID. A list longer
# than SLURM_BITSTR_LEN (64 characters unless set) is cut and ends in `...`: its tasks are not known.
_ARRAY_RANGE = r"\d+(?:-\d+(?::\d+)?)?"
_ARRAY_TASKS = rf"\[{_ARRAY_RANGE}(?:,{_ARRAY_RANGE})*(?:%\d+)?\]"
_ARRAY_CUT = re.compile(r"^\d+_\[[\d,:-]*\.\.\.(?:%\d+)?\](?:\.[A-Za-z0-9_-]+)?$", re.ASCII)
_ARRAY_BOUNDS = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?", re.ASCII)
MAX_ARRAY_TASK_ID = 4_000_000  # Slurm's MaxArraySize is at most 4,000,001: task ids 0 to 4,000,000
_JOB_ID = re.compile(
    rf"^(?P<base>\d+(?:_(?:\d+|{_ARRAY_TASKS}))?(?:\+\d+)?)(?:\.(?P<step>[A-Za-z0-9_-]+))?$",
    re.ASCII,
)
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)", re.ASCII)
_TYPED_GPU_TRES = re.compile(r"(?:^|,)gres/gpu:([^=,]+)=(\d+)(?=,|$)", re.ASCII)
# Slurm's GPU sharding (gres/shard, docs/fractional_gpus.md): a job holding shards holds that share of a GPU.
_SHARD_TRES = re.compile(r"(?:^|,)gres/shard=(\d+)(?=,|$)", re.ASCII)
_TYPED_SHARD_TRES = re.compile(r"(?:^|,)gres/shard:[^=,]+=(\d+)(?=,|$)", re.ASCII)
# A MIG instance's GRES type ends in its profile (docs/fractional_gpus.md): 1g.10gb, nvidia_h100_80gb_hbm3_4g.40gb,
# a100_3g.20gb+me; the number before "g." is its compute slices.
_MIG_PROFILE = re.compile(rf"(?:^|[_.:-])(?P<profile>{MIG_PROFILE_PATTERN})$", re.ASCII | re.IGNORECASE)
# CUDA MPS shares (gres/mps): a share of a GPU in units gres.conf sets (commonly 100 a GPU).
_MPS_TRES = re.compile(r"(?:^|,)gres/mps=(\d+)(?=,|$)", re.ASCII)
_TYPED_MPS_TRES = re.compile(r"(?:^|,)gres/mps:[^=,]+=(\d+)(?=,|$)", re.ASCII)
# Every GPU, shard and MPS entry, typed or not, with whatever stands after its "=": the patterns above only see
# digits, so without this a gres/gpu=-8 or gres/gpu=x8 would be no entry, silently 0 GPUs.
_GPU_TRES_ENTRY = re.compile(r"(?:^|,)gres/(?:gpu|shard|mps)(?::[^=,]*)?=(?P<count>[^,]*)", re.ASCII)
_MAX_DIGITS = 18  # any count or duration in sacct fits; more digits is a corrupt field, not a number


class FieldError(ValueError):
    """A field broke a parsing rule; ``rule`` names it for the quarantine."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


def _number(digits: str, rule: str, message: str) -> int:
    """ASCII digits as an int; more than ``_MAX_DIGITS`` of them break ``rule``."""
    if len(digits) > _MAX_DIGITS:
        raise FieldError(rule, message)
    return int(digits)


def parse_count(text: str, field: str) -> int | None:
    """A whole number such as ``Restarts`` or ``NNodes``; anything that is not ASCII digits gives ``None``."""
    value = text.strip()
    if not (value.isascii() and value.isdigit()):
        return None
    return _number(
        value, f"{field.lower()}_count", f"{field} should be a whole number such as 3, not one of more than 18 digits"
    )


# The raw column of each sacct time, which names its rules. In this order a row reports the first that is wrong.
# Eligible (when the job could first start: after its dependencies, --begin time and holds) is optional: Unknown or
# absent is null, and the job's queue then starts at Submit.
TIME_COLUMNS = {"Start": "start_at", "End": "end_at", "Submit": "submit_at", "Eligible": "eligible_at"}


def local_instants(text: str, field: str, zone: tzinfo = UTC) -> tuple[datetime, ...]:
    """The instants (UTC, naive) a sacct time written in ``zone`` can be: none when not (yet) known, else one; two,
    the earlier first, for a time in the hour a daylight-saving change repeats (the wall clock showed it twice).

    A time that carries an offset or ``Z`` is that instant whatever the zone. A time the change skips (no clock in
    the zone showed it) raises ``FieldError`` ``<column>.time_zone``: the file is not in that zone, or was edited.
    """
    value = text.strip()
    if value.lower() in _NO_TIME:
        return ()
    try:
        parsed = from_iso(value)  # the ISO text every source reads as a time
        if parsed.tzinfo is not None:
            return (parsed.astimezone(UTC).replace(tzinfo=None),)
        earlier, later = (parsed.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    except (ValueError, OverflowError):  # OverflowError: an offset that moves year 1 or 9999 off the calendar
        raise FieldError(
            f"{field.lower()}_timestamp",
            f"{field} should be a date-time as sacct writes it, such as 2026-11-30T14:05:00 (in the source's "
            "time_zone, UTC unless set, or with an offset such as 2026-11-30T15:05:00+01:00), or Unknown/None when "
            "not known",
        ) from None
    if earlier.astimezone(zone).replace(tzinfo=None) != parsed:
        raise FieldError(
            f"{TIME_COLUMNS.get(field, field.lower())}.time_zone",
            f"{field} should be a time the clocks showed in the source's time_zone ({zone}); it is in the hour they "
            "skip when daylight saving starts, so the export is in another zone (set time_zone to the TZ sacct ran "
            "in) or was edited",
        )
    return tuple(dict.fromkeys(instant.replace(tzinfo=None) for instant in sorted((earlier, later))))


def lacking_fields(names: Collection[str]) -> list[str]:
    """The ``REQUIRED_FIELDS`` that ``names`` has neither as themselves nor as their raw twin (TimelimitRaw)."""
    return [f for f in REQUIRED_FIELDS if f not in names and RAW_DURATION_FIELDS.get(f, ("", 0))[0] not in names]


def duration_field(fields: dict[str, str], field: str) -> int | None:
    """``field`` (Timelimit, Elapsed) of a row in seconds, read from its raw twin when the export has only that:
    ``TimelimitRaw`` is whole minutes and ``ElapsedRaw`` whole seconds, ``UNLIMITED`` and ``Partition_Limit`` (or
    blank, as on a step) giving ``None`` as the formatted field does. A field the export lacks is ``None``."""
    raw, unit = RAW_DURATION_FIELDS[field]
    if field in fields or raw not in fields:
        return parse_duration(fields.get(field, ""), field)
    value = fields[raw].strip()
    if value.lower() in _NO_LIMIT:
        return None
    rule, message = (
        f"{field.lower()}_duration",
        f"{raw} should be a whole number (of {'minutes' if unit == 60 else 'seconds'}) such as 1440, or UNLIMITED",
    )
    if not (value.isascii() and value.isdigit()):
        raise FieldError(rule, message)
    return _number(value, rule, message) * unit


def parse_duration(text: str, field: str) -> int | None:
    """Slurm durations: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; seconds.

    ``UNLIMITED`` and ``Partition_Limit`` have no length and give ``None``.
    """
    value = text.strip()
    if value.lower() in _NO_LIMIT:
        return None
    match = _DURATION.match(value)
    rule = f"{field.lower()}_duration"
    message = (
        f"{field} should be a Slurm duration such as 1-04:33:44 (days-hours:minutes:seconds), 04:00:00 or 30 "
        "(minutes), or UNLIMITED"
    )
    if not match:
        raise FieldError(rule, message)
    parts = [_number(p, rule, message) for p in match.group("rest").split(":")]
    days = match.group("days")
    if days is not None:
        # After "D-" the fields are hours[:minutes[:seconds]].
        parts += [0] * (3 - len(parts))
        hours, minutes, seconds = parts
        return ((_number(days, rule, message) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    hours, minutes, seconds = parts
    return (hours * 60 + minutes) * 60 + seconds


_TRES_COUNT = (
    "tres_gpus",
    "a TRES GPU count (gres/gpu, gres/shard or gres/mps, typed or not, in ReqTRES or AllocTRES) should be a whole "
    "number of at most 18 digits such as gres/gpu=8, not signed, empty or text",
)


def _counted(value: str, untyped: re.Pattern[str], typed: re.Pattern[str]) -> int:
    """A TRES count: the untyped entry's, else the sum of the typed ones (sacct writes both for one GRES)."""
    found = untyped.search(value)
    if found:
        return _number(found.group(1), *_TRES_COUNT)
    return sum(_number(n, *_TRES_COUNT) for n in typed.findall(value))


class TresGpus(NamedTuple):
    """The GPUs of a TRES string: devices (whole GPUs and MIG instances), and of them the MIG instances, their
    compute slices and the profile of the first (which names the GPU model's slice count); GPU shards and CUDA MPS
    shares."""

    gpus: int
    mig_instances: int = 0
    mig_slices: int = 0
    mig_profile: str | None = None
    shards: int = 0
    mig_gpu_type: str | None = None  # the first instance's type before its profile (nvidia_a30): the GPU model
    mps: int = 0


def parse_tres_gpus(text: str) -> TresGpus:
    """GPUs in a TRES string. Untyped ``gres/gpu=N`` counts the devices; else the sum of typed ``gres/gpu:type=N``.

    A typed entry whose type ends in a MIG profile (``gres/gpu:1g.10gb=1``, ``gres/gpu:nvidia_a100_3g.40gb=2``) holds
    MIG instances: so many devices, each only its profile's compute slices of a GPU. ``gres/shard=N`` (untyped, else
    the sum of typed ``gres/shard:type=N``) counts the GPU shards the job holds, ``gres/mps=N`` its CUDA MPS shares.
    Any such count that is not plain ASCII digits (``gres/gpu=-8``, ``gres/gpu=``, ``gres/gpu:a100=x``) raises
    ``FieldError`` ``tres_gpus``: the row is quarantined, never read as 0 GPUs.
    """
    value = text.strip()
    for entry in _GPU_TRES_ENTRY.finditer(value):
        count = entry.group("count")
        if not (count.isascii() and count.isdigit()):
            raise FieldError(*_TRES_COUNT)
    typed = [(gpu_type, _number(n, *_TRES_COUNT)) for gpu_type, n in _TYPED_GPU_TRES.findall(value)]
    instances = slices = 0
    profile = model = None
    for gpu_type, count in typed:
        mig = _MIG_PROFILE.search(gpu_type)
        if mig:
            instances += count
            slices += count * int(mig.group("slices"))
            if profile is None:
                profile = mig.group("profile").lower()
                model = gpu_type[: mig.start("profile")].rstrip("_.:-").lower() or None
    untyped = _GPU_TRES.search(value)
    gpus = _number(untyped.group(1), *_TRES_COUNT) if untyped else sum(count for _, count in typed)
    if instances > gpus:
        raise FieldError(
            "tres_gpus_mig",
            f"a TRES string should count its MIG instances among its GPUs: gres/gpu={gpus} but the typed entries "
            f"name {instances} MIG instances",
        )
    shards, mps = _counted(value, _SHARD_TRES, _TYPED_SHARD_TRES), _counted(value, _MPS_TRES, _TYPED_MPS_TRES)
    return TresGpus(gpus, instances, slices, profile, shards, model, mps)


def parse_state(text: str) -> tuple[str, str | None]:
    """``CANCELLED by 10304007`` -> (``CANCELLED``, ``10304007``); ``COMPLETED`` -> (``COMPLETED``, None)."""
    words = text.strip().split()
    if not words:
        raise FieldError(
            "state_present", "State should be a Slurm job state such as COMPLETED or CANCELLED by 1234, not empty"
        )
    state = words[0].upper().rstrip("+")
    cancelled_by = words[2] if len(words) >= 3 and words[1].lower() == "by" else None
    return state, cancelled_by


def parse_job_id(text: str) -> tuple[str, str, str | None]:
    """Split a JobID into (record_type, allocation id, step name).

    ``1234`` and ``5908801_3`` are allocations; ``1234.batch``, ``1234.extern`` and ``1234.0`` are steps of
    allocation ``1234``.
    """
    match = _JOB_ID.match(text.strip())
    if not match:
        if _ARRAY_CUT.match(text.strip()):
            raise FieldError(
                "job_id_array_cut",
                "JobID is a pending array whose task list sacct cut at SLURM_BITSTR_LEN characters (it ends in ...): "
                "its tasks are not known; export with SLURM_BITSTR_LEN=0 (the whole list) or sacct --json",
            )
        raise FieldError(
            "job_id_format",
            "JobID should be a Slurm job id such as 1234, 5908801_3 (an array task) or 1234.batch (a step)",
        )
    if "[" in match.group("base"):
        _check_array_tasks(match.group("base"))
    step = match.group("step")
    return ("step" if step else "allocation"), match.group("base"), step


def _check_array_tasks(job_id: str) -> None:
    """A pending array's task list names tasks as Slurm would: each range ascending, a step of at least 1, no task id
    above Slurm's largest (staging expands every range; a range sacct never writes would count no task, or millions)."""
    tasks = job_id[job_id.index("[") + 1 : job_id.index("]")].split("%")[0]
    for bounds in tasks.split(","):
        low, high, step = _ARRAY_BOUNDS.fullmatch(bounds).groups()
        if int(high or low) < int(low) or (step is not None and int(step) < 1) or int(high or low) > MAX_ARRAY_TASK_ID:
            raise FieldError(
                "job_id_array_tasks",
                f"JobID's pending array tasks should be ascending ranges of task ids up to {MAX_ARRAY_TASK_ID:,} with "
                f"a step of at least 1, as sacct writes them: 5908801_[1,3,5-7%2] or 5908801_[1-99:2], not {bounds}",
            )


def parse_labels(*texts: str) -> dict[str, str]:
    """``key=value`` pairs separated by ``;`` (or ``,``) from Comment, then WCKey for keys still missing."""
    labels: dict[str, str] = {}
    for text in texts:
        for pair in re.split(r"[;,]", text or ""):
            key, sep, value = pair.partition("=")
            key = key.strip().lstrip("*").lower()
            if sep and key in LABEL_KEYS and value.strip() and key not in labels:
                labels[key] = value.strip()
    return labels


def split_sacct_lines(
    lines: Sequence[str], delimiter: str = "|", fields: Sequence[str] | None = None
) -> Iterator[tuple[int, dict[str, str] | None, str]]:
    """Yield (line number, fields by name or None when the field count is wrong, raw line).

    With ``fields=None`` the first line is the header. ``--parsable`` (not ``2``) ends each line with the
    delimiter; that trailing empty field is dropped. When the header shows the file is ``--parsable2`` (no
    trailing delimiter), a line with one field too many is not read that way: it is a value holding the
    delimiter, and taking it would shift every later field (``Comment`` would lose what follows the ``|``).
    """
    start = 1
    trailing = True  # header-less files: either style is accepted
    if fields is None:
        if not lines:
            return
        header = lines[0].rstrip("\r\n").split(delimiter)
        trailing = bool(header) and header[-1] == ""
        if trailing:
            header = header[:-1]
        fields = header
        start = 2
    for offset, raw in enumerate(lines[start - 1 :] if start == 2 else lines):
        line_no = offset + start
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        values = text.split(delimiter)
        if trailing and len(values) == len(fields) + 1 and values[-1] == "":
            values = values[:-1]
        yield line_no, (dict(zip(fields, values, strict=True)) if len(values) == len(fields) else None), text


def unexplained_seconds(
    start: datetime | None, end: datetime | None, elapsed: int | None, suspended: int | None
) -> float | None:
    """End - Start less Elapsed and the time suspended (0 when the export has no ``Suspended``), in seconds; None
    when it cannot be told (a job not started or not ended, or no Elapsed).

    Slurm's accounting computes Elapsed as End - Start less the seconds the job was suspended and prints all three
    from the same instants, so a row agrees with itself to the second.
    """
    if start is None or end is None or elapsed is None:
        return None
    return (end - start).total_seconds() - elapsed - (suspended or 0)


def resolved_times(
    fields: dict[str, str], zone: tzinfo = UTC, elapsed: int | None = None, suspended: int | None = None
) -> dict[str, datetime | None]:
    """Start, End, Submit and Eligible of a row as UTC instants, read in ``zone``.

    A time in the hour a daylight-saving change repeats is one of two instants: it is the one with which the row
    agrees with itself, End - Start being Elapsed (and Suspended) to the second, Start no later than End, and Submit
    and Eligible no later than Start. When that leaves no instant, or more than one, the row is quarantined (rule
    ``<column>.time_zone_ambiguous``): an hour off either way would move the job away from its device samples.
    """
    instants = {field: local_instants(fields.get(field, ""), field, zone) or (None,) for field in TIME_COLUMNS}
    rows = [dict(zip(TIME_COLUMNS, chosen, strict=True)) for chosen in product(*instants.values())]
    if len(rows) == 1:
        return rows[0]

    def agrees(row: dict[str, datetime | None]) -> bool:
        start, end = row["Start"], row["End"]
        if start is not None and end is not None and end < start:
            return False
        if start is not None and any(row[f] is not None and row[f] > start for f in ("Submit", "Eligible")):
            return False
        unexplained = unexplained_seconds(start, end, elapsed, suspended)
        return unexplained is None or abs(unexplained) <= 1

    agreeing = [row for row in rows if agrees(row)]
    if len(agreeing) == 1:
        return agreeing[0]
    field = next(f for f in TIME_COLUMNS if len({row[f] for row in agreeing or rows}) > 1)
    raise FieldError(
        f"{TIME_COLUMNS[field]}.time_zone_ambiguous",
        f"{field} is in the hour the clocks of the source's time_zone ({zone}) show twice when daylight saving "
        "ends, and the row does not tell which (End - Start should be Elapsed for one of them only); sacct run "
        "with TZ=UTC writes times that are never ambiguous",
    )


def _not_after_night(times: dict[str, datetime | None], elapsed: int | None, latest: datetime) -> None:
    """``FieldError`` ``<column>.after_night`` for a Start, End, Submit or Eligible after ``latest`` (the night's
    clock and its skew, ``night_clock``), and ``elapsed_seconds.after_night`` for a job still running (a Start, no
    End) whose Start + Elapsed, when sacct saw it running, is: sacct cannot have seen what has not happened, and a
    job ending in 2056 would occupy its GPUs every month until then."""
    for field, column in TIME_COLUMNS.items():
        at = times[field]
        if at is not None and at > latest:
            raise FieldError(
                f"{column}.{AFTER_NIGHT}",
                f"{field} should be no later than the night that reads the export (its clock, allowing "
                f"{CLOCK_SKEW.seconds // 60} minutes of clock skew): sacct writes what has happened",
            )
    start = times["Start"]
    if (
        start is not None
        and times["End"] is None
        and elapsed is not None
        and start + timedelta(seconds=elapsed) > latest
    ):
        raise FieldError(
            f"elapsed_seconds.{AFTER_NIGHT}",
            "Start + Elapsed of a job still running (no End) is when sacct saw it running, and should be no later "
            f"than the night that reads the export (its clock, allowing {CLOCK_SKEW.seconds // 60} minutes of clock "
            "skew)",
        )


def parse_sacct_record(fields: dict[str, str], zone: tzinfo = UTC, latest: datetime | None = None) -> dict[str, object]:
    """One sacct row -> the staging shape, its times written in ``zone``; raises ``FieldError`` on the first rule it
    breaks. ``latest`` is the latest instant the row can name (``night_clock.latest_instant()`` unless given)."""
    missing = lacking_fields(fields)
    if missing:
        raise FieldError(
            "required_fields",
            f"the row lacks {', '.join(missing)}; every row needs {', '.join(REQUIRED_FIELDS)} (or TimelimitRaw)",
        )
    record_type, allocation_id, step = parse_job_id(fields["JobID"])
    state, cancelled_by = parse_state(fields["State"])
    labels = parse_labels(fields.get("Comment", ""), fields.get("WCKey", ""))
    elapsed = duration_field(fields, "Elapsed")
    suspended = parse_duration(fields.get("Suspended", ""), "Suspended")
    times = resolved_times(fields, zone, elapsed, suspended)
    start, end = times["Start"], times["End"]
    if start is not None and end is not None and end < start:
        raise FieldError(
            "end_not_before_start",
            "End should be at or after Start (a job that started 2026-11-30T10:00:00 ends then or later)",
        )
    # Without a Suspended field the job may have been suspended for any time: only an Elapsed longer than End -
    # Start is certainly wrong (a Start or End edited, or an export read in a zone it was not written in).
    unexplained = unexplained_seconds(start, end, elapsed, suspended)
    if unexplained is not None and (unexplained < -1 or (suspended is not None and unexplained > 1)):
        raise FieldError(
            "elapsed_seconds.end_minus_start",
            "Elapsed should be End - Start less the time the job was suspended (a job that ran from 10:00:00 to "
            "12:00:00 was running 02:00:00 at most, exactly that less Suspended when the export has it); Start or "
            "End is wrong, or the export is not in the source's time_zone",
        )
    _not_after_night(times, elapsed, latest_instant() if latest is None else latest)
    restarts = parse_count(fields.get("Restarts", ""), "Restarts")
    node_list = fields.get("NodeList", "").strip()
    allocated = parse_tres_gpus(fields["AllocTRES"])
    requested = parse_tres_gpus(fields["ReqTRES"]) if "ReqTRES" in fields else None
    asked = {} if requested is None else requested._asdict()  # every requested count null when no ReqTRES
    return {
        "cluster": fields.get("Cluster", "").strip() or None,
        "job_id": allocation_id if record_type == "allocation" else fields["JobID"].strip(),
        "job_id_raw": fields.get("JobIDRaw", "").strip() or None,
        "allocation_id": allocation_id,
        "step_name": step,
        "record_type": record_type,
        "job_name": fields.get("JobName", "").strip() or None,
        "account": fields.get("Account", "").strip() or None,
        "partition": fields.get("Partition", "").strip() or None,
        "user_name": fields.get("User", "").strip() or None,
        "state": state,
        "cancelled_by": cancelled_by,
        "exit_code": fields.get("ExitCode", "").strip() or None,
        "failed_node": fields.get("FailedNode", "").strip() or None,
        "restarts": 0 if restarts is None else restarts,
        "submit_at": times["Submit"],
        "eligible_at": times["Eligible"],
        "start_at": start,
        "end_at": end,
        "elapsed_seconds": elapsed,
        "time_limit_seconds": duration_field(fields, "Timelimit"),
        "gpus_requested": asked.get("gpus"),
        "gpus_allocated": allocated.gpus,
        "mig_instances_requested": asked.get("mig_instances"),
        "mig_slices_requested": asked.get("mig_slices"),
        "mig_instances_allocated": allocated.mig_instances,
        "mig_slices_allocated": allocated.mig_slices,
        "gpu_instance_profile": allocated.mig_profile or (requested.mig_profile if requested else None),
        "mig_gpu_type": allocated.mig_gpu_type if allocated.mig_profile or not requested else requested.mig_gpu_type,
        "shards_requested": asked.get("shards"),
        "shards_allocated": allocated.shards,
        "mps_requested": asked.get("mps"),
        "mps_allocated": allocated.mps,
        "node_count": parse_count(fields.get("NNodes", ""), "NNodes"),
        "node_list": None if node_list.lower() in {"", "none assigned", "none"} else node_list,
        "batch_id": labels.get("batch"),
        "phase": labels.get("phase"),
        "run_reason": labels.get("reason"),
        "restart_of": labels.get("restart_of"),
        "continues": labels.get("continues"),
        "end_reason": labels.get("end_reason"),
    }


def _zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``, read from the system's tz database or the tzdata package (installed with pandas):
    no download. ``localtime`` is refused with any unknown name: it is the zone of the machine running the
    pipeline, not of the one that ran sacct."""
    if name == "localtime" or name not in available_timezones():
        raise ValueError(
            "sacct time_zone should be the IANA name of the time zone sacct ran in (the cluster's TZ), such as "
            f"Asia/Shanghai, Europe/Berlin or UTC, not {name!r}"
        )
    return ZoneInfo(name)


@dataclass(frozen=True)
class SacctOptions:
    """How the sacct exports were written: ``|`` with a header line unless told otherwise; ``time_zone``, the IANA
    name of the zone sacct ran in (it prints local times; UTC unless told otherwise, as ``TZ=UTC sacct`` writes)."""

    sacct_delimiter: str = "|"
    sacct_fields: list[str] | None = None  # the field list of header-less files
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        _zone(self.time_zone)
        if not self.sacct_delimiter or any(end in self.sacct_delimiter for end in "\r\n"):
            raise ValueError("sacct_delimiter should be the character(s) between fields, such as | or ☃")
        if self.sacct_fields is None:
            return
        repeated = sorted({f for f in self.sacct_fields if list(self.sacct_fields).count(f) > 1})
        missing = lacking_fields(self.sacct_fields)
        if repeated:
            raise ValueError(f"sacct_fields names {', '.join(repeated)} more than once")
        if missing:
            raise ValueError(
                f"sacct_fields lacks {', '.join(missing)}, which every row needs (Timelimit or TimelimitRaw) "
                f"(the --format list of the sacct command, such as {','.join(REQUIRED_FIELDS)})"
            )


def sacct_line_parser(options: SacctOptions) -> LineParser:
    delimiter = options.sacct_delimiter
    fields = tuple(options.sacct_fields) if options.sacct_fields else None
    zone = _zone(options.time_zone)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        if fields is None and lines:
            header = lines[0].split(delimiter)
            if "JobID" not in header:
                raise FileRejected(
                    "sacct_header",
                    "first line is not an sacct header with JobID (a header-less "
                    "dump needs sacct_fields in the run config)",
                    header_lines=0,
                )
        latest = latest_instant()  # the night's clock, read once a file
        header_fields = lines[0].rstrip("\r\n").split(delimiter) if lines else []
        expected = len(fields) if fields else len(header_fields) - (1 if header_fields[-1:] == [""] else 0)
        for line, values, raw in split_sacct_lines(lines, delimiter, fields):
            parsed.rows_in += 1
            if values is None:
                parsed.rejections.append(
                    Rejection(
                        line,
                        "sacct_field_count",
                        f"the line should have {expected} fields separated by {delimiter}, as the "
                        f"{'sacct_fields option' if fields else 'header'} names; it has {len(raw.split(delimiter))}",
                        raw,
                    )
                )
                continue
            try:
                row = parse_sacct_record(values, zone, latest)
            except FieldError as error:
                parsed.rejections.append(Rejection(line, error.rule, str(error), raw))
                continue
            row["source_line"] = line
            parsed.rows.append(row)

    return parse


# ``sacct --json`` (Slurm 23.02 and later): the data_parser's ``jobs[]``, each job with its ``steps[]``. Every job
# and step is turned into the fields the parsable output would have written, then read by the same rules, so it
# lands in the same raw columns. A record's "line" is its position in the file: jobs in order, each followed by
# its steps. Its times are Unix times, one instant in every zone: they are read as UTC whatever the time_zone
# option says of the parsable exports.


def _no_val(value: object) -> object:
    """A data_parser number: plain, or ``{set, infinite, number}`` (unset or infinite give None)."""
    if isinstance(value, dict):
        return value.get("number") if value.get("set") and not value.get("infinite") else None
    return value


def _epoch_text(value: object) -> str:
    """A Unix time as sacct writes it (UTC, no zone); 0 or unset is ``Unknown``."""
    number = _no_val(value)
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        return "Unknown"
    try:
        return datetime.fromtimestamp(number, UTC).replace(tzinfo=None).isoformat()
    except (OverflowError, OSError, ValueError):
        raise FieldError(
            "time_epoch", "a time should be a Unix time in seconds such as 1764460800, as sacct --json writes it"
        ) from None


def _seconds_text(value: object) -> str:
    number = _no_val(value)
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        return ""
    return f"{number // 3600}:{number % 3600 // 60:02d}:{number % 60:02d}"


def _tres_text(entries: object) -> str:
    """A data_parser TRES list as sacct's TRES text: ``cpu=64,gres/gpu=8``."""
    if not isinstance(entries, list):
        return ""
    parts = []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type"):
            name = f"{entry['type']}/{entry['name']}" if entry.get("name") else str(entry["type"])
            parts.append(f"{name}={entry.get('count', 0)}")
    return ",".join(parts)


def _text(value: object) -> str:
    return "" if value is None or isinstance(value, dict | list) else str(value)


def _state_text(state: object) -> str:
    current = state.get("current") if isinstance(state, dict) else state
    if isinstance(current, list):
        return str(current[0]) if current else ""
    return _text(current)


def _exit_text(exit_code: object) -> str:
    if not isinstance(exit_code, dict):
        return ""
    code = _no_val(exit_code.get("return_code"))
    signal = exit_code.get("signal") if isinstance(exit_code.get("signal"), dict) else {}
    number = _no_val(signal.get("id")) if signal else None
    return "" if code is None else f"{code}:{number or 0}"


# A job array's tasks not split off yet (pending): sacct --json writes the one record slurmdbd keeps for them with
# ``array.task_id`` unset and ``array.task`` the task ids as slurmctld stores them, a hex mask (bit_fmt_hexmask,
# least significant bit task 0: ``0xEA`` is tasks 1, 3, 5-7), their limit of tasks run at once apart
# (``array.limits.max.running.tasks``, 0 for none). The parsable output writes that record as
# ``<array.job_id>_[<ranges>%<limit>]`` (Slurm's slurmdb_get_job_id_str and xlate_array_task_str,
# src/common/slurmdb_defs.c, src/common/slurm_protocol_defs.c; the data_parser's fields in
# src/plugins/data_parser/v0.0.4x/parsers.c), which staging expands into a pending task per index.
_HEX_TASKS = re.compile(r"^0x[0-9A-F]+$", re.ASCII | re.IGNORECASE)
_MAX_ARRAY_HEX_TEXT = len("0x") + (MAX_ARRAY_TASK_ID + 1 + 3) // 4  # task ids 0 to the largest: 4 a hex digit


def _array_tasks_text(array: dict) -> str:
    """``array.task``'s hex mask and limit as the parsable output's task list: ``0xEA``, limit 2: ``1,3,5-7%2``."""
    refused = FieldError(
        "array_tasks",
        "array.task of a job array's pending tasks should be the hex mask of their task ids as sacct --json writes it, "
        "such as 0xEA (tasks 1,3,5-7), with array.job_id and array.limits.max.running.tasks numbers",
    )
    mask_text = array.get("task")
    if not isinstance(mask_text, str) or not _HEX_TASKS.match(mask_text) or len(mask_text) > _MAX_ARRAY_HEX_TEXT:
        raise refused
    array_job = array.get("job_id")
    limits = array.get("limits") if isinstance(array.get("limits"), dict) else {}
    running = limits.get("max", {}).get("running", {}) if isinstance(limits.get("max"), dict) else {}
    limit = _no_val(running.get("tasks", 0)) if isinstance(running, dict) else None
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in (array_job, limit)) or not array_job:
        raise refused
    bits = bin(int(mask_text, 16))[:1:-1]  # task 0 first
    ranges, first = [], None
    for index, bit in enumerate([*bits, "0"]):
        if bit == "1" and first is None:
            first = index
        elif bit == "0" and first is not None:
            ranges.append(str(first) if first == index - 1 else f"{first}-{index - 1}")
            first = None
    if not ranges:
        raise refused  # a mask naming no task
    return ",".join(ranges) + (f"%{limit}" if limit else "")


def _job_fields(job: dict) -> dict[str, str]:
    """One ``sacct --json`` job as the fields of its parsable line (a FieldError: a malformed array task list)."""
    array = job.get("array") if isinstance(job.get("array"), dict) else {}
    task = _no_val(array.get("task_id"))
    job_id = _text(job.get("job_id"))
    if task is None and array.get("task"):  # as slurmdb_get_job_id_str: a task list first
        shown = f"{array.get('job_id')}_[{_array_tasks_text(array)}]"
    else:
        shown = f"{array.get('job_id')}_{task}" if array.get("job_id") and task is not None else job_id
    time = job.get("time") if isinstance(job.get("time"), dict) else {}
    limit = _no_val(time.get("limit"))
    comment = job.get("comment") if isinstance(job.get("comment"), dict) else {}
    wckey = job.get("wckey") if isinstance(job.get("wckey"), dict) else {}
    tres = job.get("tres") if isinstance(job.get("tres"), dict) else {}
    fields = {
        "JobID": shown,
        "JobIDRaw": job_id,
        "JobName": _text(job.get("name")),
        "Account": _text(job.get("account")),
        "Partition": _text(job.get("partition")),
        "User": _text(job.get("user")),
        "WCKey": _text(wckey.get("wckey")),
        "State": _state_text(job.get("state")),
        "ExitCode": _exit_text(job.get("exit_code")),
        "FailedNode": _text(job.get("failed_node")),
        "Restarts": _text(job.get("restart_cnt")),
        "Submit": _epoch_text(time.get("submission")),
        "Eligible": _epoch_text(time.get("eligible")),
        "Start": _epoch_text(time.get("start")),
        "End": _epoch_text(time.get("end")),
        "Elapsed": _seconds_text(time.get("elapsed")),
        "Timelimit": "UNLIMITED" if limit is None else str(limit),  # minutes, as sacct's bare number
        "NNodes": _text(job.get("allocation_nodes")),
        "NodeList": _text(job.get("nodes")),
        "ReqTRES": _tres_text(tres.get("requested")),
        "AllocTRES": _tres_text(tres.get("allocated")),
        "Comment": _text(comment.get("job")),
        "AdminComment": _text(comment.get("administrator")),
        "Cluster": _text(job.get("cluster")),
    }
    if not isinstance(tres.get("requested"), list):  # no request written: not known, as a parsable line without ReqTRES
        del fields["ReqTRES"]
    return fields


def _step_fields(step: dict, job: dict[str, str]) -> dict[str, str]:
    """One step of a ``sacct --json`` job as the fields of its parsable line (``<JobID>.<step>``)."""
    named = step.get("step") if isinstance(step.get("step"), dict) else {}
    step_id = _text(named.get("id"))
    suffix = step_id.split(".", 1)[1] if "." in step_id else _text(named.get("name"))
    time = step.get("time") if isinstance(step.get("time"), dict) else {}
    nodes = step.get("nodes") if isinstance(step.get("nodes"), dict) else {}
    tres = step.get("tres") if isinstance(step.get("tres"), dict) else {}
    return {
        **job,
        "JobID": f"{job['JobID']}.{suffix}",
        "JobIDRaw": f"{job['JobIDRaw']}.{suffix}",
        "JobName": _text(named.get("name")),
        "State": _state_text(step.get("state")),
        "ExitCode": _exit_text(step.get("exit_code")),
        "Start": _epoch_text(time.get("start")),
        "End": _epoch_text(time.get("end")),
        "Elapsed": _seconds_text(time.get("elapsed")),
        "NNodes": _text(nodes.get("count")),
        "NodeList": _text(nodes.get("range")),
        "ReqTRES": "",
        "AllocTRES": _tres_text(tres.get("allocated")),
        "Timelimit": "",
    }


def sacct_json_records(text: str) -> Iterator[tuple[int, dict[str, str] | FieldError | None]]:
    """(record number, fields) of every job and step of a ``sacct --json`` file; None: the record is not a job; a
    FieldError: the job (and each of its steps) broke that rule."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        raise FileRejected("sacct_json", "file is not JSON as sacct --json writes it", header_lines=0) from None
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list):
        raise FileRejected("sacct_json", "file has no jobs list, as sacct --json writes it", header_lines=0)
    number = 0
    for job in jobs:
        number += 1
        if not isinstance(job, dict):
            yield number, None
            continue
        try:
            fields = _job_fields(job)
        except FieldError as error:
            yield number, error
            for _step in job.get("steps") or []:
                number += 1
                yield number, error
            continue
        yield number, fields
        for step in job.get("steps") or []:
            number += 1
            yield number, _step_fields(step, fields) if isinstance(step, dict) else None


def sacct_json_parser(lines: list[str], parsed: ParsedFile) -> None:
    latest = latest_instant()  # the night's clock, read once a file
    for number, fields in sacct_json_records("\n".join(lines)):
        parsed.rows_in += 1
        if fields is None:
            parsed.rejections.append(
                Rejection(number, "sacct_json_job", 'a job or step should be a JSON object such as {"job_id": 1234, …}')
            )
            continue
        if isinstance(fields, FieldError):
            parsed.rejections.append(Rejection(number, fields.rule, str(fields)))
            continue
        try:
            row = parse_sacct_record(fields, latest=latest)
        except FieldError as error:
            parsed.rejections.append(Rejection(number, error.rule, str(error)))
            continue
        row["source_line"] = number
        parsed.rows.append(row)


def sacct_or_json_parser(options: SacctOptions) -> LineParser:
    """``sacct --json`` for ``.json`` files, the parsable output with ``options`` for the others."""
    parsable = sacct_line_parser(options)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        (sacct_json_parser if parsed.path.suffix.lower() == ".json" else parsable)(lines, parsed)

    return parse


_EVENT_FIELDS = (
    "job_id",
    "cluster",
    "namespace",
    "event",
    "at",
    "gpus_requested",
    "gpus_allocated",
    "gpu_instance_profile",
    "time_limit_s",
    "state",
    "labels",
)
_LABEL_COLUMNS = {
    "batch": "batch_id",
    "phase": "phase",
    "reason": "run_reason",
    "restart_of": "restart_of",
    "continues": "continues",
    "end_reason": "end_reason",
}
# The pod phases and reasons, and the Job conditions (Complete, Failed), in the sacct state vocabulary.
_K8S_STATES = {
    "succeeded": "COMPLETED",
    "complete": "COMPLETED",
    "failed": "FAILED",
    "oomkilled": "OUT_OF_MEMORY",
    "evicted": "PREEMPTED",
    "deadlineexceeded": "TIMEOUT",
}


def job_event_line_parser() -> LineParser:
    """Kubernetes-style job events (JSONL); labels flatten into the same label columns as sacct."""
    read_json = jsonl_line_parser(_EVENT_FIELDS)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_json(lines, parsed)
        kept = []
        for row in parsed.rows:
            labels = row.pop("labels") or {}
            if not isinstance(labels, dict):
                parsed.rejections.append(
                    Rejection(
                        row["source_line"],
                        "labels.object",
                        'labels should be a JSON object such as {"batch": "B-7", "phase": "training"}',
                    )
                )
                continue
            for key, column in _LABEL_COLUMNS.items():
                value = labels.get(key)
                row[column] = None if value is None else str(value)
            profile = row.get("gpu_instance_profile")
            if isinstance(profile, str):  # the Kubernetes resource name, nvidia.com/mig-1g.10gb, names 1g.10gb
                row["gpu_instance_profile"] = profile.strip().removeprefix("nvidia.com/").removeprefix("mig-")
            state = row.get("state")
            if isinstance(state, str):
                row["state"] = _K8S_STATES.get(state.lower(), state.upper())
            kept.append(row)
        parsed.rows[:] = kept

    return parse


SOURCES = (
    Source(
        "scheduler_jobs",
        ("I1",),
        "scheduler",
        ("*.sacct", "*.txt", "*.psv", "*.json"),
        "Slurm sacct rows, allocations and their steps (parsable or sacct --json)",
        RowLoader(schemas.scheduler_jobs, lambda _schema, options: sacct_or_json_parser(options)),
        options=SacctOptions,
        text_format="sacct --parsable2 text",
    ),
    Source(
        "scheduler_events",
        ("I1",),
        "scheduler",
        ("*.jsonl",),
        "Kubernetes-style job events",
        RowLoader(schemas.scheduler_events, lambda _schema, _options: job_event_line_parser()),
    ),
)
