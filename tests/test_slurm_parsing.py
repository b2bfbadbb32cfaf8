"""Every sacct oddity the issue lists, parsed or quarantined with a rule, never a crash."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cost_pipeline.ingest import scheduler as slurm
from cost_pipeline.ingest.lib.records import ParsedFile
from cost_pipeline.ingest.scheduler import SacctOptions, sacct_line_parser


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-04:33:44", 102_824),
        ("04:33:44", 16_424),
        ("30:00", 1_800),
        ("45", 2_700),
        ("2-00:00:00", 172_800),
        ("7-12", 648_000),
        ("1-02:03", 93_780),
        ("00:00:00", 0),
    ],
)
def test_durations(text, seconds):
    assert slurm.parse_duration(text, "Elapsed") == seconds


@pytest.mark.parametrize("text", ["UNLIMITED", "Partition_Limit", "INVALID", ""])
def test_durations_without_length(text):
    assert slurm.parse_duration(text, "Timelimit") is None


@pytest.mark.parametrize(
    ("formatted", "raw"),
    [
        # Timelimit and TimelimitRaw (minutes) of one job; UNLIMITED, Partition_Limit and a step's blank alike.
        ({"Timelimit": "14-00:00:00"}, {"TimelimitRaw": "20160"}),
        ({"Timelimit": "23:00:00"}, {"TimelimitRaw": "1380"}),
        ({"Timelimit": "UNLIMITED"}, {"TimelimitRaw": "UNLIMITED"}),
        ({"Timelimit": "Partition_Limit"}, {"TimelimitRaw": "Partition_Limit"}),
        ({"Timelimit": ""}, {"TimelimitRaw": ""}),
    ],
)
def test_timelimit_raw_reads_as_timelimit(formatted, raw):
    """sacct's TimelimitRaw is the limit in whole minutes: the same seconds as the formatted Timelimit."""
    assert slurm.duration_field(raw, "Timelimit") == slurm.duration_field(formatted, "Timelimit")
    assert slurm.duration_field(formatted, "Timelimit") == slurm.parse_duration(formatted["Timelimit"], "Timelimit")


@pytest.mark.parametrize(
    ("elapsed", "raw"), [("13-19:12:59", "1192379"), ("23:00:11", "82811"), ("00:00:00", "0"), ("", "")]
)
def test_elapsed_raw_reads_as_elapsed(elapsed, raw):
    """ElapsedRaw is whole seconds (the Fox capture's job 1955319: 82811, Elapsed 23:00:11)."""
    assert slurm.duration_field({"ElapsedRaw": raw}, "Elapsed") == slurm.parse_duration(elapsed, "Elapsed")


def test_an_export_without_elapsed_or_its_raw_twin_has_none():
    assert slurm.duration_field({"JobID": "1"}, "Elapsed") is None


@pytest.mark.parametrize("raw", ["23:00:00", "-5", "1e3", "٣"])
def test_raw_durations_that_are_not_whole_numbers_break_the_rule(raw):
    with pytest.raises(slurm.FieldError) as error:
        slurm.duration_field({"TimelimitRaw": raw}, "Timelimit")
    assert error.value.rule == "timelimit_duration"


def test_sacct_fields_may_name_timelimit_raw_instead_of_timelimit():
    fields = ["JobID", "State", "Start", "End", "ElapsedRaw", "TimelimitRaw", "ReqTRES", "AllocTRES"]
    assert SacctOptions(sacct_fields=fields).sacct_fields == fields
    with pytest.raises(ValueError, match="lacks Timelimit,"):
        SacctOptions(sacct_fields=[f for f in fields if f != "TimelimitRaw"])


def test_bad_duration_names_its_rule():
    with pytest.raises(slurm.FieldError) as error:
        slurm.parse_duration("soon", "Timelimit")
    assert error.value.rule == "timelimit_duration"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("None", ()),
        ("Unknown", ()),
        ("", ()),
        ("2026-11-03T06:00:00", (datetime(2026, 11, 3, 6),)),
    ],
)
def test_timestamps(text, expected):
    assert slurm.local_instants(text, "Start") == expected


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("billing=64,cpu=64,gres/gpu=8,mem=512G,node=1", 8),
        ("cpu=8,mem=32G,node=1", 0),
        ("billing=16,cpu=16,gres/gpu:a100=4,mem=64G,node=1", 4),
        ("cpu=16,gres/gpu=8,gres/gpu:h100=8,node=1", 8),  # typed duplicate of the untyped count
        ("cpu=16,gres/gpu:a100=2,gres/gpu:h100=3,node=1", 5),  # every typed entry, not every other one
        ("", 0),
    ],
)
def test_tres_gpus(text, gpus):
    assert slurm.parse_tres_gpus(text) == (gpus, 0, 0, None, 0, None, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Slurm's NVML autodetection names a MIG type after the GPU and its profile; sacct adds the untyped count.
        ("billing=8,cpu=8,gres/gpu=1,gres/gpu:nvidia_a100-sxm4-80gb_1g.10gb=1,mem=64G,node=1", (1, 1, 1, "1g.10gb")),
        ("cpu=8,gres/gpu:nvidia_h100_80gb_hbm3_4g.40gb=2,node=1", (2, 2, 8, "4g.40gb")),
        ("cpu=8,gres/gpu:3g.40gb=1,node=1", (1, 1, 3, "3g.40gb")),
        ("cpu=8,gres/gpu:a100l.2g.20gb=1,node=1", (1, 1, 2, "2g.20gb")),  # a site's own type name
        ("cpu=8,gres/gpu:a30_1g.6gb+me=1,node=1", (1, 1, 1, "1g.6gb+me")),
        ("cpu=8,gres/gpu:nvidia_h100_1g.10gb+gfx=1,gres/gpu:nvidia_h100_2g.20gb+me.all=1", (2, 2, 3, "1g.10gb+gfx")),
        ("cpu=8,gres/gpu:nvidia_a100_3g.39gb=1,node=1", (1, 1, 3, "3g.39gb")),  # NVML autodetection's MiB rounding
        # Whole GPUs and MIG instances in one job: 3 devices, one of them a 3-slice instance.
        ("gres/gpu=3,gres/gpu:a100=2,gres/gpu:a100_3g.40gb=1", (3, 1, 3, "3g.40gb")),
        # A type that holds "gb" but no profile is a whole GPU.
        ("gres/gpu:nvidia_h100_80gb_hbm3=4", (4, 0, 0, None)),
    ],
)
def test_tres_mig_instances(text, expected):
    assert slurm.parse_tres_gpus(text)[:5] == (*expected, 0)


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("gres/gpu=1,gres/gpu:nvidia_a30_2g.11gb=1", "nvidia_a30"),
        ("gres/gpu:a100l.2g.20gb=1", "a100l"),
        ("gres/gpu:1g.10gb=1", None),
        ("gres/gpu:nvidia_h100_80gb_hbm3=4", None),
    ],
)
def test_tres_mig_gpu_type_is_the_type_before_the_profile(text, model):
    assert slurm.parse_tres_gpus(text).mig_gpu_type == model


@pytest.mark.parametrize(
    ("text", "shards"),
    [
        ("billing=4,cpu=4,gres/shard=2,mem=16G,node=1", 2),  # Slurm's GPU sharding: no gres/gpu at all
        ("cpu=4,gres/shard:a100=3,gres/shard:h100=1,node=1", 4),
        ("cpu=4,gres/shard=4,gres/shard:a100=4,node=1", 4),  # typed duplicate of the untyped count
    ],
)
def test_tres_gpu_shards(text, shards):
    assert slurm.parse_tres_gpus(text) == (0, 0, 0, None, shards, None, 0)


def test_tres_cuda_mps_shares():
    assert slurm.parse_tres_gpus("billing=4,cpu=4,gres/mps=50,mem=16G,node=1").mps == 50
    assert slurm.parse_tres_gpus("cpu=4,gres/mps:a100=25,gres/mps:h100=25").mps == 50
    assert slurm.parse_tres_gpus("cpu=4,gres/gpu=1,gres/mps=0") == (1, 0, 0, None, 0, None, 0)


@pytest.mark.parametrize(
    "text",
    [
        "cpu=8,gres/gpu=-8,node=1",  # signed: the digit patterns skipped it, so it read as 0 GPUs
        "cpu=8,gres/gpu=x8,node=1",
        "cpu=8,gres/gpu=,node=1",
        "cpu=8,gres/gpu=8,gres/gpu:a100=8x,node=1",  # a garbage typed duplicate beside a good untyped count
        "cpu=8,gres/gpu:h100=2.5",
        "cpu=4,gres/shard=-2",
        "cpu=4,gres/mps:a100=twenty",
        "cpu=8,gres/gpu=٨",  # Arabic-Indic eight: str.isdigit() but not ASCII
    ],
)
def test_tres_gpu_count_that_is_not_plain_digits_is_refused(text):
    with pytest.raises(slurm.FieldError) as raised:
        slurm.parse_tres_gpus(text)
    assert raised.value.rule == "tres_gpus"


def test_tres_with_more_mig_instances_than_gpus_is_refused():
    with pytest.raises(slurm.FieldError) as raised:
        slurm.parse_tres_gpus("gres/gpu=1,gres/gpu:1g.10gb=2")
    assert raised.value.rule == "tres_gpus_mig"


def test_cancelled_by_user():
    assert slurm.parse_state("CANCELLED by 10304007") == ("CANCELLED", "10304007")
    assert slurm.parse_state("COMPLETED") == ("COMPLETED", None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1234", ("allocation", "1234", None)),
        ("1234.batch", ("step", "1234", "batch")),
        ("1234.extern", ("step", "1234", "extern")),
        ("1234.0", ("step", "1234", "0")),
        ("5908801_3", ("allocation", "5908801_3", None)),
        ("5908801_3.batch", ("step", "5908801_3", "batch")),
        ("5908801_[4-9]", ("allocation", "5908801_[4-9]", None)),
        ("5908801_[1,3,5-7%2]", ("allocation", "5908801_[1,3,5-7%2]", None)),
        ("5908801_[1-99:2]", ("allocation", "5908801_[1-99:2]", None)),  # evenly spaced: Slurm's step form
        ("5908801_[1-99:2%4]", ("allocation", "5908801_[1-99:2%4]", None)),
    ],
)
def test_job_ids(text, expected):
    assert slurm.parse_job_id(text) == expected


@pytest.mark.parametrize("text", ["5908801_[]", "5908801_[3-]", "5908801_[1,,3]", "5908801_[a-b]", "5908801_[%2]"])
def test_a_pending_array_names_its_tasks_as_sacct_writes_them(text):
    """Staging counts a pending range's tasks from its brackets: anything but numbers, ranges and a `%` limit is no
    JobID sacct writes, quarantined (job_id_format), not a night failing on it."""
    with pytest.raises(slurm.FieldError):
        slurm.parse_job_id(text)


# sacct (Slurm's xlate_array_task_str) cuts a task list longer than SLURM_BITSTR_LEN (64 unless set) to end in `...`.
CUT_LIST = "5908801_[1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47...%4]"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (CUT_LIST, "job_id_array_cut"),
        (CUT_LIST.replace("%4", ""), "job_id_array_cut"),
        ("5908801_[9-4]", "job_id_array_tasks"),  # a range counting no task
        ("5908801_[1-99:0]", "job_id_array_tasks"),
        ("5908801_[1-40000000]", "job_id_array_tasks"),  # above Slurm's largest task id: 40 million rows staged
    ],
)
def test_a_pending_array_whose_tasks_are_not_known_is_quarantined_saying_why(text, rule):
    """A task list sacct cut is not a count of tasks (it was `job_id_format`, saying nothing of why), and a range
    Slurm never writes would count no task or millions: each is quarantined under a rule that says so."""
    with pytest.raises(slurm.FieldError) as refused:
        slurm.parse_job_id(text)
    assert refused.value.rule == rule


def test_labels_from_comment_then_wckey():
    labels = slurm.parse_labels("batch=B-7;phase=training;reason=failure_retry;restart_of=1234", "*phase=analysis")
    assert labels == {"batch": "B-7", "phase": "training", "reason": "failure_retry", "restart_of": "1234"}
    assert slurm.parse_labels("", "batch=B-8,phase=validation") == {"batch": "B-8", "phase": "validation"}


HEADER = "|".join(slurm.SACCT_FIELDS)


def _line(**overrides: str) -> str:
    values = {f: "" for f in slurm.SACCT_FIELDS}
    values.update(
        JobID="1234",
        JobIDRaw="1234",
        State="COMPLETED",
        Start="2026-11-03T00:00:00",
        End="2026-11-03T02:00:00",
        Elapsed="02:00:00",
        Timelimit="1-00:00:00",
        ReqTRES="cpu=8,gres/gpu=8",
        AllocTRES="cpu=8,gres/gpu=8",
        NodeList="gpu-a",
        Comment="batch=B-7;phase=training",
    )
    values.update(overrides)
    return "|".join(values[f] for f in slurm.SACCT_FIELDS)


def _parse(lines: list[str], options: SacctOptions | None = None) -> ParsedFile:
    parsed = ParsedFile(path=None, sha256="")  # type: ignore[arg-type]
    sacct_line_parser(options or SacctOptions())(lines, parsed)
    return parsed


def test_messy_sacct_rows_parse_or_quarantine():
    parsed = _parse(
        [
            HEADER,
            _line(),
            _line(JobID="1234.batch", JobIDRaw="1234.batch", Comment=""),
            _line(
                JobID="1235",
                State="PENDING",
                Start="Unknown",
                End="Unknown",
                NodeList="None assigned",
                AllocTRES="",
                Elapsed="00:00:00",
            ),
            _line(JobID="1236", State="RUNNING", End="Unknown", Timelimit="UNLIMITED"),
            _line(JobID="1237", State="CANCELLED by 10304007", Elapsed="1-04:33:44", Start="None"),
            _line(JobID="5908801_3", JobIDRaw="5908804"),
            _line(JobID="1238", Start="yesterday"),
            "1239|too|few",
            _line(JobID="1240", Start="2026-11-03T05:00:00", End="2026-11-03T04:00:00"),
            "",
            _line(JobID="1241", AllocTRES="cpu=8,gres/gpu=-8"),  # not 0 GPUs: quarantined
            _line(JobID="1242", ReqTRES="cpu=8,gres/gpu=eight"),
        ]
    )
    assert parsed.rows_in == 11
    assert len(parsed.rows) + len(parsed.rejections) == parsed.rows_in
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (8, "start_timestamp"),
        (9, "sacct_field_count"),
        (10, "end_not_before_start"),
        (12, "tres_gpus"),
        (13, "tres_gpus"),
    ]
    rows = {r["job_id"]: r for r in parsed.rows}
    assert rows["1234.batch"]["record_type"] == "step" and rows["1234.batch"]["allocation_id"] == "1234"
    assert rows["1235"]["start_at"] is None and rows["1235"]["node_list"] is None
    assert rows["1235"]["gpus_allocated"] == 0
    assert rows["1236"]["end_at"] is None and rows["1236"]["time_limit_seconds"] is None
    assert rows["1237"]["cancelled_by"] == "10304007" and rows["1237"]["elapsed_seconds"] == 102_824
    assert rows["5908801_3"]["job_id_raw"] == "5908804"


def test_headerless_sacct_with_a_configured_field_list_and_delimiter():
    fields = ("JobID", "State", "Start", "End", "Timelimit", "ReqTRES", "AllocTRES", "Comment")
    line = ";".join(
        [
            "42",
            "COMPLETED",
            "2026-11-03T00:00:00",
            "2026-11-03T01:00:00",
            "01:00:00",
            "gres/gpu=2",
            "gres/gpu=2",
            "batch=B-7,phase=analysis",
        ]
    )
    parsed = _parse([line], SacctOptions(sacct_delimiter=";", sacct_fields=list(fields)))
    assert [r["job_id"] for r in parsed.rows] == ["42"] and parsed.rows[0]["phase"] == "analysis"
    assert parsed.rows[0]["source_line"] == 1


def test_parsable_with_trailing_delimiter():
    parsed = _parse([HEADER + "|", _line() + "|"])
    assert len(parsed.rows) == 1 and not parsed.rejections


def test_quarantine_messages_say_what_was_expected_with_an_example_never_the_value():
    parsed = _parse(
        [
            HEADER,
            _line(JobID="1238", Start="yesterday"),
            "1239|too|few",
            _line(JobID="1240", Start="2026-11-03T05:00:00", End="2026-11-03T04:00:00"),
            _line(JobID="job-one"),
            _line(JobID="1241", Timelimit="soon"),
            _line(JobID="1242", State=""),
            _line(JobID="1243", AllocTRES="cpu=8,gres/gpu=-8"),
        ]
    )
    messages = {r.rule: r.message for r in parsed.rejections}
    assert messages == {
        "start_timestamp": "Start should be a date-time as sacct writes it, such as 2026-11-30T14:05:00 (in the "
        "source's time_zone, UTC unless set, or with an offset such as 2026-11-30T15:05:00+01:00), or Unknown/None "
        "when not known",
        "sacct_field_count": f"the line should have {len(slurm.SACCT_FIELDS)} fields separated by |, as the header "
        "names; it has 3",
        "end_not_before_start": "End should be at or after Start (a job that started 2026-11-30T10:00:00 ends then "
        "or later)",
        "job_id_format": "JobID should be a Slurm job id such as 1234, 5908801_3 (an array task) or 1234.batch "
        "(a step)",
        "timelimit_duration": "Timelimit should be a Slurm duration such as 1-04:33:44 (days-hours:minutes:seconds), "
        "04:00:00 or 30 (minutes), or UNLIMITED",
        "state_present": "State should be a Slurm job state such as COMPLETED or CANCELLED by 1234, not empty",
        "tres_gpus": "a TRES GPU count (gres/gpu, gres/shard or gres/mps, typed or not, in ReqTRES or AllocTRES) "
        "should be a whole number of at most 18 digits such as gres/gpu=8, not signed, empty or text",
    }
    for message in messages.values():
        # No value of the rows (yesterday, job-one, soon, too, few) and no regular expression in the words.
        assert not {"yesterday", "job-one", "soon", "too", "few", "gres/gpu=-8"} & set(
            message.replace(",", " ").split()
        )
        assert not any(token in message for token in ("\\d", "^", "$", "[A-Z", "(?"))


def test_sacct_json_time_message_gives_an_example():
    with pytest.raises(slurm.FieldError) as error:
        slurm._epoch_text(10**20)
    assert error.value.rule == "time_epoch"
    assert str(error.value) == "a time should be a Unix time in seconds such as 1764460800, as sacct --json writes it"


# sacct prints local times (the TZ of the machine it runs on): the source's time_zone converts them to UTC.


def _rows_and_rules(parsed: ParsedFile) -> tuple[dict[str, dict], list[tuple[int, str]]]:
    assert len(parsed.rows) + len(parsed.rejections) == parsed.rows_in
    return {r["job_id"]: r for r in parsed.rows}, [(r.line, r.rule) for r in parsed.rejections]


def test_a_shanghai_clusters_times_are_eight_hours_ahead_of_utc():
    shanghai = SacctOptions(time_zone="Asia/Shanghai")
    parsed = _parse(
        [
            HEADER,
            _line(Submit="2026-11-03T07:55:00", Start="2026-11-03T08:00:00", End="2026-11-03T10:00:00"),
            # A time with an offset or Z keeps it, whatever the zone (SLURM_TIME_FORMAT=%FT%T%z writes +0800).
            _line(JobID="1235", Start="2026-11-03T00:00:00Z", End="2026-11-03T04:00:00+02:00"),
            _line(
                JobID="1236",
                Submit="2026-11-03T07:55:00+0800",
                Start="2026-11-03T08:00:00+0800",
                End="2026-11-03T02:00:00Z",
            ),
        ],
        shanghai,
    )
    rows, rules = _rows_and_rules(parsed)
    assert not rules
    assert (rows["1234"]["submit_at"], rows["1234"]["start_at"], rows["1234"]["end_at"]) == (
        datetime(2026, 11, 2, 23, 55),
        datetime(2026, 11, 3, 0, 0),
        datetime(2026, 11, 3, 2, 0),
    )
    assert (rows["1235"]["start_at"], rows["1235"]["end_at"]) == (datetime(2026, 11, 3), datetime(2026, 11, 3, 2))
    assert (rows["1236"]["submit_at"], rows["1236"]["start_at"]) == (rows["1234"]["submit_at"], datetime(2026, 11, 3))


def test_a_berlin_time_in_the_repeated_autumn_hour_is_the_instant_elapsed_agrees_with():
    # 25 October 2026, 03:00 CEST becomes 02:00 CET: 02:30 is 00:30 UTC (the first time) or 01:30 UTC (the second).
    berlin = SacctOptions(time_zone="Europe/Berlin")
    parsed = _parse(
        [
            HEADER,
            _line(JobID="1", Start="2026-10-25T01:30:00", End="2026-10-25T02:30:00", Elapsed="02:00:00"),
            _line(JobID="2", Start="2026-10-25T01:30:00", End="2026-10-25T02:30:00", Elapsed="01:00:00"),
            _line(JobID="3", Start="2026-10-25T02:30:00", End="2026-10-25T04:00:00", Elapsed="02:30:00"),
            # Both in the repeated hour, 30 minutes apart either way: nothing tells which, never guessed.
            _line(JobID="4", Start="2026-10-25T02:10:00", End="2026-10-25T02:40:00", Elapsed="00:30:00"),
        ],
        berlin,
    )
    rows, rules = _rows_and_rules(parsed)
    assert rules == [(5, "start_at.time_zone_ambiguous")]
    assert "Europe/Berlin" in parsed.rejections[0].message and "Elapsed" in parsed.rejections[0].message
    assert rows["1"]["end_at"] == datetime(2026, 10, 25, 1, 30)
    assert rows["2"]["end_at"] == datetime(2026, 10, 25, 0, 30)
    assert rows["3"]["start_at"] == datetime(2026, 10, 25, 0, 30)
    # The 2-hour job is 2 hours, as sacct's own Elapsed says.
    assert rows["1"]["end_at"] - rows["1"]["start_at"] == timedelta(hours=2)


def test_a_berlin_time_in_the_skipped_spring_hour_is_quarantined_naming_its_column():
    # 29 March 2026, 02:00 CET becomes 03:00 CEST: no clock in Berlin showed 02:30.
    berlin = SacctOptions(time_zone="Europe/Berlin")
    parsed = _parse(
        [
            HEADER,
            _line(JobID="1", Start="2026-03-29T01:00:00", End="2026-03-29T04:00:00", Elapsed="02:00:00"),
            _line(JobID="2", Start="2026-03-29T02:30:00", End="2026-03-29T04:00:00", Elapsed="00:30:00"),
            _line(JobID="3", Start="2026-03-29T01:00:00", End="2026-03-29T02:30:00", Elapsed="00:30:00"),
        ],
        berlin,
    )
    rows, rules = _rows_and_rules(parsed)
    assert rules == [(3, "start_at.time_zone"), (4, "end_at.time_zone")]
    assert "Europe/Berlin" in parsed.rejections[0].message
    assert rows["1"]["end_at"] - rows["1"]["start_at"] == timedelta(hours=2)


def test_elapsed_longer_than_end_minus_start_is_quarantined():
    parsed = _parse(
        [
            HEADER,
            _line(JobID="1", Elapsed="02:00:01"),  # a second is rounding
            _line(JobID="2", Elapsed="03:00:00"),
            # Shorter: the job may have been suspended, which only a Suspended field says.
            _line(JobID="3", Elapsed="01:00:00"),
        ]
    )
    rows, rules = _rows_and_rules(parsed)
    assert rules == [(3, "elapsed_seconds.end_minus_start")]
    assert set(rows) == {"1", "3"}
    assert "Elapsed should be End - Start" in parsed.rejections[0].message


def test_with_suspended_elapsed_must_be_end_minus_start_less_it():
    header = HEADER + "|Suspended"
    parsed = _parse(
        [
            header,
            _line(JobID="1", Elapsed="01:00:00") + "|01:00:00",
            _line(JobID="2", Elapsed="01:00:00") + "|00:00:00",
            _line(JobID="3", Elapsed="02:00:00") + "|00:00:00",
        ]
    )
    rows, rules = _rows_and_rules(parsed)
    assert rules == [(3, "elapsed_seconds.end_minus_start")]
    assert set(rows) == {"1", "3"}


def test_a_time_zone_that_is_no_iana_name_is_refused_naming_the_option():
    for name in ("Asia/Shangai", "CST", "localtime", ""):
        with pytest.raises(ValueError, match="time_zone should be the IANA name") as refused:
            SacctOptions(time_zone=name)
        assert "Asia/Shanghai" in str(refused.value)


def test_sacct_json_unix_times_are_utc_whatever_the_time_zone():
    text = (Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json").read_text(encoding="utf-8")
    parsed = [ParsedFile(path=Path("sacct.json"), sha256=""), ParsedFile(path=Path("sacct.json"), sha256="")]
    slurm.sacct_or_json_parser(SacctOptions())(text.splitlines(), parsed[0])
    slurm.sacct_or_json_parser(SacctOptions(time_zone="Asia/Shanghai"))(text.splitlines(), parsed[1])
    assert parsed[0].rows and parsed[0].rows == parsed[1].rows


def test_eligible_is_read_in_the_sources_time_zone_and_unknown_is_null():
    parsed = _parse(
        [
            HEADER,
            # Held by a dependency until 10:00, started 10:05 (Shanghai time, eight hours ahead of UTC).
            _line(
                Submit="2026-11-03T08:00:00",
                Eligible="2026-11-03T18:00:00",
                Start="2026-11-03T18:05:00",
                End="2026-11-03T19:05:00",
                Elapsed="01:00:00",
            ),
            _line(JobID="1235", Submit="2026-11-03T08:00:00", Eligible="Unknown"),
        ],
        SacctOptions(time_zone="Asia/Shanghai"),
    )
    rows, rules = _rows_and_rules(parsed)
    assert not rules
    assert (rows["1234"]["submit_at"], rows["1234"]["eligible_at"]) == (
        datetime(2026, 11, 3),
        datetime(2026, 11, 3, 10),
    )
    assert rows["1235"]["eligible_at"] is None


def test_sacct_json_eligible_is_its_unix_time():
    text = (Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json").read_text(encoding="utf-8")
    parsed = ParsedFile(path=Path("sacct.json"), sha256="")
    slurm.sacct_or_json_parser(SacctOptions())(text.splitlines(), parsed)
    # time.eligible 1793664000 is 2026-11-03T00:00:00 UTC.
    assert parsed.rows[0]["eligible_at"] == datetime(2026, 11, 3)


def test_a_sacct_json_job_without_a_tres_request_has_its_requested_gpus_unknown():
    """A job whose ``tres`` has no ``requested`` list requested what is not known (null), as a parsable export
    without ReqTRES: never 0 GPUs. An empty list is a request of no TRES: 0, as a ReqTRES naming no GPU."""
    document = json.loads((Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json").read_text("utf-8"))
    job = document["jobs"][0]
    assert job["tres"]["requested"] and job["tres"]["allocated"]
    without, empty = json.loads(json.dumps(job)), json.loads(json.dumps(job))
    del without["tres"]["requested"]
    empty["tres"]["requested"] = []
    without["job_id"], empty["job_id"] = 7001, 7002
    document["jobs"] = [job, without, empty]
    parsed = ParsedFile(path=Path("sacct.json"), sha256="")
    slurm.sacct_or_json_parser(SacctOptions())(json.dumps(document).splitlines(), parsed)
    jobs = {row["job_id"]: row for row in parsed.rows if row["record_type"] == "allocation"}
    assert not parsed.rejections
    assert jobs[str(job["job_id"])]["gpus_requested"] > 0
    assert jobs["7001"]["gpus_requested"] is None and jobs["7001"]["mig_slices_requested"] is None
    assert jobs["7001"]["gpus_allocated"] == jobs[str(job["job_id"])]["gpus_allocated"]
    assert jobs["7002"]["gpus_requested"] == 0


def test_a_time_after_the_night_is_quarantined_naming_its_column():
    """sacct writes what has happened: a job ending in 2056 would occupy its 8 GPUs every month until then (2,103,936
    GPU-hours, every month to come booked with work not done). Start, End, Submit and Eligible after the night's
    clock (and a running job's Start + Elapsed, when sacct saw it running) are quarantined; a few minutes of clock
    skew are not."""
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    parsed = _parse(
        [
            HEADER,
            _line(
                JobID="2002",
                Start="2026-11-09T00:00:00",
                End="2056-11-09T00:00:00",
                Elapsed="10958-00:00:00",  # End - Start, to the second
                AllocTRES="cpu=64,gres/gpu=8",
                Comment="batch=B-8;phase=training",
            ),
            _line(JobID="2003", State="PENDING", Submit="2099-01-01T00:00:00", Start="Unknown", End="Unknown"),
            _line(JobID="2004", State="PENDING", Eligible="2099-01-01T00:00:00", Start="Unknown", End="Unknown"),
            _line(JobID="2005", State="RUNNING", Start="2026-11-09T00:00:00", End="Unknown", Elapsed="10958-00:00:00"),
            _line(JobID="2006", Start="2099-01-01T00:00:00", End="2099-01-01T02:00:00"),
            # Within the clock skew the night allows: its End is now, as the exporting machine's clock says.
            _line(
                JobID="2007",
                Start=f"{now - timedelta(hours=2) + timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}",
                End=f"{now + timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}",
            ),
            _line(
                JobID="2008",
                Start=f"{now - timedelta(hours=1):%Y-%m-%dT%H:%M:%S}",
                End=f"{now + timedelta(hours=1):%Y-%m-%dT%H:%M:%S}",
            ),
            _line(JobID="2009", State="RUNNING", Start="2026-11-09T00:00:00", End="Unknown", Elapsed="2-00:00:00"),
        ]
    )
    rows, rules = _rows_and_rules(parsed)
    assert rules == [
        (2, "end_at.after_night"),
        (3, "submit_at.after_night"),
        (4, "eligible_at.after_night"),
        (5, "elapsed_seconds.after_night"),
        (6, "start_at.after_night"),
        (8, "end_at.after_night"),
    ]
    assert set(rows) == {"2007", "2009"}
    assert parsed.rejections[0].message == (
        "End should be no later than the night that reads the export (its clock, allowing 15 minutes of clock "
        "skew): sacct writes what has happened"
    )


def test_an_export_with_the_raw_duration_fields_stages_the_same_rows():
    """The same rows written with TimelimitRaw and ElapsedRaw (as sonar asks sacct for them) in place of Timelimit and
    Elapsed: identical staged rows; a raw value that is not a whole number is quarantined, never read as no limit."""
    formatted = [
        _line(),
        _line(JobID="1236", State="RUNNING", End="Unknown", Elapsed="13-19:12:59", Timelimit="UNLIMITED"),
        _line(JobID="1234.batch", JobIDRaw="1234.batch", Timelimit=""),
    ]
    raw_of = {"Elapsed": "ElapsedRaw", "Timelimit": "TimelimitRaw"}
    header = "|".join(raw_of.get(f, f) for f in slurm.SACCT_FIELDS)
    raw = [
        line.replace("|02:00:00|1-00:00:00|", "|7200|1440|")
        .replace("|13-19:12:59|UNLIMITED|", "|1192379|UNLIMITED|")
        .replace("|02:00:00|||", "|7200|||")
        for line in formatted
    ]
    assert raw != formatted
    expected = _parse([HEADER, *formatted])
    parsed = _parse([header, *raw, raw[0].replace("|1440|", "|1-00:00:00|")])
    assert parsed.rows == expected.rows and expected.rejections == []
    assert [(r.line, r.rule) for r in parsed.rejections] == [(5, "timelimit_duration")]
    assert [(row["elapsed_seconds"], row["time_limit_seconds"]) for row in parsed.rows] == [
        (7200, 86400),
        (1192379, None),
        (7200, None),
    ]


def test_a_sacct_record_is_judged_by_the_latest_instant_it_is_given():
    fields = dict(zip(slurm.SACCT_FIELDS, _line().split("|"), strict=True))  # ends 2026-11-03T02:00:00
    assert slurm.parse_sacct_record(fields, latest=datetime(2026, 11, 3, 2))["end_at"] == datetime(2026, 11, 3, 2)
    with pytest.raises(slurm.FieldError) as after:
        slurm.parse_sacct_record(fields, latest=datetime(2026, 11, 3, 1, 59, 59))
    assert after.value.rule == "end_at.after_night"


def test_sacct_json_end_after_the_night_is_quarantined():
    document = json.loads((Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json").read_text("utf-8"))
    document["jobs"][0]["time"]["end"] = 2_740_608_000  # 2056-11-05T00:00:00Z
    parsed = ParsedFile(path=Path("sacct.json"), sha256="")
    slurm.sacct_or_json_parser(SacctOptions())(json.dumps(document).splitlines(), parsed)
    # Job 4400 (record 5) ends before it starts in the file as it is.
    assert [(r.line, r.rule) for r in parsed.rejections] == [(1, "end_at.after_night"), (5, "end_not_before_start")]
    assert [r["job_id"] for r in parsed.rows] == ["4242.batch", "4242.0", "4300_3"]


def _pending_array_job(job_id: int, task: object, limit: object = 2) -> dict:
    """A pending job array's record as sacct --json writes it: data_parser v0.0.4x's slurmdb job, its ``array``
    ``{job_id, limits.max.running.tasks, task_id, task}`` (src/plugins/data_parser/v0.0.44/parsers.c of
    github.com/SchedMD/slurm at 284c3b95f08a2dc2478499837b03355e1b9c5c75), ``task_id`` unset and ``task`` the task
    ids as slurmctld stores them, a hex mask (bit_fmt_hexmask; sacct dumps it untranslated, only its text output
    translates it, slurmdb_get_job_id_str -> xlate_array_task_str); nothing started, so no steps."""
    document = json.loads((Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json").read_text("utf-8"))
    job = document["jobs"][0]
    job.update(job_id=job_id, steps=[], state={"current": ["PENDING"], "reason": "JobArrayTaskLimit"}, nodes="None")
    job["array"] = {
        "job_id": job_id,
        "limits": {"max": {"running": {"tasks": limit}}},
        "task_id": {"set": False, "infinite": False, "number": 0},
        "task": task,
    }
    job["time"].update(elapsed=0, start=0, end=0)
    job["tres"]["allocated"] = []
    return job


def test_sacct_json_pending_array_is_its_tasks_as_the_parsable_output_writes_them():
    """A pending array's one record stood as its plain job id, one task: `0xEA` with a limit of 2 is what sacct -P
    writes `5908801_[1,3,5-7%2]`, five tasks staging counts; a task list that is no hex mask is quarantined with its
    record and rule, never one task."""
    jobs = [_pending_array_job(5908801, "0xEA"), _pending_array_job(5908802, "0x18", limit=0)]
    jobs += [_pending_array_job(5908803, "1,3,5-7%2"), _pending_array_job(5908804, "0x0")]
    jobs += [_pending_array_job(5908805, "0xEA", limit=-1)]
    parsed = ParsedFile(path=Path("sacct.json"), sha256="")
    slurm.sacct_or_json_parser(SacctOptions())(json.dumps({"jobs": jobs}).splitlines(), parsed)
    assert [(r["job_id"], r["source_line"]) for r in parsed.rows] == [("5908801_[1,3,5-7%2]", 1), ("5908802_[3-4]", 2)]
    assert [(r.line, r.rule) for r in parsed.rejections] == [(3, "array_tasks"), (4, "array_tasks"), (5, "array_tasks")]
    assert "0xEA" in parsed.rejections[0].message
    # A started task (task_id set) and a job of no array are as before.
    fields = dict(slurm.sacct_json_records(json.dumps({"jobs": [_pending_array_job(7, "")]})))
    assert fields[1]["JobID"] == "7"
