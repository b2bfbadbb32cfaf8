"""The LiteLLM export command of docs/inputs.md, run on a real Postgres holding LiteLLM's SpendLogs table (issue 10).

A real LiteLLM database (a public pg_dump of a proxy in front of Ollama, June 2025; its repository could not be
identified, so it is not copied here) holds failed requests whose ``metadata.error_information.traceback`` has
quotes and line breaks, escaped in JSON as ``\\"`` and ``\\n``. ``\\copy (select row_to_json(s) ...) to 'file'``,
what these docs said to run, writes COPY's text format, which doubles every backslash: each such row became a line
that is no JSON, quarantined (rule ``json_syntax``), and every failed request (and every row of a proxy that stores
prompts, ``store_prompts_in_spend_logs``) was lost from the serving marts. The table here is LiteLLM's own
(``schema.prisma``, as ``pg_dump`` wrote it), its timestamps UTC without a zone as LiteLLM stores them; the rows are
shaped like the dump's, with this project's model names. Needs PostgreSQL's server programs (Debian's
``postgresql``); skipped without them.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from tests.test_telemetry_formats import _load

INPUTS = Path(__file__).parents[1] / "docs" / "inputs.md"
INITDB = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None) or shutil.which("initdb")
pytestmark = pytest.mark.skipif(
    INITDB is None or shutil.which("psql") is None, reason="no PostgreSQL server programs (Debian's postgresql)"
)

# LiteLLM_SpendLogs as pg_dump writes LiteLLM's table (schema.prisma, proxy of mid 2025).
SPEND_LOGS = """
CREATE TABLE public."LiteLLM_SpendLogs" (
    request_id text NOT NULL, call_type text NOT NULL, api_key text DEFAULT ''::text NOT NULL,
    spend double precision DEFAULT 0.0 NOT NULL, total_tokens integer DEFAULT 0 NOT NULL,
    prompt_tokens integer DEFAULT 0 NOT NULL, completion_tokens integer DEFAULT 0 NOT NULL,
    "startTime" timestamp(3) without time zone NOT NULL, "endTime" timestamp(3) without time zone NOT NULL,
    "completionStartTime" timestamp(3) without time zone, model text DEFAULT ''::text NOT NULL,
    model_id text DEFAULT ''::text, model_group text DEFAULT ''::text, custom_llm_provider text DEFAULT ''::text,
    api_base text DEFAULT ''::text, "user" text DEFAULT ''::text, metadata jsonb DEFAULT '{}'::jsonb,
    cache_hit text DEFAULT ''::text, cache_key text DEFAULT ''::text, request_tags jsonb DEFAULT '[]'::jsonb,
    team_id text, end_user text, requester_ip_address text, messages jsonb DEFAULT '{}'::jsonb,
    response jsonb DEFAULT '{}'::jsonb, session_id text, status text, proxy_server_request jsonb DEFAULT '{}'::jsonb
);
"""
# A failed call (the model name the caller sent is in no model_list entry: no model group, 0 tokens) and a served one,
# as the dump's rows of 21 June 2025: cache_hit 'False' and 'None', blank team and requester address.
FAILED_METADATA = (
    '{"status": "failure", "usage_object": null, "error_information": {"traceback": "  File '
    '\\"/usr/lib/python3.13/site-packages/litellm/proxy/route_llm_request.py\\", line 153, in route_request\\n    '
    'raise ProxyModelNotFoundError(\\n", "error_code": "400", "error_class": "ProxyModelNotFoundError", '
    "\"error_message\": \"400: {'error': '/chat/completions: Invalid model name passed in model=assistant-large'}\"}, "
    '"user_api_key_user_id": "default_user_id"}'
)
SERVED_METADATA = (
    '{"usage_object": {"total_tokens": 542, "prompt_tokens": 22, "completion_tokens": 520}, '
    '"applied_guardrails": [], "user_api_key_user_id": "default_user_id", '
    '"model_map_information": {"model_map_key": "ollama/assistant-large", "model_map_value": null}}'
)
ROWS = f"""
INSERT INTO public."LiteLLM_SpendLogs" VALUES
('0d276b8e-27fb-4f97-8ad1-0cd84a0f5823', '', '', 0, 0, 0, 0, '2026-11-21 17:04:41.254', '2026-11-21 17:04:41.254',
 '2026-11-21 17:04:41.253', 'assistant-large', '', '', '', '', 'default_user_id', $j${FAILED_METADATA}$j$, 'False',
 'Cache OFF', '[]', '', '', '', '{{}}', '{{}}', '4d77c3f7-e509-474f-867d-e737789c8733', 'failure', '{{}}'),
('chatcmpl-b3e273c1-5833-423e-9d19-5c82f0ed7591', 'acompletion', 'sk_622f', 0, 542, 22, 520,
 '2026-11-21 17:06:03.174', '2026-11-21 17:06:41.542', '2026-11-21 17:06:41.541', 'assistant-large',
 'b9a811f4-76b6-4b62-8188-b1ba7bc55d3e', 'ollama/assistant-large', 'ollama',
 'http://host.docker.internal:11434/api/generate', 'default_user_id', $j${SERVED_METADATA}$j$, 'None', 'Cache OFF',
 '["User-Agent: axios", "User-Agent: axios/1.8.3"]', '', '', '', '{{}}', '{{}}',
 '80106165-0018-4567-8d0b-b9322cbc845d', 'success', '{{}}');
"""


def documented_export_command() -> str:
    """The psql command docs/inputs.md gives for the requests/ folder."""
    commands = re.findall(r"`(psql \"\$DATABASE_URL\"[^`]*LiteLLM_SpendLogs[^`]*)`", INPUTS.read_text(encoding="utf-8"))
    assert len(commands) == 1, commands
    return commands[0]


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL server on a Unix socket only; run as the postgres user when the tests run as root."""
    bindir = Path(INITDB).parent
    folder = Path(tempfile.mkdtemp(prefix="litellm-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and no postgres user to run the server as")
        os.chown(folder, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    server = [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
    options = f"-k {folder} -c listen_addresses= -p 5432"
    subprocess.run([*server, "-o", options, "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@/postgres?host={folder}&port=5432"
    finally:
        subprocess.run([*server, "-m", "immediate", "stop"], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_documented_export_of_litellm_spend_logs_loads_every_row(postgres, tmp_path):
    psql = ["psql", postgres, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"]
    subprocess.run([*psql, SPEND_LOGS], check=True, capture_output=True)
    subprocess.run([*psql, ROWS], check=True, capture_output=True)
    landing = tmp_path / "landing"
    (landing / "requests").mkdir(parents=True)
    subprocess.run(
        ["bash", "-c", documented_export_command()],
        cwd=landing,
        env={**os.environ, "DATABASE_URL": postgres},
        check=True,
        capture_output=True,
    )
    rows, quarantined, ledger = _load(landing, "serving_requests")
    # Both rows, the failed call's traceback and all: none is a broken line.
    assert ledger == {"requests/spend_2026-11.jsonl": (2, 2, 0)}
    assert quarantined == []
    assert [
        (r["request_id"], r["requested_at"], r["model"], r["input_tokens"], r["output_tokens"], r["latency_ms"])
        + (r["cache_hit"], r["status"], r["tenant"])
        for r in rows
    ] == [
        # LiteLLM's times are UTC without a zone: read as UTC. No model group routed the failed call: its model.
        ("0d276b8e-27fb-4f97-8ad1-0cd84a0f5823", datetime(2026, 11, 21, 17, 4, 41, 254000), "assistant-large")
        + (0, 0, 0, False, "failed", None),
        ("chatcmpl-b3e273c1-5833-423e-9d19-5c82f0ed7591", datetime(2026, 11, 21, 17, 6, 3, 174000))
        + ("ollama/assistant-large", 22, 520, 38368, False, "completed", None),
    ]
