"""Soak: a real ``wikiwright run`` under continuous drops; RSS, open files and threads over time.

    .venv/bin/python bench/bench_soak.py                 # 30 minutes (issue 6)
    .venv/bin/python bench/bench_soak.py --minutes 5     # shorter
    .venv/bin/python bench/bench_soak.py --minutes 5 --rate 4 --sample 15

A private HOME and vault in a temp folder; the daemon runs the offline engine. A writer
drops ``--rate`` distinct sources a second into raw/ for the whole run. Every ``--sample``
seconds the daemon's RSS, open file descriptors and threads are read from /proc, with the
ledger's ingested count and queue length. At the end: the samples table, then for each
figure the mean of the first third after warm-up against the mean of the last third (the
ratio is the drift; "flat" when within ``--tolerance``), and the doctor's verdict.
Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def isolate(base: Path) -> dict[str, str]:
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Soak Person\n\temail = soak@example.com\n"
                         "[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WIKIWRIGHT_") and k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".state"),
        "XDG_DATA_HOME": str(home / ".share"), "XDG_CACHE_HOME": str(home / ".cache"),
        "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })
    return env


def proc_figures(pid: int) -> tuple[float, int, int]:
    """(RSS in MiB, open file descriptors, threads) of ``pid``."""
    rss_kib = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kib = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kib / 1024, fds, threads


def ledger_counts(root: Path) -> tuple[int, int]:
    try:
        db = sqlite3.connect(f"file:{root / '.wikiwright' / 'state.db'}?mode=ro", uri=True, timeout=10)
        try:
            done = db.execute("SELECT count(*) FROM files WHERE state='ingested'").fetchone()[0]
            queued = db.execute("SELECT count(*) FROM files WHERE state IN ('pending','running')").fetchone()[0]
        finally:
            db.close()
        return int(done), int(queued)
    except sqlite3.Error:
        return -1, -1


class Writer(threading.Thread):
    def __init__(self, raw: Path, rate: float, pages: int = 0) -> None:
        super().__init__(daemon=True)
        self.raw = raw
        self.rate = rate
        # 0: every drop is a new file (the wiki grows by a page a drop); N: new versions of N
        # files in turn (the wiki stays at N source pages, so any growth is the daemon's own).
        self.pages = pages
        self.count = 0
        self.stop = threading.Event()

    def run(self) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self.stop.is_set():
            n = self.count
            slot = n % self.pages if self.pages else n
            folder = self.raw / f"day{slot // 500:03d}"
            folder.mkdir(exist_ok=True)
            tmp = folder / f".s{slot:06d}.md.part"
            tmp.write_text(f"# Soak source {slot}\n\nSoak source number {slot} mentions the billing API and "
                           f"the archive. Unique line {n * 7919}.\nAnother sentence for the summary.\n")
            os.rename(tmp, folder / f"s{slot:06d}.md")  # as a browser or rsync finishes a download
            self.count += 1
            next_at += interval
            self.stop.wait(max(0.0, next_at - time.monotonic()))


def flat(values: list[float], warmup: int, tolerance: float) -> tuple[float, float, float, bool]:
    """(early mean, late mean, late/early, flat?) over the samples after warm-up."""
    body = values[warmup:]
    if len(body) < 3:
        return float("nan"), float("nan"), float("nan"), False
    third = max(1, len(body) // 3)
    early = statistics.fmean(body[:third])
    late = statistics.fmean(body[-third:])
    ratio = late / early if early else float("inf")
    return early, late, ratio, ratio <= 1 + tolerance


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the soak (default 30)")
    parser.add_argument("--rate", type=float, default=2.0, help="sources dropped per second (default 2)")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples (default 30)")
    parser.add_argument("--warmup", type=float, default=0.2, help="share of samples treated as warm-up")
    parser.add_argument("--warmup-minutes", type=float, default=6.0,
                        help="warm-up lasts at least this long: every 5-minute periodic job (rescan, "
                             "consolidation check) has run once and its executor threads exist (default 6)")
    parser.add_argument("--tolerance", type=float, default=0.10, help="allowed late/early growth (default 10%%)")
    parser.add_argument("--pages", type=int, default=0,
                        help="cycle new versions of this many files instead of adding a file per drop, so "
                             "the wiki stops growing and any growth left is the daemon's (default 0: grow)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        print("bench_soak needs Linux /proc", file=sys.stderr)
        return 2

    base = Path(tempfile.mkdtemp(prefix="wikiwright-soak-"))
    env = isolate(base)
    root = base / "Wiki"
    subprocess.run([sys.executable, "-m", "wikiwright", "init", "--no-default", str(root)], env=env, check=True,
                   capture_output=True)
    log = (base / "daemon.log").open("w")
    daemon = subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(root)], env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            beat = json.loads((root / ".wikiwright" / "heartbeat.json").read_text())
            if beat.get("pid") == daemon.pid:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    writer = Writer(root / "raw", args.rate, args.pages)
    writer.start()
    started = time.monotonic()
    end = started + args.minutes * 60
    samples: list[tuple[float, float, int, int, int, int, int]] = []
    print(f"soak: {args.minutes:g} min, {args.rate:g} drops/s, sample every {args.sample:g}s, vault {root}")
    print(f"{'t (s)':>7} {'RSS MiB':>8} {'fds':>5} {'threads':>7} {'dropped':>8} {'ingested':>8} {'queue':>6}")
    try:
        while True:
            now = time.monotonic()
            if daemon.poll() is not None:
                print(f"daemon exited with {daemon.returncode}; see {base / 'daemon.log'}")
                return 1
            rss, fds, threads = proc_figures(daemon.pid)
            done, queued = ledger_counts(root)
            samples.append((now - started, rss, fds, threads, writer.count, done, queued))
            print(f"{now - started:7.0f} {rss:8.1f} {fds:5d} {threads:7d} {writer.count:8d} {done:8d} {queued:6d}",
                  flush=True)
            if now >= end:
                break
            time.sleep(min(args.sample, max(0.0, end - now)))
    finally:
        writer.stop.set()
        writer.join()
    drain_from = time.monotonic()
    # Files in raw/ at the end: one per drop, or with --pages the N files cycled through.
    expected = min(writer.count, args.pages) if args.pages else writer.count
    while time.monotonic() - drain_from < 300:
        done, queued = ledger_counts(root)
        if queued == 0 and done >= expected:
            break
        time.sleep(1)
    drain = time.monotonic() - drain_from
    daemon.send_signal(signal.SIGTERM)
    code = daemon.wait(timeout=120)
    warm = max(int(len(samples) * args.warmup), sum(1 for s in samples if s[0] < args.warmup_minutes * 60))
    print(f"\nafter warm-up ({warm} of {len(samples)} samples), first third vs last third:")
    print(f"{'figure':<10} {'early':>9} {'late':>9} {'late/early':>10}  verdict")
    all_flat = True
    for index, name in ((1, "RSS MiB"), (2, "open fds"), (3, "threads")):
        early, late, ratio, ok = flat([float(s[index]) for s in samples], warm, args.tolerance)
        all_flat &= ok
        print(f"{name:<10} {early:9.1f} {late:9.1f} {ratio:10.3f}  {'flat' if ok else 'GROWING'}")
    dropped = writer.count
    done, queued = ledger_counts(root)
    files = f" ({expected} files cycled)" if args.pages else ""
    print(f"\ndropped {dropped}{files}, ingested {done}, still queued {queued} (drained {drain:.0f}s after the "
          f"writer stopped); daemon exit {code}")
    doctor = subprocess.run([sys.executable, "-m", "wikiwright", "doctor", "--json", "--no-repair", "--vault",
                             str(root)], env=env, capture_output=True, text=True)
    report = json.loads(doctor.stdout) if doctor.stdout else {}
    print(f"doctor: {'green' if report.get('ok') else 'FAILED'}; lost {report.get('lost')}; "
          f"exit {doctor.returncode}")
    print(f"verdict: {'flat after warm-up' if all_flat else 'NOT flat'}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"kept {base}")
    return 0 if all_flat and report.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
