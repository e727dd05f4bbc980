"""Benchmark of one wiki across machines (issue 14).

    .venv/bin/python bench/bench_sync.py             # full run (a few minutes)
    .venv/bin/python bench/bench_sync.py --quick     # fewer drops, 2,000 pages

1. Drop-to-page across machines: two vaults cloned from one bare remote, each with its own
   ``wikiwright run`` at ``git.sync_interval_seconds = 5``; a file dropped into A's raw/, timed
   until its source page is in B's working tree. Expected: the stability wait + the ingest +
   up to one interval on A (push) + up to one on B (fetch) — about 0–10 s beyond the ingest.
2. Sync cost per round in a wiki of 10,000 pages, against plain git in a twin clone in the same
   run: an idle round (nothing new; baseline ``git fetch``), a fast-forward round (one page
   changed on the other machine; baseline ``git pull --ff-only``) and a merge round (a page
   changed on each side; baseline ``git pull --no-rebase``, which merges in the working tree,
   then ``git push`` of the merge, as the round pushes its own).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_spine import isolate


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def ww(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wikiwright", *args], capture_output=True, text=True,
                          env=env or dict(os.environ), check=False)


def make_machines(base: Path, pages: int) -> tuple[Path, Path, Path]:
    """A bare remote; vault A with ``pages`` generated pages (one commit), pushed; B a clone."""
    base.mkdir(parents=True, exist_ok=True)
    remote = base / "remote.git"
    git(base, "init", "-q", "--bare", str(remote))
    a, b = base / "a", base / "b"
    assert ww("init", str(a)).returncode == 0
    git(a, "remote", "add", "origin", str(remote))
    if pages:
        folder = a / "wiki" / "topics"
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(pages):
            (folder / f"page-{n:05d}.md").write_text(
                f"---\ntype: concept\ntitle: Page {n:05d}\nsummary: generated page {n}\n---\n\n# Page {n:05d}\n\n"
                f"Text of page {n}, linking [[page-{(n + 1) % pages:05d}]].\n", encoding="utf-8")
        git(a, "add", "wiki")
        git(a, "commit", "-qm", f"{pages} generated pages")
    env = {**os.environ, "WIKIWRIGHT_GIT_REMOTE": "origin"}
    assert ww("sync", "--vault", str(a), env=env).returncode == 0
    git(base, "clone", "-q", str(remote), str(b))
    assert ww("init", str(b)).returncode == 0
    assert ww("reindex", "--vault", str(a)).returncode == 0
    assert ww("reindex", "--vault", str(b)).returncode == 0
    assert ww("sync", "--vault", str(b), env=env).returncode == 0
    return remote, a, b


# -- 1. drop on A, page on B ----------------------------------------------------------------

def drop_to_page(base: Path, drops: int, interval: float) -> list[float]:
    _remote, a, b = make_machines(base, 0)
    env = {**os.environ, "WIKIWRIGHT_GIT_REMOTE": "origin", "WIKIWRIGHT_GIT_SYNC_INTERVAL_SECONDS": str(interval)}
    procs = [subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(v)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for v in (a, b)]
    times = []
    try:
        time.sleep(3)  # both daemons up
        for n in range(drops):
            started = time.monotonic()
            (a / "raw" / f"drop-{n:03d}.md").write_text(f"# Drop {n}\n\nDrop number {n} travels from A to B.\n")
            target = b / "wiki" / "sources" / f"src-drop-{n:03d}.md"
            deadline = started + 120
            while not target.exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"drop {n} never reached B")
                time.sleep(0.05)
            times.append(time.monotonic() - started)
            time.sleep(interval * 0.37)  # drops land at different points of the interval
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)
    return times


# -- 2. cost per round --------------------------------------------------------------------------

def timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    sys.stdout.flush()
    return time.perf_counter() - started


def round_costs(base: Path, pages: int, repeats: int) -> list[tuple[str, float, float]]:
    from wikiwright.core.config import load_config
    from wikiwright.core.vault import Vault
    from wikiwright.door.sync import Syncer
    from wikiwright.runtime.context import VaultContext

    remote, a, b = make_machines(base, pages)
    twin = base / "twin"
    git(base, "clone", "-q", str(remote), str(twin))
    config = load_config(b, environ={**os.environ, "WIKIWRIGHT_GIT_REMOTE": "origin"})
    # B's process: its vault context, and a syncer on its parts and door (as `wikiwright sync`'s).
    ctx = VaultContext(config, Vault(b))
    syncer = Syncer(config, ctx.vault, ctx.ledger, ctx.catalog, ctx.repo, door=ctx.door)
    rows: dict[str, tuple[list[float], list[float]]] = {"idle": ([], []), "fast-forward": ([], []),
                                                        "merge": ([], [])}

    def change_on_a(n: int) -> None:
        git(a, "pull", "-q", "--ff-only", "origin", "main")  # B's merges, pushed by its rounds
        page = a / "wiki" / "topics" / f"page-{n:05d}.md"
        page.write_text(page.read_text() + f"\nA's addition {n}.\n")
        git(a, "commit", "-qam", f"a {n}")
        git(a, "push", "-q", "origin", "main")

    def change_locally(root: Path, n: int) -> None:
        page = root / "wiki" / "topics" / f"page-{pages - 1 - n:05d}.md"
        page.write_text(page.read_text() + f"\nLocal addition {n}.\n")
        git(root, "commit", "-qam", f"local {n}")

    try:
        for n in range(repeats):
            # The twin starts each repeat where B is (it is a bench clone: reset is fine there).
            git(twin, "fetch", "-q", "origin")
            git(twin, "reset", "-q", "--hard", "origin/main")
            rows["idle"][0].append(timed(syncer.round))
            rows["idle"][1].append(timed(lambda: git(twin, "fetch", "-q", "origin")))
            change_on_a(2 * n)
            rows["fast-forward"][0].append(timed(syncer.round))
            rows["fast-forward"][1].append(timed(lambda: git(twin, "pull", "-q", "--ff-only", "origin", "main")))
            change_on_a(2 * n + 1)
            change_locally(b, n)
            change_locally(twin, n)
            rows["merge"][0].append(timed(syncer.round))
            # A merge round also pushes its merge: so does the baseline (to a scratch branch of its own).
            rows["merge"][1].append(timed(lambda: (
                git(twin, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"),
                git(twin, "push", "-q", "-f", "origin", "HEAD:refs/heads/bench-twin"))))
    finally:
        ctx.close()
    return [(case, statistics.median(ours), statistics.median(bare)) for case, (ours, bare) in rows.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pages", type=int, default=0)
    parser.add_argument("--rounds-only", action="store_true", help="skip the drop-to-page latency part")
    args = parser.parse_args()
    drops = 4 if args.quick else 8
    pages = args.pages or (2000 if args.quick else 10000)
    base = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    try:
        isolate(base)
        if not args.rounds_only:
            times = drop_to_page(base / "latency", drops, 5.0)
            print("\n| drop on A → page in B's working tree, sync interval 5 s | median | p95 | max |")
            print("|---|---|---|---|")
            p95 = sorted(times)[max(0, int(len(times) * 0.95) - 1)]
            print(f"| {len(times)} drops (stability wait 1 s, offline engine) | {statistics.median(times):.2f} s | "
                  f"{p95:.2f} s | {max(times):.2f} s |")
        rows = round_costs(base / "cost", pages, 3 if args.quick else 5)
        print(f"\n| sync round at {pages:,} pages | ours (median) | plain git in a twin clone | ratio |")
        print("|---|---|---|---|")
        baselines = {"idle": "git fetch", "fast-forward": "git pull --ff-only",
                     "merge": "git pull --no-rebase + git push"}
        for case, ours, bare in rows:
            print(f"| {case} | {ours * 1000:.0f} ms | {bare * 1000:.0f} ms ({baselines[case]}) | {ours / bare:.2f}x |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
