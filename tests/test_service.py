"""The background service (issue 6): unit and plist, install/uninstall, sd_notify, health, logs.

The unit is checked by the real ``systemd-analyze verify``; install runs the real CLI with a
stand-in ``systemctl`` on PATH that records its arguments (there is no user manager in a
test); the notify protocol is checked with a real AF_UNIX datagram socket receiving what a
real ``wikiwright run`` sends.
"""

from __future__ import annotations

import io
import json
import logging
import os
import plistlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from wikiwright.core.config import load_config
from wikiwright.core.logsetup import LOG_FILE_NAME, escape_controls, log_dir, make_handler, redact
from wikiwright.core.vault import Vault
from wikiwright.runtime.context import VaultContext
from wikiwright.runtime.daemon import Daemon
from wikiwright.runtime.service import LAUNCHD_LABEL, render_plist, render_unit, systemd_escape

from tests.fault_tools import heartbeat, launch, new_vault, reap_daemons, spawn, stop, wait_settled  # noqa: F401
from tests.helpers import NotifySocket, cli, daemon_log, wait_for

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


# -- the unit file ------------------------------------------------------------------------------

def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE
    return subprocess.run([SYSTEMD_ANALYZE, "verify", str(unit)], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (not a systemd system)")
@pytest.mark.parametrize("vault_name", ["Wiki", "My Vault 100% $HOME"])
def test_rendered_unit_passes_systemd_analyze_verify(tmp_path: Path, vault_name: str) -> None:
    unit = tmp_path / "units" / "wikiwright.service"
    unit.parent.mkdir()
    text = render_unit(tmp_path / vault_name)
    unit.write_text(text)
    result = _verify(unit)
    assert result.returncode == 0, result.stderr
    # verify only warns (exit 0) on unknown keys or bad values: those must not appear either.
    assert "ignoring" not in result.stderr and "Unknown" not in result.stderr, result.stderr
    for line in ("Type=notify", "NotifyAccess=main", "WatchdogSec=120", "Restart=on-failure",
                 "Environment=PYTHONUNBUFFERED=1 LITELLM_LOCAL_MODEL_COST_MAP=True GIT_OPTIONAL_LOCKS=0",
                 "EnvironmentFile=-%h/.config/wikiwright/env", "WantedBy=default.target", "TimeoutStopSec=90",
                 "RestartPreventExitStatus=2 3 4"):
        assert line in text.splitlines()
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line.startswith(f"ExecStart={os.path.abspath(sys.executable)} -m wikiwright run --vault ")
    assert not re.search(r"@[A-Z_]+@", text)  # every placeholder filled


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (not a systemd system)")
def test_verify_catches_an_interpreter_that_does_not_exist(tmp_path: Path) -> None:
    """The control for the test above: verify really checks ExecStart."""
    unit = tmp_path / "wikiwright.service"
    unit.write_text(render_unit(tmp_path / "Wiki", python="/nonexistent/bin/python3"))
    result = _verify(unit)
    assert result.returncode != 0
    assert "/nonexistent/bin/python3" in result.stderr


def test_systemd_escape_keeps_specifiers_and_variables_literal() -> None:
    assert systemd_escape("/plain/path") == "/plain/path"
    assert systemd_escape("/a b/100%") == '"/a b/100%%"'
    assert systemd_escape("$HOME") == "$$HOME"
    assert systemd_escape('say "hi"') == '"say \\"hi\\""'


def test_launchd_plist_parses_and_names_absolute_paths(tmp_path: Path) -> None:
    data = plistlib.loads(render_plist(tmp_path / "Wiki"))
    assert data["Label"] == LAUNCHD_LABEL
    assert data["ProgramArguments"] == [os.path.abspath(sys.executable), "-m", "wikiwright", "run", "--vault",
                                        str(tmp_path / "Wiki")]
    assert all(Path(arg).is_absolute() for arg in data["ProgramArguments"][::5])
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["WorkingDirectory"] == str(tmp_path / "Wiki")
    assert Path(data["StandardErrorPath"]).parent == log_dir()
    env = data["EnvironmentVariables"]
    assert env["PYTHONUNBUFFERED"] == "1" and env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["PATH"].split(":")[0] == os.path.dirname(os.path.abspath(sys.executable))


# -- install / uninstall with a recording systemctl ------------------------------------------------

def _fake_tools(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A bin folder with systemctl/loginctl stand-ins that log their arguments."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    for tool, body in (
        ("systemctl", 'case "$*" in *is-active*) exit 3;; esac\nexit 0'),
        ("loginctl", 'echo "Linger=no"'),
    ):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{calls}"\n{body}\n')
        script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env["USER"] = "someone"
    return env, calls


def test_service_install_is_idempotent_and_uninstall_removes_it(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    env, calls = _fake_tools(tmp_path)
    unit = Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "wikiwright.service"

    printed = cli("service", "print", "--manager", "systemd", "--vault", str(root), env=env)
    assert printed.returncode == 0, printed.stderr
    assert not unit.exists() and not calls.exists()  # print shows the file only

    first = cli("service", "install", "--manager", "systemd", "--vault", str(root), env=env)
    assert first.returncode == 0, first.stderr
    assert unit.read_text() == printed.stdout
    assert f"--vault {root}" in unit.read_text()
    log = calls.read_text().splitlines()
    assert "systemctl --user daemon-reload" in log
    assert "systemctl --user enable --now wikiwright.service" in log
    assert "loginctl enable-linger someone" in first.stdout  # the linger hint, since Linger=no
    assert not list(unit.parent.glob("*wikiwright-tmp*"))

    calls.unlink()
    mtime = unit.stat().st_mtime_ns
    second = cli("service", "install", "--manager", "systemd", "--vault", str(root), env=env)
    assert second.returncode == 0, second.stderr
    assert "already up to date" in second.stdout
    assert unit.stat().st_mtime_ns == mtime
    assert "systemctl --user daemon-reload" not in calls.read_text()

    status = cli("service", "status", "--manager", "systemd", env=env)
    assert status.returncode == 1  # the stand-in says "inactive"
    assert str(unit) in status.stdout

    removed = cli("service", "uninstall", "--manager", "systemd", env=env)
    assert removed.returncode == 0, removed.stderr
    assert not unit.exists()
    assert "systemctl --user disable --now wikiwright.service" in calls.read_text()


def test_service_install_without_a_user_session_says_what_to_do(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    env, _calls = _fake_tools(tmp_path)
    failing = Path(env["PATH"].split(":")[0]) / "systemctl"
    failing.write_text('#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    result = cli("service", "install", "--manager", "systemd", "--vault", str(root), env=env)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "Failed to connect to bus" in result.stderr and "enable-linger" in result.stderr


# -- sd_notify from a real daemon -------------------------------------------------------------------

def test_run_speaks_the_notify_protocol(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    notify = NotifySocket(tmp_path / "notify.sock")
    env = dict(os.environ, NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC="1000000")
    proc = spawn(root, env)
    try:
        wait_for(lambda: "READY=1" in notify.lines(), timeout=20, what="READY=1")
        ready_at = notify.lines().index("READY=1")
        wait_for(lambda: notify.lines().count("WATCHDOG=1") >= 2, timeout=10, what="two watchdog pings")
        assert any(line.startswith("STATUS=queue 0, watcher alive, healthy") for line in notify.lines())
        assert notify.lines().index("WATCHDOG=1") > ready_at  # no ping before the daemon is ready
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, daemon_log(proc)
        assert "STOPPING=1" in notify.lines()
    finally:
        if proc.poll() is None:
            proc.kill()
        notify.close()


def test_no_watchdog_ping_while_a_part_is_dead(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notify = NotifySocket(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(notify.path))
    monkeypatch.setenv("WATCHDOG_USEC", "200000")
    daemon = Daemon(VaultContext(load_config(vault.root), vault))
    daemon._lock.acquire()
    try:
        daemon.setup()
        daemon.once()
        wait_for(lambda: "WATCHDOG=1" in notify.lines(), timeout=5, what="a ping while healthy")
        # A worker thread that has ended: the daemon must stop vouching for itself.
        dead = threading.Thread(target=lambda: None, name="worker-9")
        dead.start()
        dead.join()
        daemon._threads.append(dead)
        before = len(notify.lines())
        for _ in range(2):
            daemon.once()
        after = notify.lines()[before:]
        assert "WATCHDOG=1" not in after
        assert any("unhealthy: thread worker-9 has stopped" in line for line in after)
        assert heartbeat(vault.root)["problems"] == ["thread worker-9 has stopped"]
        daemon._threads.remove(dead)
        daemon.once()
        wait_for(lambda: "WATCHDOG=1" in notify.lines()[before:], timeout=5, what="pings again once healthy")
    finally:
        daemon.stop_requested.set()
        daemon.teardown()
        notify.close()


# -- liveness in status and the heartbeat ------------------------------------------------------------

def test_status_shows_liveness_from_the_heartbeat(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    proc = launch(root)
    (root / "raw" / "a.md").write_text("# A\n\nSomething about the billing API limits and more text.\n")
    wait_settled(root, ["raw/a.md"], proc=proc)
    wait_for(lambda: heartbeat(root).get("last_ingest"), timeout=10, what="last_ingest in the heartbeat")
    data = json.loads(cli("status", "--json", "--vault", str(root)).stdout)["daemon"]
    assert data["running"] and data["watcher_alive"] and data["healthy"] and data["problems"] == []
    assert data["last_rescan"] > 0 and data["missed_by_watcher"] == 0
    text = cli("status", "--vault", str(root)).stdout
    assert "watcher alive" in text and "last ingest" in text and "UNHEALTHY" not in text
    assert stop(proc) == 0
    assert heartbeat(root)["stopped"] is True


# -- logs -----------------------------------------------------------------------------------------

def test_log_lines_redact_keys_and_escape_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "plain-secret-value-1234")
    stream = io.StringIO()
    handler = make_handler(logging.StreamHandler(stream))
    logger = logging.getLogger("wikiwright.test_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("calling with key %s and header %s", "sk-ant-api03-abcdefghijklmnopqrstuv",
                       "Authorization: Bearer abcdefghijklmnop")
        logger.warning("config api_key=hunter2hunter2 and value plain-secret-value-1234")
        logger.warning("%s: ingested", "raw/evil\nERROR forged line\x1b[31m.md")
        try:
            raise ValueError("boom with sk-proj-ABCDEFGHIJKLMNOPQRST")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    lines = out.splitlines()
    assert len(lines) == 4  # one line per event, the traceback included
    for secret in ("sk-ant-api03", "abcdefghijklmnop", "hunter2", "plain-secret-value", "sk-proj-ABC"):
        assert secret not in out
    assert "[REDACTED]" in lines[0] and "api_key=[REDACTED]" in lines[1]
    assert "raw/evil\\nERROR forged line\\x1b[31m.md: ingested" in lines[2]
    assert lines[3].count("Traceback") == 1 and "\\n" in lines[3]
    assert redact("tokens in 120, out 40") == "tokens in 120, out 40"  # usage figures are not secrets
    assert escape_controls("a\tb\u2028c") == "a\\tb\\u2028c"


def test_run_writes_a_rotating_log_file_with_escaped_names(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    env = dict(os.environ, OPENAI_API_KEY="sk-live-THISMUSTNOTAPPEARANYWHERE0123")
    proc = launch(root, env)
    name = "evil\nERROR fake entry.md"
    (root / "raw" / name).write_text("# Evil\n\nA file whose name tries to forge a log line, sadly.\n")
    wait_settled(root, ["raw/evil\\nERROR fake entry.md"], proc=proc)  # the ledger keeps names on one line
    assert stop(proc) == 0
    logfile = Path(env["XDG_STATE_HOME"]) / "wikiwright" / "log" / LOG_FILE_NAME
    text = logfile.read_text()
    assert "raw/evil\\nERROR fake entry.md: ingested" in text
    assert not any(line.startswith("ERROR fake") for line in text.splitlines())
    assert "THISMUSTNOTAPPEAR" not in text and "THISMUSTNOTAPPEAR" not in daemon_log(proc)
    assert time.time() - logfile.stat().st_mtime < 60
