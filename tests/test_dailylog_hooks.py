"""The hooks: Claude Code (recorded payload + transcript), git post-commit, the shell function."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.memory.dailylog import parse_log
from wikiwright.memory.hooks import read_transcript

from tests.helpers import REPO_ROOT, cli, git, wait_for

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


def _payload(name: str, transcript: Path) -> str:
    return (FIXTURES / name).read_text().replace("__TRANSCRIPT__", str(transcript))


def _log_text(vault: Vault) -> str:
    return "".join(p.read_text() for p in sorted(vault.logs.glob("*.md")))


def test_transcript_digest_keeps_typed_messages_and_final_summary(tmp_path: Path) -> None:
    digest = read_transcript(FIXTURES / "transcript.jsonl")
    assert len(digest.user_messages) == 2
    assert digest.user_messages[0].startswith("The invoice export times out")
    assert digest.user_messages[1].startswith("Also: never run the export against the primary")
    assert digest.final_text.startswith("Done. Summary of this session")
    assert digest.title == "Invoice export pagination and read replica"
    assert digest.end_offset == (FIXTURES / "transcript.jsonl").stat().st_size
    # A half-written last line is left for the next call.
    partial = tmp_path / "t.jsonl"
    data = (FIXTURES / "transcript.jsonl").read_bytes()
    partial.write_bytes(data + b'{"type":"user","message":{"role":"user","content":"unfinished')
    assert read_transcript(partial).end_offset == len(data)


def test_claude_code_hook_logs_a_session_once(vault: Vault, tmp_path: Path) -> None:
    transcript = tmp_path / "0d9b6a52.jsonl"
    shutil.copy(FIXTURES / "transcript.jsonl", transcript)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    first = cli("hook", "claude-code", env=env, input_text=_payload("pre-compact.json", transcript))
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""
    text = _log_text(vault)
    assert "— claude-code: billing (PreCompact)" in text
    assert "### Requests\n- The invoice export times out for accounts with more than 10k invoices." in text
    assert "- Also: never run the export against the primary database, always use the read replica." in text
    # Not typed by the person: caveats, slash commands, tool results, sub-agent prompts.
    for unwanted in ("Caveat:", "<command-name>", "tool_result", "The file has been updated", "subagent prompt"):
        assert unwanted not in text
    assert "### What Changed\n- Session: Invoice export pagination and read replica" in text
    assert "- The invoice export now pages through invoices 500 at a time" in text
    assert "paginate(invoices" not in text  # code blocks of the summary are left out
    assert "sk-proj-Abc123" not in text and "[REDACTED:api-key]" in text
    # The session goes on, compacts, then ends: only what is new is logged.
    with transcript.open("ab") as handle:
        handle.write((FIXTURES / "transcript-after-compact.jsonl").read_bytes())
    second = cli("hook", "claude-code", env=env, input_text=_payload("session-end.json", transcript))
    assert second.returncode == 0, second.stderr
    text = _log_text(vault)
    parsed = parse_log(text, date.today())
    assert len(parsed.sessions) == 2
    assert text.count("The invoice export times out") == 1
    assert "- Add a retry with backoff around the replica connection." in text
    assert "This session is being continued" not in text  # the compact summary is not a message
    assert "(SessionEnd)" in text
    # SessionEnd again with nothing new: nothing appended.
    before = text
    third = cli("hook", "claude-code", env=env, input_text=_payload("session-end.json", transcript))
    assert third.returncode == 0 and _log_text(vault) == before


def test_claude_code_hook_never_fails_the_agent(vault: Vault, tmp_path: Path) -> None:
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    cases = [
        "not json at all",
        '{"session_id": "x"}',
        _payload("session-end.json", tmp_path / "missing.jsonl"),
        "[1, 2, 3]",
        "",
    ]
    for payload in cases:
        result = cli("hook", "claude-code", env=env, input_text=payload)
        assert result.returncode == 0, (payload, result.stderr)
    assert _log_text(vault) == ""
    no_vault = {k: v for k, v in os.environ.items() if k != "WIKIWRIGHT_VAULT"}
    result = cli("hook", "claude-code", env=no_vault, cwd=tmp_path, input_text=_payload("session-end.json", tmp_path))
    assert result.returncode == 0 and "skipped" in result.stderr


def test_claude_code_hook_is_time_bounded(vault: Vault) -> None:
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root), "WIKIWRIGHT_HOOK_TIMEOUT": "1"}
    started = time.monotonic()
    # stdin is never closed: the hook must give up on its own, with exit 0.
    proc = subprocess.Popen([sys.executable, "-m", "wikiwright", "hook", "claude-code"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        code = proc.wait(timeout=20)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
    assert code == 0
    assert time.monotonic() - started < 10


def _code_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "api"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def test_git_post_commit_hook_script(vault: Vault, tmp_path: Path) -> None:
    repo = _code_repo(tmp_path)
    hook = repo / ".git" / "hooks" / "post-commit"
    shutil.copy(REPO_ROOT / "hooks" / "git-post-commit", hook)
    hook.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "wikiwright"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m wikiwright \"$@\"\n")
    launcher.chmod(0o755)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for n, subject in enumerate(["Page invoices 500 at a time", "Use the read replica for exports"]):
        (repo / f"f{n}.txt").write_text(str(n))
        subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", subject, "-m", "body text"], check=True, env=env)
        wait_for(lambda s=subject: s in _log_text(vault), timeout=20, what=f"commit {subject!r} logged")
    text = _log_text(vault)
    parsed = parse_log(text, date.today())
    assert len(parsed.sessions) == 1  # a day's commits of one repository: one session
    assert "— git: api" in text and "body text" not in text
    assert [o.text.split(" (")[0] for o in parsed.observations()] == [
        "Page invoices 500 at a time", "Use the read replica for exports"]


def test_git_post_commit_skips_the_vault_itself(vault: Vault) -> None:
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    result = cli("hook", "git-post-commit", "--repo", str(vault.root), env=env)
    assert result.returncode == 0 and _log_text(vault) == ""


def test_shell_function(vault: Vault, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "wikiwright"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -m wikiwright \"$@\"\n")
    launcher.chmod(0o755)
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    script = (f". {REPO_ROOT / 'hooks' / 'wikiwright.sh'}\n"
              "wwlog '🔴 Deploys go through the staging gate'\n"
              "echo 'Caching totals did not help; token=abcdef123456' | wwlog -s \"what didn't\" -\n"
              "wwlog\n")
    result = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    text = _log_text(vault)
    assert "- 🔴 Deploys go through the staging gate" in text
    assert "### What Didn't\n- Caching totals did not help; token=[REDACTED]" in text
    assert text.count("## Note") == 2 and "## Session" not in text  # a person's notes, not sessions
