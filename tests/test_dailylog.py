"""Daily logs: the format, the appender (locking, append-only), redaction, relative dates."""

from __future__ import annotations

import multiprocessing
import os
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from wikiwright.core.vault import Vault
from wikiwright.memory.dailylog import (
    LogWriteError,
    append_session,
    canonical_section,
    parse_log,
    redact,
)
from wikiwright.memory.reldate import absolutize

from tests.conftest import Services
from tests.helpers import cli

WHEN = datetime(2026, 11, 24, 14, 5, tzinfo=UTC)

SAMPLE = """# 2026-11-24

## Session 09:12 UTC — claude-code: billing (SessionEnd)
### Decisions
- 🔴 Deploys go through the staging gate from now on
  (agreed with the team)
### What Changed
- 🟡 Working on the billing export
- 🟢 Restarted the dev server twice
```python
print("not an observation")
```
A prose line without a bullet

## Session 15:40 CET
1. 🔴 `deploy.window`: Tuesdays 10:00-12:00
### what didnt
- Caching the invoice totals did not work
"""


def test_parse_sessions_sections_markers_and_offsets() -> None:
    parsed = parse_log(SAMPLE, date(2026, 11, 24))
    assert [(s.time, s.tz, s.label) for s in parsed.sessions] == [
        ("09:12", "UTC", "claude-code: billing (SessionEnd)"), ("15:40", "CET", "")]
    first = parsed.sessions[0].observations
    assert [(o.priority, o.section) for o in first] == [
        ("durable", "Decisions"), ("context", "What Changed"), ("ephemeral", "What Changed"), ("", "What Changed")]
    assert first[0].text == "Deploys go through the staging gate from now on (agreed with the team)"
    assert all("not an observation" not in o.text for o in parsed.observations())
    second = parsed.sessions[1].observations
    assert second[0].text == "`deploy.window`: Tuesdays 10:00-12:00" and second[0].priority == "durable"
    assert second[1].section == "What Didn't"
    # Byte offsets point at the lines, so a cursor can say "only what follows".
    data = SAMPLE.encode()
    offset = parsed.sessions[1].offset
    assert data[offset:].startswith(b"## Session 15:40")
    assert [o.text for o in parsed.observations(offset)] == [o.text for o in second]
    assert len(parsed.sessions_since(offset)) == 1


def test_canonical_sections() -> None:
    assert canonical_section("patterns") == "Patterns Learned"
    assert canonical_section("What didn't") == "What Didn't"
    assert canonical_section("**Decisions**") == "Decisions"
    assert canonical_section("Requests") == "Requests"


def test_append_creates_day_file_and_never_rewrites(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    first = append_session(logs, "🔴 Use uv, not pip", section="decisions", label="cli", when=WHEN)
    assert first is not None and first.new_session
    path = logs / "2026-11-24.md"
    before = path.read_bytes()
    assert before.startswith(b"# 2026-11-24\n\n## Session 14:05 UTC \xe2\x80\x94 cli\n### Decisions\n- ")
    # A person's editor left the file without a final newline; the next block still starts cleanly.
    with path.open("ab") as handle:
        handle.write(b"- a note typed by hand")
    before = path.read_bytes()
    append_session(logs, "## Sneaky heading\nplain line\n- bullet", when=WHEN + timedelta(hours=1))
    after = path.read_bytes()
    assert after.startswith(before)
    tail = after[len(before):].decode()
    assert tail.startswith("\n\n## Session 15:05 UTC\n")
    assert "### Sneaky heading" in tail and "- plain line" in tail  # demoted: no fake session
    assert len(parse_log(after.decode(), date(2026, 11, 24)).sessions) == 2
    assert append_session(logs, "  \n\n", when=WHEN) is None  # nothing to log, nothing written
    assert path.read_bytes() == after


def test_continue_label_extends_the_last_block(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for n in range(3):
        append_session(logs, [f"- commit {n}"], section="What Changed", label="git: api", when=WHEN,
                       continue_label=True)
    text = (logs / "2026-11-24.md").read_text()
    parsed = parse_log(text, date(2026, 11, 24))
    assert len(parsed.sessions) == 1 and [o.text for o in parsed.observations()] == ["commit 0", "commit 1", "commit 2"]
    assert text.count("### What Changed") == 1
    append_session(logs, "other work", label="shell", when=WHEN)
    append_session(logs, ["- commit 3"], section="What Changed", label="git: api", when=WHEN, continue_label=True)
    assert len(parse_log((logs / "2026-11-24.md").read_text(), date(2026, 11, 24)).sessions) == 3


def _append_many(logs: str, worker: int) -> None:
    for n in range(25):
        append_session(Path(logs), f"worker {worker} entry {n} " + "x" * 300, when=WHEN)


def test_concurrent_appends_from_processes_interleave_whole_blocks(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(logs), w)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    parsed = parse_log((logs / "2026-11-24.md").read_text(), date(2026, 11, 24))
    assert len(parsed.sessions) == 100
    texts = sorted(o.text.split(" x")[0] for o in parsed.observations())
    assert texts == sorted(f"worker {w} entry {n}" for w in range(4) for n in range(25))
    assert all(len(s.observations) == 1 for s in parsed.sessions)


def test_refuses_a_symlinked_log(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    target = tmp_path / "elsewhere.md"
    target.write_text("outside\n")
    os.symlink(target, logs / "2026-11-24.md")
    with pytest.raises(LogWriteError, match="symbolic link"):
        append_session(logs, "hello there", when=WHEN)
    assert target.read_text() == "outside\n"


@pytest.mark.parametrize(("text", "leaked"), [
    ("key sk-proj-Abc123Def456Ghi789Jkl012Mno345 here", "Abc123Def456"),
    ("anthropic sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123", "AbCdEfGhIj"),
    ("aws AKIAIOSFODNN7EXAMPLE id", "AKIAIOSFODNN7EXAMPLE"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("export STRIPE_KEY=whsec_abcdef0123456789", "whsec_abcdef0123456789"),
    ("gh ghp_16C7e42F292c6912E7710c838347Ae178B4a done", "16C7e42F292c"),
    ("slack xoxb-123456789012-abcdefABCDEF", "abcdefABCDEF"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc.def123456'", "eyJhbGciOiJIUzI1NiJ9abc"),
    ("password=hunter2 and more", "hunter2"),
    ('DB_PASSWORD: "s3cr3t value"', "s3cr3t"),
    ("api_key = 0123456789abcdef", "0123456789abcdef"),
    ("postgres://app:pa55word@db.internal/billing", "pa55word"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA truncated paste", "MIIEpAIBAAKCAQEA"),
])
def test_redaction(text: str, leaked: str) -> None:
    clean = redact(text)
    assert leaked not in clean
    assert "[REDACTED" in clean


def test_redaction_keeps_ordinary_text() -> None:
    text = "Use the token bucket for rate limits; the password reset page links to /help (see task-1234)."
    assert redact(text) == text


def test_cli_log_appends_redacted_block(vault: Vault) -> None:
    result = cli("log", "--vault", str(vault.root), "--section", "decisions", "--label", "shell",
                 "🔴 Rotate keys monthly; old key was AKIAIOSFODNN7EXAMPLE")
    assert result.returncode == 0, result.stderr
    files = list(vault.logs.glob("*.md"))
    assert len(files) == 1
    text = files[0].read_text()
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "[REDACTED:aws-key]" in text
    assert "### Decisions\n- 🔴 Rotate keys monthly" in text and "— shell" in text
    piped = cli("log", "--vault", str(vault.root), "-", input_text="### What Worked\n- Bisecting with git worked\n")
    assert piped.returncode == 0, piped.stderr
    assert "### What Worked\n- Bisecting with git worked" in files[0].read_text()
    empty = cli("log", "--vault", str(vault.root), "-", input_text="\n")
    assert empty.returncode == 1 and "nothing to log" in empty.stderr


@pytest.mark.parametrize(("text", "expected"), [
    ("Yesterday we moved the cron job", "On 2026-11-23 we moved the cron job"),
    ("the flaky test has failed since yesterday", "the flaky test has failed since 2026-11-23"),
    ("Last week we switched to uv", "The week of 2026-11-16 we switched to uv"),
    ("agreed on this today", "agreed on this on 2026-11-24"),
    ("shipped 3 days ago", "shipped on 2026-11-21"),
    ("the outage last Friday", "the outage on 2026-11-20 (Friday)"),
    ("budget reviewed last month", "budget reviewed in 2026-10"),
    ("nothing relative here 2026-01-01", "nothing relative here 2026-01-01"),
])
def test_relative_dates_become_absolute(text: str, expected: str) -> None:
    assert absolutize(text, date(2026, 11, 24)) == expected  # a Tuesday


def test_notes_are_read_like_sessions_but_do_not_count_toward_the_gate() -> None:
    text = ("# 2026-11-24\n\n## Note 09:00 UTC — shell: api\n- 🔴 a quick note\n\n"
            "## Session 10:00 UTC — claude-code: api (SessionEnd)\n- did the work\n")
    parsed = parse_log(text, date(2026, 11, 24))
    assert [(s.label, s.counted) for s in parsed.sessions] == [("shell: api", False),
                                                               ("claude-code: api (SessionEnd)", True)]
    assert [o.text for o in parsed.observations()] == ["a quick note", "did the work"]
    assert len(parsed.sessions_since(0)) == 2 and len(parsed.counted_since(0)) == 1


def test_what_counts_toward_the_gate_and_how_status_shows_waiting_logs(services: Services) -> None:
    import json

    from wikiwright.memory.consolidate import Consolidator
    from wikiwright.runtime.status import gather

    vault = services.vault
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    assert "new note" in cli("log", "note 0", env=env).stdout
    for n in range(1, 5):  # five one-line notes are not five sessions
        append_session(vault.logs, f"note {n}", counted=False)

    def gate_sessions() -> int:
        return Consolidator(services.config, vault, services.ledger, services.repo).gate().sessions

    assert gate_sessions() == 0
    result = cli("log", "--session", "--label", "pairing", "worked on the export with Sam", env=env)
    assert result.returncode == 0 and "new session" in result.stdout
    assert gate_sessions() == 1
    # The daemon's watcher records the log in the ledger; status shows it waiting for the gate.
    [log_file] = vault.logs.glob("*.md")
    services.registrar.register(log_file)
    last = int((time.time() - 10 * 3600) * 1000)  # consolidated 10 h ago: 14 h of the 24 left
    (vault.state / "consolidation-lock").write_text(json.dumps({"last_consolidated_at": last, "locked_by": None,
                                                                "locked_at": None}))
    data = gather(services.config, vault)
    assert data["pending"] == [] and data["counts"]["pending"] == 0
    assert data["consolidation"]["logs"] == [f"logs/{log_file.name}"]
    assert data["consolidation"]["line"] == "waiting for consolidation (gate: 1/5 sessions, 14 h left)"
    shown = cli("status", env=env).stdout
    assert f"Logs:    logs/{log_file.name} waiting for consolidation (gate: 1/5 sessions, 14 h left)" in shown
    assert "\nPending:" not in shown
