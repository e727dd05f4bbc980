"""Benchmark of the spine: drop-to-commit latency, ingest throughput by wiki size, commit
overhead against bare git, and the daemon's memory over many ingests.

    .venv/bin/python bench/bench_spine.py            # full run (a few minutes)
    .venv/bin/python bench/bench_spine.py --quick    # under a minute (CI)
    .venv/bin/python bench/bench_spine.py --quick --git-procs-only --compare main   # the git-process table

Every figure that has a baseline is measured against it in the same run, on the same
machine, so the ratios mean something even on a busy box. Targets (issue 2): drop-to-commit
under 2 s median beyond the stability wait; commit within 1.5x of bare ``git add`` +
``git commit`` of the same files; RSS flat after warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from refcode import keep_or_remove

WORDS = [
    "alpha", "bravo", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lumen", "marble", "nectar", "onyx", "prairie", "quartz", "raven", "sierra", "tundra",
    "umber", "violet", "willow", "xenon", "yarrow", "zephyr", "anchor", "beacon", "canyon", "dune",
    "estuary", "fjord", "glacier", "heath", "island", "jetty", "knoll", "lagoon", "meadow", "oasis",
]


# -- environment -----------------------------------------------------------------------------


def isolate(base: Path) -> dict[str, str]:
    """A private HOME, XDG folders and git identity for this process and its children."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Bench Person\n\temail = bench@example.com\n"
                         "[init]\n\tdefaultBranch = main\n"
                         # No background gc while the twin repository is copied or timed.
                         "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n")
    for name in list(os.environ):
        if name.startswith("WIKIWRIGHT_") or name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
            del os.environ[name]
    os.environ.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".state"),
        "XDG_DATA_HOME": str(home / ".share"), "XDG_CACHE_HOME": str(home / ".cache"),
        "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    })
    return dict(os.environ)


def source_text(n: int, rng: random.Random, titles: list[str] | None = None) -> str:
    words = [rng.choice(WORDS) for _ in range(60)]
    sentences = [" ".join(words[i:i + 12]).capitalize() + "." for i in range(0, 60, 12)]
    if titles:
        sentences.insert(2, f"This relates to {rng.choice(titles)} and {rng.choice(titles)}.")
    return f"# Source {n}\n\nSource {n} was written on 2026-03-{n % 28 + 1:02d}. " + " ".join(sentences) + "\n"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def wiki_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "wikiwright", *args]


# -- the daemon as a subprocess -------------------------------------------------------------------


@contextmanager
def running_daemon(vault: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    log = (vault.parent / "daemon.log").open("ab")
    proc = subprocess.Popen(wiki_cmd("run", "--vault", str(vault)), env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                beat = json.loads((vault / ".wikiwright" / "heartbeat.json").read_text())
                if beat["pid"] == proc.pid and not beat["stopped"]:
                    break
            except (OSError, ValueError, KeyError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not start; see {vault.parent / 'daemon.log'}")
            time.sleep(0.05)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def ingested_times(vault: Path) -> dict[str, float]:
    """raw path -> time the ledger recorded it ingested (just after its commit)."""
    db = sqlite3.connect(f"file:{vault / '.wikiwright' / 'state.db'}?mode=ro", uri=True, timeout=30)
    try:
        rows = db.execute("SELECT path, updated_at FROM files WHERE state='ingested'").fetchall()
    finally:
        db.close()
    return {str(path): float(at) for path, at in rows}


def wait_ingested(vault: Path, count: int, timeout: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        done = ingested_times(vault)
        if len(done) >= count:
            return done
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(done)} of {count} ingests after {timeout:.0f}s")
        time.sleep(0.05)


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def bench_latency(base: Path, env: dict[str, str], count: int, gap: float, debounce: float) -> dict[str, Any]:
    vault = base / "latency" / "Wiki"
    subprocess.run(wiki_cmd("init", "--no-default", str(vault)), env=env, check=True, capture_output=True)
    run_env = {**env, "WIKIWRIGHT_WATCH_DEBOUNCE_SECONDS": str(debounce)}
    rng = random.Random(1)
    dropped: dict[str, float] = {}
    with running_daemon(vault, run_env):
        for n in range(count):
            path = vault / "raw" / f"lat-{n:03d}.md"
            path.write_text(source_text(n, rng))
            dropped[f"raw/{path.name}"] = time.time()
            time.sleep(gap)
        done = wait_ingested(vault, count, timeout=60 + count * 2)
    latencies = [done[rel] - at for rel, at in dropped.items()]
    beyond = [lat - debounce for lat in latencies]
    return {
        "count": count, "debounce": debounce,
        "median": statistics.median(latencies), "p95": percentile(latencies, 0.95),
        "beyond_median": statistics.median(beyond), "beyond_p95": percentile(beyond, 0.95),
    }


def bench_rss(base: Path, env: dict[str, str], total: int, every: int) -> list[tuple[int, float, float, float]]:
    """(ingests so far, RSS MiB, peak RSS MiB, seconds for the batch) after each batch."""
    vault = base / "rss" / "Wiki"
    subprocess.run(wiki_cmd("init", "--no-default", str(vault)), env=env, check=True, capture_output=True)
    run_env = {**env, "WIKIWRIGHT_WATCH_DEBOUNCE_SECONDS": "0.3", "WIKIWRIGHT_WATCH_POLL_INTERVAL_SECONDS": "0.1"}
    rng = random.Random(2)
    samples = []
    with running_daemon(vault, run_env) as proc:
        rss, hwm = rss_kib(proc.pid)
        samples.append((0, rss / 1024, hwm / 1024, 0.0))
        for start in range(0, total, every):
            began = time.monotonic()
            for n in range(start, min(total, start + every)):
                (vault / "raw" / f"m-{n:05d}.md").write_text(source_text(n, rng))
            done = min(total, start + every)
            wait_ingested(vault, done, timeout=600)
            rss, hwm = rss_kib(proc.pid)
            samples.append((done, rss / 1024, hwm / 1024, time.monotonic() - began))
    return samples


# -- in-process pipeline: throughput and commit overhead ---------------------------------------------


def pregenerate(vault: Path, pages: int, env: dict[str, str]) -> list[str]:
    """Write ``pages`` concept pages straight to wiki/ and commit them with bare git (setup only)."""
    rng = random.Random(pages)
    titles = []
    for n in range(pages):
        title = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {n}"
        titles.append(title)
        # The text render_page would give, written by a template: 10,000 YAML dumps take a while.
        text = (f"---\ntype: concept\ntitle: {title}\nsummary: What {title} is about.\nsources: []\n"
                f"updated: 2026-01-01\ntags: []\naliases: []\n---\n\n# {title}\n\n"
                f"{title} is a concept with a few words of description. See [[index]].\n")
        (vault / "wiki" / f"concept-{n:05d}.md").write_text(text)
    subprocess.run(["git", "-C", str(vault), "add", "-A", "wiki"], env=env, check=True)
    subprocess.run(["git", "-C", str(vault), "commit", "-q", "-m", "pregenerated pages"], env=env, check=True)
    return titles


def timed(store: list[float], func: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            store.append(time.perf_counter() - started)

    return wrapper


def bench_throughput(base: Path, env: dict[str, str], pages: int, ingests: int) -> dict[str, Any]:
    from wikiwright.core.config import load_config
    from wikiwright.door.init import init_vault
    from wikiwright.runtime.context import VaultContext

    vault, _ = init_vault(base / f"tp-{pages}" / "Wiki", "wikiwright", "wikiwright@localhost")
    started = time.perf_counter()
    titles = pregenerate(vault.root, pages, env)
    generate_s = time.perf_counter() - started
    # The bare-git twin: the same repository, committed the same files by plain git.
    twin = base / f"tp-{pages}" / "Twin"
    shutil.copytree(vault.root, twin, symlinks=True)

    # The process's vault context and its ingest wiring, as the daemon's; the catalogue's first
    # refresh (every pregenerated page read) timed on its own, before the door opens.
    ctx = VaultContext(load_config(vault.root), vault)
    catalog = ctx.catalog
    started = time.perf_counter()
    catalog.refresh()
    catalog_s = time.perf_counter() - started
    services = ctx.ingest_services()
    repo, pipeline, registrar = ctx.repo, services.pipeline, services.registrar
    ours: list[float] = []
    phase: list[float] = []
    repo.commit_contents = timed(ours, repo.commit_contents)  # type: ignore[method-assign]
    pipeline._apply = timed(phase, pipeline._apply)  # type: ignore[method-assign]
    bare: list[float] = []
    rng = random.Random(7)
    busy = 0.0
    for n in range(ingests):
        path = vault.raw / f"s-{n:04d}.md"
        path.write_text(source_text(n, rng, titles))
        began = time.perf_counter()
        registrar.register(path)
        result = pipeline.drain_once()
        busy += time.perf_counter() - began
        assert result is not None and result.state == "ingested", result
        # Bare git, same files, same moment: copy what our commit changed and commit it plainly.
        files = subprocess.run(["git", "-C", str(vault.root), "show", "--name-only", "--format=", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.split()
        for rel in files:
            (twin / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(vault.root / rel, twin / rel)
        began = time.perf_counter()
        subprocess.run(["git", "-C", str(twin), "add", "-f", "--", *files], env=env, check=True)
        subprocess.run(["git", "-C", str(twin), "commit", "-q", "-m", f"ingest {n}"], env=env, check=True)
        bare.append(time.perf_counter() - began)
    ctx.close()
    return {
        "pages": pages, "ingests": ingests, "per_second": ingests / busy, "ms_each": 1000 * busy / ingests,
        "commit_ms": 1000 * statistics.median(ours), "phase_ms": 1000 * statistics.median(phase),
        "bare_ms": 1000 * statistics.median(bare),
        "ratio": statistics.median(ours) / statistics.median(bare),
        "generate_s": generate_s, "catalog_s": catalog_s,
    }


# -- git processes per operation: this code against an earlier revision, in the same run -------------


def git_procs_child(count: int) -> int:
    """(Run as a child, ``--git-procs-child N``.) N offline ingests into a fresh vault with the
    ``wikiwright`` on ``sys.path``; prints one JSON line: per ingest, git processes, wall and CPU ms."""
    import resource

    from wikiwright.core.config import load_config
    from wikiwright.door.init import init_vault
    from wikiwright.runtime.context import VaultContext

    spawned: list[str] = []
    real_init = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "git":
            spawned.append(str(args[1]) if len(args) > 1 else "")
        real_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = counting  # type: ignore[assignment, method-assign]
    base = Path(tempfile.mkdtemp(prefix="wikiwright-gitprocs-"))
    try:
        vault, _ = init_vault(base / "Wiki", "wikiwright", "wikiwright@localhost")
        # The vault context's ingest wiring of the code on sys.path (this tree's, or --compare's).
        ctx = VaultContext(load_config(vault.root), vault)
        services = ctx.ingest_services()
        repo, pipeline, registrar = ctx.repo, services.pipeline, services.registrar
        rng = random.Random(24)
        rows = []
        began = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        for n in range(count):
            path = vault.raw / f"g-{n:04d}.md"
            path.write_text(source_text(n, rng))
            spawned.clear()
            wall = time.perf_counter()
            registrar.register(path)
            result = pipeline.drain_once()
            assert result is not None and result.state == "ingested", result
            rows.append({"procs": len(spawned), "kinds": sorted(set(spawned)),
                         "ms": 1000 * (time.perf_counter() - wall)})
        getattr(repo, "close", lambda: None)()  # a long-lived git child is reaped: its CPU is counted
        ended = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        total_cpu = sum(getattr(b, f) - getattr(a, f) for a, b in zip(began, ended, strict=True)
                        for f in ("ru_utime", "ru_stime"))
        status = subprocess.run(["git", "status", "--porcelain", "--", "wiki", "raw"], cwd=vault.root,
                                capture_output=True, text=True, check=True).stdout
        ctx.close()
        print(json.dumps({"rows": rows, "clean": status.strip() == "", "cpu_ms_each": 1000 * total_cpu / count}))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def bench_git_procs(base: Path, env: dict[str, str], compare: str, count: int) -> list[dict[str, Any]]:
    """The same N ingests run by this tree's code and by ``compare``'s (``git archive`` of its
    daemon/ and shipped files into a scratch folder: the repository is not touched), each in its
    own process."""
    here = Path(__file__).resolve().parent.parent
    rev = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", compare], capture_output=True, text=True,
                         check=True).stdout.strip()
    old = base / f"compare-{rev}"
    old.mkdir()
    shipped = [name for name in ("daemon", "config", "systemd", "hooks") if subprocess.run(
        ["git", "-C", str(here), "cat-file", "-e", f"{rev}:{name}"], capture_output=True).returncode == 0]
    archive = subprocess.run(["git", "-C", str(here), "archive", rev, *shipped], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    (old / "wikiwright").symlink_to(old / "daemon")
    mine = base / "compare-this"
    mine.mkdir()
    (mine / "wikiwright").symlink_to(here / "daemon")
    runs = []
    for label, code in ((f"{compare} ({rev})", old), ("this tree", mine)):
        done = subprocess.run([sys.executable, __file__, "--git-procs-child", str(count)],
                              env={**env, "PYTHONPATH": str(code)}, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"git-process run of {label} failed:\n{done.stderr[-3000:]}")
        runs.append({"label": label, **json.loads(done.stdout.strip().splitlines()[-1])})
    return runs


def report_git_procs(runs: list[dict[str, Any]]) -> None:
    count = len(runs[0]["rows"])
    tail = max(1, min(100, count // 10))
    print(f"Git processes per operation: {count} offline ingests into a fresh vault, the earlier revision's code "
          f"and this tree's, each in its own process (ms: median wall time; CPU: the run's total, git children "
          f"included, per ingest)")
    print(f"  {'code':24} {'git procs/ingest':>16} {'max':>4} {'ms/ingest':>10} {'ratio':>6} {'CPU ms':>7} "
          f"{'ratio':>6} {'ms, last ' + str(tail):>12}  git status")
    base_ms = statistics.median(r["ms"] for r in runs[0]["rows"][1:] or runs[0]["rows"])
    for run in runs:
        rows = run["rows"][1:] or run["rows"]  # the first ingest starts what later ones reuse
        procs = statistics.median(r["procs"] for r in rows)
        wall = statistics.median(r["ms"] for r in rows)
        last = statistics.median(r["ms"] for r in run["rows"][-tail:])
        cpu = run["cpu_ms_each"]
        print(f"  {run['label']:24} {procs:>16.0f} {max(r['procs'] for r in rows):>4} {wall:>10.1f} "
              f"{wall / base_ms:>5.2f}x {cpu:>7.1f} {cpu / runs[0]['cpu_ms_each']:>5.2f}x "
              f"{last:>12.1f}  {'clean' if run['clean'] else 'DIRTY'}")
        print(f"  {'':24} {', '.join(sorted({k for r in rows for k in r['kinds']}))}")
    worst = max(max(r["procs"] for r in (runs[-1]["rows"][1:] or runs[-1]["rows"])), 0)
    print(f"  target <= 3 git processes per ingest (issue 24): {'OK' if worst <= 3 else 'MISSED'}\n", flush=True)


# -- report ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    parser.add_argument("--keep", action="store_true", help="keep the temporary vaults")
    parser.add_argument("--compare", default="main", metavar="REV",
                        help="the revision whose git processes per ingest are measured beside this tree's (main)")
    parser.add_argument("--git-procs-only", action="store_true", help="only the git-processes-per-operation table")
    parser.add_argument("--git-procs-child", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.git_procs_child is not None:
        return git_procs_child(args.git_procs_child)
    quick = args.quick
    sizes = (100, 1000, 10000)
    plan = {
        "latency": 20 if quick else 100,
        "ingests": {100: 10, 1000: 10, 10000: 5} if quick else {100: 50, 1000: 50, 10000: 30},
        "rss_total": 400 if quick else 2000,
        "rss_every": 100 if quick else 200,
        "git_procs": 40 if quick else 1000,
    }
    base = Path(tempfile.mkdtemp(prefix="wikiwright-bench-"))
    env = isolate(base)
    t0 = time.monotonic()
    try:
        print(f"wikiwright spine benchmark ({'quick' if quick else 'full'}); scratch in {base}\n", flush=True)
        report_git_procs(bench_git_procs(base, env, args.compare, plan["git_procs"]))
        if args.git_procs_only:
            return 0
        lat = bench_latency(base, env, plan["latency"], gap=0.25, debounce=1.0)
        print(f"Drop-to-commit, {lat['count']} small sources dropped 0.25 s apart, "
              f"stability wait (debounce) {lat['debounce']:.1f} s")
        print(f"  {'':24} {'median':>9} {'p95':>9}")
        print(f"  {'total':24} {lat['median']:>8.2f}s {lat['p95']:>8.2f}s")
        ok = "OK" if lat["beyond_median"] < 2.0 else "MISSED"
        print(f"  {'beyond the debounce':24} {lat['beyond_median']:>8.2f}s {lat['beyond_p95']:>8.2f}s"
              f"   target < 2 s median: {ok}\n", flush=True)

        rows = [bench_throughput(base, env, pages, plan["ingests"][pages]) for pages in sizes]
        print("Offline engine throughput by wiki size (in-process pipeline, one worker), and our commit "
              "against bare `git add` + `git commit` of the same files in a twin repository")
        print(f"  {'pages':>6} {'ingests':>7} {'ingest/s':>9} {'ms each':>8} {'commit ms':>10} "
              f"{'bare git ms':>11} {'ratio':>6} {'commit phase ms':>16} {'setup s':>8}")
        for r in rows:
            print(f"  {r['pages']:>6} {r['ingests']:>7} {r['per_second']:>9.1f} {r['ms_each']:>8.1f} "
                  f"{r['commit_ms']:>10.1f} {r['bare_ms']:>11.1f} {r['ratio']:>5.2f}x {r['phase_ms']:>16.1f} "
                  f"{r['generate_s'] + r['catalog_s']:>8.1f}")
        worst = max(r["ratio"] for r in rows)
        print(f"  commit = GitRepo.commit_contents (median); commit phase = the door's operation: pages, catalogue, "
              f"index.md, log.md, commit. Target ratio <= 1.5x: {'OK' if worst <= 1.5 else 'MISSED'} "
              f"(worst {worst:.2f}x)\n", flush=True)

        samples = bench_rss(base, env, plan["rss_total"], plan["rss_every"])
        print(f"Daemon memory over {plan['rss_total']} ingests (wikiwright run, sampled every "
              f"{plan['rss_every']})")
        print(f"  {'ingests':>7} {'RSS MiB':>8} {'peak MiB':>9} {'batch s':>8}")
        for done, rss, hwm, secs in samples:
            print(f"  {done:>7} {rss:>8.1f} {hwm:>9.1f} {secs:>8.1f}")
        warm = samples[min(2, len(samples) - 1)]
        last = samples[-1]
        growth = last[2] - warm[2]
        flat = growth <= max(5.0, 0.1 * warm[2])
        per_ingest = 1024 * growth / max(1, last[0] - warm[0])
        print(f"  peak growth after warm-up ({warm[0]} ingests): {growth:+.1f} MiB, {per_ingest:.1f} KiB per "
              f"ingest (each ingest here adds a page to the wiki): {'flat, OK' if flat else 'GROWING'}\n")
        print(f"total bench time {time.monotonic() - t0:.0f} s")
    finally:
        keep_or_remove(base, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
