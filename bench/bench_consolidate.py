"""Consolidation benchmark: a generated week of daily logs (>= 100 KB, planted durable facts,
repeats, relative dates, noise) consolidated by the deterministic path and by the model path
(the scripted model server), in fresh vaults. Prints bytes in/out, the compression ratio and
which planted facts survived, against the baseline of keeping every line (ratio 1:1).

Then the scale table (deterministic path, no model): CPU seconds and compression for a week of
logs of 5,000, 20,000 and 100,000 lines, once with one-off lines that never repeat and once with
logs that repeat themselves (one-off lines drawn from a pool of 60); CPU per 1,000 lines shows
whether the cost is linear. Targets (issue 12): 100,000 lines under 60 s of CPU, at least 5:1
on logs that repeat themselves, every planted fact kept.

    .venv/bin/python bench/bench_consolidate.py [--days 7] [--sessions 7] [--filler 20] [--sizes 5000,20000,100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.consolidate_model import script  # noqa: E402
from tests.helpers import consolidator_on  # noqa: E402
from tests.llm_server import ScriptedServer  # noqa: E402
from tests.logweek import FACTS, filler_for_lines, generate_week, surviving  # noqa: E402
from wikiwright.core.config import load_config  # noqa: E402
from wikiwright.door.init import init_vault  # noqa: E402
from wikiwright.runtime.context import VaultContext  # noqa: E402

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


def run(engine: str, args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = init_vault(Path(tmp) / "vault", "bench", "bench@localhost")
        written = generate_week(vault.logs, days=args.days, sessions=args.sessions, filler=args.filler)
        config = load_config(vault.root)
        started = time.perf_counter()
        if engine == "model (scripted)":
            with ScriptedServer(script) as server, VaultContext(server.config(config), vault) as ctx:
                result = consolidator_on(ctx, clock=lambda: NOW).run()
        else:
            with VaultContext(config, vault) as ctx:
                result = consolidator_on(ctx, clock=lambda: NOW).run()
        seconds = time.perf_counter() - started
        plan = result.plan
        assert plan is not None, result.detail
        pages = "".join((vault.wiki / f"{c.page}.md").read_text() for c in plan.changes)
        return {
            "engine": engine, "written": written, "in": plan.bytes_in, "out": plan.bytes_out,
            "ratio": plan.ratio, "seconds": seconds, "facts": surviving(pages), "pages": len(plan.changes),
            "entries": plan.stats.added, "skipped": dict(plan.gathered.skipped), "rejected": plan.rejected,
        }


def run_size(lines: int, repeat_pool: int) -> dict[str, float | int]:
    """One deterministic run (no model) on a week of about ``lines`` lines; CPU seconds of the run."""
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = init_vault(Path(tmp) / "vault", "bench", "bench@localhost")
        generate_week(vault.logs, filler=filler_for_lines(lines), repeat_pool=repeat_pool)
        written = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in vault.logs.glob("*.md"))
        with VaultContext(load_config(vault.root), vault) as ctx:
            cpu = time.process_time()
            result = consolidator_on(ctx, clock=lambda: NOW).run(force=True)
            cpu = time.process_time() - cpu
        plan = result.plan
        assert plan is not None, result.detail
        pages = "".join((vault.wiki / f"{c.page}.md").read_text() for c in plan.changes)
        kept = sum(ok for _, ok in surviving(pages))
        return {"lines": written, "in": plan.bytes_in, "out": plan.bytes_out, "ratio": plan.ratio,
                "cpu": cpu, "kept": kept}


def scale_table(sizes: list[int]) -> None:
    print(f"{'logs':<22} {'lines':>7} {'bytes in':>9} {'bytes out':>9} {'ratio':>8} {'facts':>7} "
          f"{'CPU s':>7} {'CPU s/1k lines':>14}")
    for label, pool in (("one-offs never repeat", 0), ("repeat themselves", 60)):
        for size in sizes:
            row = run_size(size, pool)
            print(f"{label:<22} {row['lines']:>7} {row['in']:>9} {row['out']:>9} {row['ratio']:>7.1f}:1 "
                  f"{row['kept']:>3}/{len(FACTS):<3} {row['cpu']:>7.2f} {1000 * row['cpu'] / row['lines']:>14.3f}",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=7)
    parser.add_argument("--filler", type=int, default=20)
    parser.add_argument("--sizes", default="5000,20000,100000", help="lines per week for the scale table ('' skips it)")
    args = parser.parse_args()
    rows = [run("deterministic", args), run("model (scripted)", args)]
    print(f"{'engine':<18} {'bytes in':>9} {'bytes out':>9} {'ratio':>7} {'vs keep-all':>11} "
          f"{'facts':>7} {'pages':>5} {'entries':>7} {'seconds':>7}")
    print(f"{'keep every line':<18} {rows[0]['in']:>9} {rows[0]['in']:>9} {'1.0:1':>7} {'1.0x':>11} "
          f"{len(FACTS):>3}/{len(FACTS):<3} {'-':>5} {'-':>7} {'-':>7}")
    for row in rows:
        kept = sum(ok for _, ok in row["facts"])  # type: ignore[attr-defined]
        print(f"{row['engine']:<18} {row['in']:>9} {row['out']:>9} {row['ratio']:>6.1f}:1 "
              f"{row['ratio']:>10.1f}x {kept:>3}/{len(FACTS):<3} {row['pages']:>5} {row['entries']:>7} "
              f"{row['seconds']:>7.2f}")
    print()
    print(f"{'planted fact':<44} " + " ".join(f"{row['engine']:>18}" for row in rows))
    for index, fact in enumerate(FACTS):
        marks = " ".join(f"{'survived' if row['facts'][index][1] else 'LOST':>18}" for row in rows)  # type: ignore[index]
        print(f"{fact.name:<44} {marks}")
    print()
    for row in rows:
        print(f"{row['engine']}: skipped observations {row['skipped']}, model items rejected {row['rejected']}")
    if args.sizes:
        print()
        scale_table([int(size) for size in args.sizes.split(",")])


if __name__ == "__main__":
    main()
