"""What a running daemon saves the command line (issue 12): wall times of the real CLI.

- ``status``: in its own process (no daemon) and handed to a running daemon, against a bare
  ``python -c pass`` measured in the same run;
- one-shot ``ingest`` of a small note through the project's scripted model server (replies at
  once, so the wall time is the time excluding the model): in-process (no daemon: the command
  imports litellm) and handed to a running daemon (target <= 1 s);
- the daemon's time to READY=1 (systemd notify protocol) with a model configured, and the time
  until its model client has loaded in the background.

    .venv/bin/python bench/bench_daemon.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.llm_server import ScriptedServer  # noqa: E402
from tests.model_helpers import reply  # noqa: E402

PY = sys.executable
ANSWER = reply(title="A note", summary="A short note about the billing service.")


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"{args} failed: {result.stderr[-1500:]}")
    return elapsed


def median_of(runs: int, make: object) -> float:
    return statistics.median(make() for _ in range(runs))  # type: ignore[operator]


class Notify:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.path = path
        self.ready_at: float | None = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096).decode()
            except OSError:
                return
            if "READY=1" in data.splitlines() and self.ready_at is None:
                self.ready_at = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(lambda request: ANSWER) as server:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "WIKIWRIGHT_WATCH_DEBOUNCE_SECONDS": "0.3", **server.env()}
        root = Path(tmp) / "vault"
        subprocess.run([PY, "-m", "wikiwright", "init", "--no-default", str(root)], env=env, check=True,
                       capture_output=True)
        cli = [PY, "-m", "wikiwright"]
        counter = iter(range(10_000))

        def ingest_once() -> float:
            n = next(counter)
            note = Path(tmp) / f"note-{n}.md"
            note.write_text(f"# Note {n}\n\nA short note number {n} about the billing service.\n")
            return timed([*cli, "ingest", "--vault", str(root), str(note)], env)

        bare = median_of(args.runs, lambda: timed([PY, "-c", "pass"], env))
        status_alone = median_of(args.runs, lambda: timed([*cli, "status", "--vault", str(root)], env))
        ingest_alone = median_of(max(1, args.runs // 2), ingest_once)

        notify = Notify(Path(tmp) / "notify.sock")
        log = open(Path(tmp) / "daemon.log", "w")  # noqa: SIM115
        started = time.perf_counter()
        proc = subprocess.Popen([*cli, "run", "--vault", str(root)], env={**env, "NOTIFY_SOCKET": str(notify.path)},
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            while notify.ready_at is None and time.perf_counter() - started < 120:
                time.sleep(0.01)
            ready = (notify.ready_at or float("nan")) - started
            while "model client loaded" not in (Path(tmp) / "daemon.log").read_text() and proc.poll() is None:
                time.sleep(0.05)
            loaded = time.perf_counter() - started
            status_daemon = median_of(args.runs, lambda: timed([*cli, "status", "--vault", str(root)], env))
            ingest_daemon = median_of(args.runs, ingest_once)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            log.close()
    print(f"{'measure (median of runs)':<52} {'seconds':>8} {'vs python -c pass':>18}")
    rows = [
        ("python -c pass (baseline)", bare),
        ("status, no daemon (in-process)", status_alone),
        ("status, handed to the running daemon", status_daemon),
        ("one-shot ingest, no daemon (imports litellm)", ingest_alone),
        ("one-shot ingest, handed to the running daemon", ingest_daemon),
        ("daemon start -> READY=1 (model configured)", ready),
        ("daemon start -> model client loaded (background)", loaded),
    ]
    for name, seconds in rows:
        print(f"{name:<52} {seconds:>8.3f} {seconds / bare:>17.1f}x")
    print(f"\nload average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
