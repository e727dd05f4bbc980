"""Two workers on one hub page: edit-conflict proposals with nobody editing (issue 24).

N sources dropped at once, each of which the scripted model answers with an addition to the
same two hub pages (``project-heron`` and ``latency``, as in the issue's 1,000-file drop), are
ingested through the real pipeline and litellm's HTTP path by W worker threads. Nobody edits a
page, so every "changed while wikiwright worked on it" proposal in REVIEW.md is a defect: the
second worker's compare-and-swap taking the first worker's write for a person's. Printed per
worker count: sources ingested, edit-conflict proposals, ingests planned again (a plan built on
a page another worker changed since), model calls per source, wall time — one worker is the
baseline of the same run (it cannot conflict with itself).

    .venv/bin/python bench/bench_workers.py              # 1,000 sources, 1 and 2 workers
    .venv/bin/python bench/bench_workers.py --sources 200

Target: 0 edit-conflict proposals with two workers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.llm_server import ScriptedServer, user_prompt
from wikiwright.core.config import load_config
from wikiwright.door.init import init_vault
from wikiwright.runtime.context import VaultContext

HUBS = ("project-heron", "latency")


def _script(request: dict[str, Any]) -> dict[str, Any]:
    prompt = user_prompt(request)
    name = prompt.split("`raw/", 1)[1].split("`", 1)[0] if "`raw/" in prompt else "unknown"
    if name == "hubs.md":
        operations = [{"op": "create_page", "page": hub, "type": "topic", "title": hub.replace("-", " ").title(),
                       "summary": f"About {hub}.", "body": "## Notes\n\nNotes from the sources.\n"} for hub in HUBS]
    else:
        operations = [{"op": "add_to_section", "page": hub, "heading": "Notes",
                       "text": f"{name[:-3]} reports on {hub}."} for hub in HUBS]
    return {"title": name, "summary": f"{name} is a status note.", "key_points": [], "operations": operations}


def run(tmp: Path, sources: int, workers: int) -> dict[str, float]:
    vault, _ = init_vault(tmp / f"w{workers}", "wikiwright", "wikiwright@localhost")
    with ScriptedServer(_script) as server:
        # The process's vault context on the model's config and its ingest wiring; the workers
        # are threads draining its one pipeline, as the daemon's are.
        ctx = VaultContext(server.config(load_config(vault.root)), vault)
        services = ctx.ingest_services()
        door, pipeline, registrar = ctx.door, services.pipeline, services.registrar
        (vault.raw / "hubs.md").write_text("# Hubs\n\nproject-heron and latency.\n")
        registrar.register(vault.raw / "hubs.md")
        while pipeline.drain_once() is not None:
            pass
        for n in range(sources):
            path = vault.raw / f"note-{n:04d}.md"
            path.write_text(f"# Note {n}\n\nnote-{n:04d} reports on project-heron and latency.\n")
            registrar.register(path)
        calls_before = len(server.requests)
        replans = [0]
        lock = threading.Lock()

        def work() -> None:
            while (result := pipeline.drain_once()) is not None:
                if result.state == "pending" and "planning again" in (door.ledger.get_file(result.path) or
                                                                      result).reason:
                    with lock:
                        replans[0] += 1

        started = time.perf_counter()
        threads = [threading.Thread(target=work) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.perf_counter() - started
        calls = len(server.requests) - calls_before
        ingested = sum(1 for f in door.ledger.files("ingested", kind="raw")) - 1
        review = (vault.root / "REVIEW.md").read_text(encoding="utf-8")
        conflicts = review.count("changed while wikiwright worked on it")
        ctx.close()
    return {"ingested": ingested, "conflicts": conflicts, "replans": replans[0], "calls": calls / max(1, sources),
            "seconds": took}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = {workers: run(Path(folder), args.sources, workers) for workers in (1, 2)}
    base = rows[1]["seconds"]
    print(f"{'workers':>7} {'ingested':>8} {'edit-conflicts':>14} {'planned again':>13} {'calls/source':>12} "
          f"{'wall s':>8} {'vs 1 worker':>11}")
    for workers, row in rows.items():
        print(f"{workers:>7} {row['ingested']:>8.0f} {row['conflicts']:>14.0f} {row['replans']:>13.0f} "
              f"{row['calls']:>12.2f} {row['seconds']:>8.1f} {row['seconds'] / base:>10.2f}x")


if __name__ == "__main__":
    main()
