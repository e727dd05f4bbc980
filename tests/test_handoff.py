"""The daemon does the work when it runs (issue 12): the control socket, the one-shot commands
handed to a running daemon, a stale socket, commands that never import litellm, and a daemon
ready (watching, queueing) before its model client has loaded.

Real daemons in subprocesses, a real Unix socket, the real CLI, the scripted model server."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

from tests.helpers import NotifySocket, cli, daemon_log, ingest_commits, start_daemon, wait_for
from tests.llm_server import ScriptedServer
from tests.model_helpers import reply

SOURCE = "# Billing\n\nThe billing API answers within 200 ms.\n"
ANSWER = reply({"op": "create_page", "page": "billing-api", "type": "entity", "title": "Billing API",
                "summary": "The billing API.", "body": "The billing API answers within 200 ms."})


def new_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    result = cli("init", "--no-default", str(root))
    assert result.returncode == 0, result.stderr
    return root


def control_socket(root: Path) -> Path:
    return root / ".wikiwright" / "control.sock"


def stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30)


def imported(stderr: str) -> set[str]:
    """Top-level modules a `python -X importtime` run imported."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[-1].strip().split(".")[0])
    return names


def test_ready_before_the_model_loads_then_a_one_shot_ingest_goes_through_the_daemon(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = new_vault(tmp_path)
    # A socket file nobody listens on (a daemon killed with SIGKILL leaves one): removed at start.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(control_socket(root)))
    stale.close()
    hold = tmp_path / "release-the-model-load"
    notify = NotifySocket(tmp_path / "notify.sock")
    with ScriptedServer([], default=ANSWER) as server:
        env = {**os.environ, **server.env()}
        proc = start_daemon(root, {**env, "NOTIFY_SOCKET": str(notify.path),
                                   "WIKIWRIGHT_TEST_HOLD_MODEL_LOAD": str(hold)})
        daemons.append(proc)
        try:
            wait_for(lambda: "READY=1" in notify.lines(), timeout=30, what="READY=1")
        finally:
            notify.close()
        assert stat.S_IMODE(control_socket(root).stat().st_mode) == 0o600
        # The model client is held back: the watcher still queues a dropped file at once.
        (root / "raw" / "dropped.md").write_text(SOURCE)

        def pending_in_status() -> bool:
            result = cli("status", "--json", "--vault", str(root), env=env)
            assert result.returncode == 0, result.stderr
            return any(row["path"] == "raw/dropped.md" for row in json.loads(result.stdout)["pending"])

        wait_for(pending_in_status, timeout=20, what="the dropped file queued while the model loads")
        assert "model client loaded" not in daemon_log(proc)
        assert ingest_commits(root) == []
        hold.touch()
        wait_for(lambda: len(ingest_commits(root)) == 1, timeout=60, what="the queued file ingested")
        assert "model client loaded" in daemon_log(proc)

        # A one-shot ingest hands the files to the daemon (a folder gives its files, as it does
        # without a daemon): this process never imports litellm.
        folder = tmp_path / "handed"
        folder.mkdir()
        (folder / "handed.md").write_text(SOURCE.replace("200 ms", "150 ms"))
        result = subprocess.run([sys.executable, "-X", "importtime", "-m", "wikiwright", "ingest",
                                 "--vault", str(root), str(folder)],
                                env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "litellm" not in imported(result.stderr)
        assert "[1/1] raw/handed/handed.md: ingested" in result.stdout
        assert f"[daemon pid {proc.pid}]" in result.stdout  # streamed back by the daemon that did it
        assert "queued" not in result.stdout
        assert len(ingest_commits(root)) == 2
        assert "raw/handed/handed.md: ingested" in daemon_log(proc)
        assert len(server.requests) >= 2  # both ingests called the model (in the daemon)
        # lint and consolidate are handed over too; their output streams back as they print it.
        lint = cli("lint", "--vault", str(root), env=env)
        assert lint.returncode in (0, 1) and lint.stdout, lint.stderr
        check = cli("consolidate", "--check", "--vault", str(root), env=env)
        assert check.returncode == 1 and "sessions: closed 0 logged since" in check.stdout, check.stderr
        assert "running `lint` for a client" in daemon_log(proc)
        assert "running `consolidate` for a client" in daemon_log(proc)
        # A client whose environment configures wikiwright differently is declined: it runs alone.
        other = cli("status", "--json", "--vault", str(root), env={**env, "WIKIWRIGHT_LLM_DAILY_CAP_USD": "7"})
        assert other.returncode == 0 and json.loads(other.stdout)["daemon"]["running"] is True
        if os.getuid() == 0:
            # Another user cannot even connect (mode 0600).
            probe = subprocess.run(
                [sys.executable, "-c", "import os, socket, sys; os.setgid(65534); os.setuid(65534); "
                 "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])",
                 str(control_socket(root))], capture_output=True, text=True, timeout=30)
            assert probe.returncode != 0 and "PermissionError" in probe.stderr
        # Without a running daemon the socket is gone; status says so, in this process.
        assert stop(proc) == 0, daemon_log(proc)
    assert not control_socket(root).exists()
    after = cli("status", "--vault", str(root))
    assert "Daemon:  not running" in after.stdout


def test_a_stale_socket_file_falls_back_to_running_in_process(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    # A socket file with nobody listening: what a daemon killed with SIGKILL leaves behind.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(control_socket(root)))
    stale.close()
    assert control_socket(root).is_socket()
    source = tmp_path / "note.md"
    source.write_text(SOURCE)
    result = cli("ingest", "--vault", str(root), str(source))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[1/1] raw/note.md: ingested" in result.stdout and "daemon pid" not in result.stdout
    assert "queued" not in result.stdout
    assert len(ingest_commits(root)) == 1
    status = cli("status", "--vault", str(root))
    assert status.returncode == 0 and "Daemon:  not running" in status.stdout


NO_MODEL_COMMANDS = [["status"], ["status", "--json"], ["search", "billing"], ["lint"], ["history"],
                     ["log", "Deploys go through the staging gate"]]


def test_commands_that_need_no_model_never_import_litellm(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    # One process runs the commands in turn (as the CLI would, in-process: no daemon), noting
    # after each which heavy libraries are loaded by then.
    script = (
        "import json, sys\n"
        "from wikiwright.cli.main import main\n"
        "heavy = ('litellm', 'git', 'watchdog', 'apscheduler', 'wikiwright.door')\n"
        "seen = []\n"
        "for args in json.loads(sys.argv[2]):\n"
        "    code = main([*args, '--vault', sys.argv[1]])\n"
        "    seen.append({'code': code, 'loaded': [m for m in heavy if m in sys.modules]})\n"
        "print(json.dumps(seen), file=sys.stderr)\n"
    )
    with ScriptedServer([]) as server:
        env = {**os.environ, **server.env()}  # a model is configured; these commands must not load it
        result = subprocess.run([sys.executable, "-c", script, str(root), json.dumps(NO_MODEL_COMMANDS)],
                                env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stderr.strip().splitlines()[-1])
    assert [row["code"] in (0, 1) for row in seen] == [True] * len(NO_MODEL_COMMANDS), seen
    # status (run first) loads none of the heavy libraries; no command here loads litellm.
    assert seen[0]["loaded"] == [] and seen[1]["loaded"] == [], seen
    assert all("litellm" not in row["loaded"] for row in seen), seen


def test_a_daemon_whose_model_cannot_load_tells_the_waiting_client_why(
    tmp_path: Path, daemons: list[subprocess.Popen[str]]
) -> None:
    root = new_vault(tmp_path)
    hold = tmp_path / "release-the-model-load"
    with ScriptedServer([], default=ANSWER) as server:
        # A model string litellm does not understand: found only once the daemon loads litellm.
        env = {**os.environ, **server.env(model="not-a-provider-model"), "WIKIWRIGHT_TEST_HOLD_MODEL_LOAD": str(hold)}
        proc = start_daemon(root, env)
        daemons.append(proc)
        wait_for(control_socket(root).exists, timeout=30, what="the control socket")
        source = tmp_path / "note.md"
        source.write_text(SOURCE)
        client = subprocess.Popen([sys.executable, "-m", "wikiwright", "ingest", "--vault", str(root), str(source)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: "running `ingest` for a client" in daemon_log(proc), timeout=30, what="the handoff")
            hold.touch()
            _out, err = client.communicate(timeout=120)
        finally:
            if client.poll() is None:
                client.kill()
        assert client.returncode == 1
        # Not a bare "the daemon is stopping": the client is told why, and the file stays queued.
        assert "the daemon is stopping (llm.model 'not-a-provider-model' is not a model string" in err, err
        assert proc.wait(timeout=60) != 0
    status = cli("status", "--json", "--vault", str(root))
    assert status.returncode == 0, status.stderr
    assert [row["path"] for row in json.loads(status.stdout)["pending"]] == ["raw/note.md"]


def _cli_imports() -> dict[str, set[str]]:
    """For each module of cli/, the cli/ modules it imports (at the top or inside a function)."""
    import ast

    folder = Path(__file__).resolve().parent.parent / "daemon" / "cli"
    names = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level == 1:  # from . import x / from .x import y
                    found |= {module.split(".")[0]} if module else {a.name for a in node.names}
                elif node.level == 2 and module.startswith("cli"):
                    found |= {module.split(".")[1]} if "." in module else {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("wikiwright.cli.")}
        graph[path.stem] = (found & names) - {path.stem}
    return graph


def test_the_command_line_has_no_import_circle_and_the_daemon_side_lives_in_runtime() -> None:
    """Daemon-side code is not in cli/ (issue 24: `cli/handoff.py` held the daemon's executor and
    reached into `cli/ingest_cmds.py`'s private functions, a circle through `common.py`)."""
    graph = _cli_imports()
    circles = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                circles.append([*path[path.index(nxt):], nxt])
            elif len(path) < len(graph):
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert not circles, circles[:5]
    assert graph["handoff"] == set()  # the client half: nothing else of cli/
    from wikiwright.runtime import handoff

    assert callable(handoff.make_executor) and callable(handoff.ingest_in_daemon)


def test_status_of_a_vault_that_syncs_imports_neither_the_door_nor_gitpython(tmp_path: Path) -> None:
    """With git.remote set, status still shows the sync line (ahead/behind, the last round) from
    the ledger and the refs. Old code: it imported door/sync.py, and with it the door."""
    root = new_vault(tmp_path)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(remote)], check=True)
    script = (
        "import json, sys\n"
        "from wikiwright.cli.main import main\n"
        "code = main(['status', '--json', '--vault', sys.argv[1]])\n"
        "heavy = ('git', 'wikiwright.door', 'watchdog', 'apscheduler', 'litellm')\n"
        "print(json.dumps({'code': code, 'loaded': [m for m in heavy if m in sys.modules]}), file=sys.stderr)\n"
    )
    env = {**os.environ, "WIKIWRIGHT_GIT_REMOTE": "origin"}
    result = subprocess.run([sys.executable, "-c", script, str(root)], env=env, capture_output=True, text=True,
                            timeout=120)
    seen = json.loads(result.stderr.strip().splitlines()[-1])
    assert seen == {"code": 0, "loaded": []}, seen
    shown = json.loads(result.stdout)
    assert shown["sync"]["enabled"] is True and shown["sync"]["remote"] == "origin", shown["sync"]
