"""Search latency at 10,000 pages: ``wikiwright search`` as a person runs it, against the bare
FTS5 query underneath it.

    .venv/bin/python bench/bench_search.py               # 10,000 pages, 200 queries
    .venv/bin/python bench/bench_search.py --pages 2000  # quicker

Figures, each median and p95 over the same queries in the same run:
  fts                  Catalog.search alone (SQLite FTS5 + BM25): the baseline;
  search, daemon up    query.search as the CLI runs it while `wikiwright run` keeps the
                       catalogue fresh (it watches wiki/): FTS, re-ranking, best matching line;
  search, no daemon    the same with nobody keeping the catalogue fresh: a stat scan of every
                       page first (a person may have saved one a moment ago).
Target (issue 7): under 50 ms for search at 10,000 pages.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.query.query import daemon_keeps_catalog_fresh, search
from wikiwright.wiki.catalog import Catalog

_VOCABULARY = (
    "alpha bravo cedar delta ember falcon garnet harbor indigo juniper kestrel lumen marble nectar "
    "onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr anchor beacon "
    "canyon dune estuary fjord glacier heath island jetty knoll lagoon meadow oasis billing invoice "
    "payment refund ledger quota limit rate timeout retry region cluster deploy staging release"
)
WORDS = _VOCABULARY.split()


def make_vault(root: Path, pages: int, rng: random.Random) -> Vault:
    vault, _ = init_vault(root, "wikiwright", "wikiwright@localhost")
    for n in range(pages):
        is_source = n % 3 == 0
        name = f"sources/src-doc-{n}" if is_source else f"page-{n}"
        title = " ".join(rng.choices(WORDS, k=3)).title()
        prose = "\n\n".join(" ".join(rng.choices(WORDS, k=40)) + "." for _ in range(6))
        key = f"{rng.choice(WORDS)}.{rng.choice(WORDS)}"
        claims = (
            f"- ~~`{key}`: {rng.randint(1, 500)} per second (as of 2026-01-0{rng.randint(1, 9)}, "
            f"[[src-doc-{3 * rng.randint(0, pages // 3)}]])~~ superseded by [[src-doc-0]]\n"
            f"- `{key}`: {rng.randint(1, 500)} per second (as of 2026-02-1{rng.randint(0, 9)}, [[src-doc-0]])\n"
        )
        text = (f"---\ntype: {'source' if is_source else 'concept'}\ntitle: {title}\nsummary: {title} notes\n"
                f"tags: []\naliases: []\n---\n\n# {title}\n\n{prose}\n\n## Claims\n{claims}")
        (vault.wiki / f"{name}.md").write_text(text, encoding="utf-8")
    return vault


def measure(func: Callable[[str], object], queries: list[str]) -> tuple[float, float]:
    times = []
    for query in queries:
        started = time.perf_counter()
        func(query)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="ww-bench-search-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
               "XDG_STATE_HOME": str(home / ".state"), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}
        os.environ.update({k: env[k] for k in ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL")})
        started = time.perf_counter()
        vault = make_vault(Path(tmp) / "vault", args.pages, rng)
        made = time.perf_counter() - started
        catalog = Catalog(vault)
        started = time.perf_counter()
        catalog.refresh()
        indexed = time.perf_counter() - started
        queries = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(args.queries)]
        queries[:3] = ["billing rate limit", "what is the payment timeout", "quota"]
        for query in queries[:10]:  # warm the page cache and SQLite
            search(vault, catalog, query)
        rows = [
            ("fts (baseline)", measure(lambda q: catalog.search(q, 10), queries)),
            ("search, no daemon", measure(lambda q: search(vault, catalog, q, 10), queries)),
        ]
        daemon = subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(vault.root)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not daemon_keeps_catalog_fresh(vault):
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise SystemExit("the daemon did not start")
                time.sleep(0.2)
            rows.insert(1, ("search, daemon up", measure(lambda q: search(vault, catalog, q, 10), queries)))
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
        catalog.close()
    print(f"pages: {args.pages}  queries: {args.queries}  (generated in {made:.1f}s, "
          f"first catalogue build {indexed:.1f}s)")
    base = rows[0][1][0] or 1e-9
    print(f"{'what':<20}{'median ms':>11}{'p95 ms':>9}{'x fts':>8}")
    for label, (median, p95) in rows:
        print(f"{label:<20}{median:>11.2f}{p95:>9.2f}{median / base:>8.1f}")
    for label, (_median, p95) in rows[1:]:
        verdict = "meets" if p95 < 50 else "MISSES"
        print(f"target p95 under 50 ms at 10,000 pages, {label}: {verdict} it at {args.pages} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
