"""Does an offline ingest cost the same at 1,000 sources as at 100? (issue 24: "cost grows with the vault")

    .venv/bin/python bench/bench_growth.py                       # 1,000 sources, this tree
    .venv/bin/python bench/bench_growth.py --compare main        # and main's code, same notes, same run
    .venv/bin/python bench/bench_growth.py --sources 300 --window 50   # quick
    .venv/bin/python bench/bench_growth.py --profile 0 900       # cProfile sources 1-100 and 901-1,000
    .venv/bin/python bench/bench_growth.py --profile 0 900 --profile-plan   # the planner's steps only

Generated notes sharing a vocabulary (a pool of names, a few in almost every note, most in
some), so concept and entity pages gain a citing source with nearly every ingest, as in a real
bulk import of one project's notes. Each note is dropped into raw/ and ingested at once by the
real pipeline (offline engine, door, git commits), one worker, in process. Per source it
records the CPU time of this process (time.process_time: the planner, catalogue, door) and of
the child processes it waited for (git, the extraction worker), and wall time; for the first
and last windows, after the timed part, how many git objects its commits added and their bytes
(loose), and what git keeps of a window once it packs, two ways: the window's objects in a pack
of their own (as the daemon's ``gc --auto`` packs loose objects; a later ``repack -a -d`` keeps
those deltas) and the whole history's pack after the window less the one before it, deltas
searched again (``repack -f``, ``gc --aggressive``). ``--by-path N``: the same split by the
path each object belongs to (flat folders' blobs summed), the N rows that grew most.

    .venv/bin/python bench/bench_growth.py --sources 1000 --window 100 --by-path 14

The table compares the first ``--window`` sources with the last: the ratio is the growth
(target: this process's CPU per source at sources 900-1,000 within 1.2x of sources 1-100).
``--compare REF`` runs REF's code (``git archive``) on the same notes in its own process,
before this tree's run, so both figures come from the same run on the same machine.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from refcode import export_code, isolate, keep_or_remove

ROOT = Path(__file__).resolve().parent.parent

# Names the term extractor takes for entities (capitalised mid-sentence, CamelCase, acronyms).
NAMES = [
    "Heron Gateway", "KafkaBridge", "Valgrind", "PgBouncer", "Memcheck", "Terraform", "Prometheus", "Grafana",
    "OpenSearch", "RabbitMQ", "Redis Sentinel", "Kubernetes", "Envoy", "Istio", "Jaeger", "Zookeeper",
    "Cassandra", "ClickHouse", "Airflow", "Celery", "NATS", "Vault Agent", "Consul", "Nomad", "Traefik",
    "HAProxy", "Nginx", "Postgres", "SQLite", "DuckDB", "Parquet", "Avro", "Protobuf", "gRPC", "OAuth",
    "CSRF", "Argon2", "WireGuard", "Tailscale", "Ansible", "Packer", "Loki", "Tempo", "Mimir", "Thanos",
    "Falco", "Trivy", "Cosign", "Sigstore", "Buildkit",
]
VERBS = ["is a service that", "is the tool that", "provides", "handles", "stores", "checks", "reports",
         "runs", "keeps", "builds"]
THINGS = ["the billing events", "every request on the edge", "the nightly backups", "our deploy pipeline",
          "the audit trail", "metrics from each host", "the search cluster", "short-lived credentials",
          "the queue of ingest jobs", "traces across services", "the release artefacts", "rate limits per tenant"]
FILLER = ["We looked at it again this week.", "Nobody on the team had measured it before.",
          "The numbers were better than last quarter.", "It needs another look after the migration.",
          "Two people reviewed the change on Tuesday.", "The runbook was updated to match."]


def note(n: int, rng: random.Random) -> str:
    """Note ``n``: a title of its own and sentences naming 4-7 pool names, skewed so the first
    names are in nearly every note (their pages' source lists grow with the vault)."""
    weights = [1.0 / (rank + 1) ** 0.7 for rank in range(len(NAMES))]
    picked: list[str] = []
    while len(picked) < rng.randint(4, 7):
        name = rng.choices(NAMES, weights)[0]
        if name not in picked:
            picked.append(name)
    lines = [f"# Field note {n}: {picked[0]} and {picked[1]}", ""]
    for name in picked:
        lines.append(f"{name} {rng.choice(VERBS)} {rng.choice(THINGS)}. "
                     f"In note {n} we saw {name} next to {rng.choice(picked)} again. {rng.choice(FILLER)}")
        lines.append("")
    return "\n".join(lines)


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_import(base: Path, sources: int, window: int, profile_at: list[int],
               plan_only: bool = False, early: int = 0) -> dict[str, Any]:
    """Ingest ``sources`` notes into a fresh vault; per-source CPU and wall seconds."""
    from wikiwright.core.config import load_config
    from wikiwright.door.init import init_vault
    from wikiwright.runtime.context import VaultContext

    vault, _ = init_vault(base / "vault", "wikiwright", "wikiwright@localhost")
    # The process's vault context and its ingest wiring, as the daemon's (--compare REF: REF's).
    ctx = VaultContext(load_config(vault.root), vault)
    services = ctx.ingest_services()
    pipeline, registrar = services.pipeline, services.registrar
    phases: dict[str, list[float]] = {"plan": [], "read": [], "plan_read": [], "door": []}
    # cProfile of each window asked for (the whole ingest, or only the planner's steps).
    profilers = {start: cProfile.Profile() for start in profile_at}
    active: list[cProfile.Profile] = []

    def cpu_of(phase: str, func: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            profile = plan_only and phase != "door" and bool(active)
            if profile:
                active[0].enable()
            started = time.process_time()
            try:
                return func(*args, **kwargs)
            finally:
                phases[phase].append(time.process_time() - started)
                if profile:
                    active[0].disable()
        return timed

    # The offline engine's plan (term index, concept pages, overview) and the door's operation
    # (pages written, catalogue, index.md, log.md, commit), each source's CPU in this process.
    planner = pipeline.planner
    for step in ("read", "plan_read") if hasattr(planner, "plan_read") else ("plan",):
        setattr(planner, step, cpu_of(step, getattr(planner, step)))
    pipeline._apply = cpu_of("door", pipeline._apply)  # type: ignore[method-assign]
    rng = random.Random(24)
    cpu: list[float] = []
    child: list[float] = []
    wall: list[float] = []
    written: dict[int, float] = {}  # source -> bytes of git objects its ingest wrote (windows only)
    counts: dict[int, float] = {}  # source -> how many git objects its ingest wrote (windows only)
    loose_paths: dict[int, dict[str, float]] = {early: {}, sources - window: {}}  # window -> group -> bytes
    bounds: dict[int, str] = {}  # HEAD before each window's first source and after its last
    for n in range(sources):
        if n in (early, sources - window):
            bounds[n] = _head(vault.root)
        counted = early <= n < early + window or n >= sources - window
        before = _head(vault.root) if counted else ""
        path = vault.raw / f"note-{n:04d}.md"
        path.write_text(note(n, rng))
        active[:] = [p for start, p in profilers.items() if start <= n < start + window]
        c0, k0, w0 = time.process_time(), children_cpu(), time.perf_counter()
        if active and not plan_only:
            active[0].enable()
        registrar.register(path)
        result = pipeline.drain_once()
        if active and not plan_only:
            active[0].disable()
        cpu.append(time.process_time() - c0)
        child.append(children_cpu() - k0)
        wall.append(time.perf_counter() - w0)
        if result is None or result.state != "ingested":
            raise SystemExit(f"note {n} not ingested: {result}")
        if counted:  # after the timed part: git's own accounting, outside the figures above
            objects = _objects_of(vault.root, before, _head(vault.root))
            written[n] = float(sum(size for _, _, size in objects))
            counts[n] = float(len(objects))
            groups = loose_paths[early if n < early + window else sources - window]
            for kind, path, size in objects:
                key = _path_group(kind, path)
                groups[key] = groups.get(key, 0.0) + size / window
        if n in (early + window - 1, sources - 1):
            bounds[n + 1] = _head(vault.root)
    plan = [a + b for a, b in zip(phases["read"], phases["plan_read"], strict=True)] or phases["plan"]
    out: dict[str, Any] = {"cpu": cpu, "plan": plan, "door": phases["door"], "child": child, "wall": wall,
                           "pages": len(list(vault.wiki.rglob("*.md")))}
    out["objects"] = [written.get(n, 0.0) for n in range(sources)]
    out["count"] = [counts.get(n, 0.0) for n in range(sources)]
    out["loose_paths"] = {str(start): groups for start, groups in loose_paths.items()}
    # What git keeps once it packs, two ways. "gc": the window's objects in a pack of their own,
    # as the daemon's `gc --auto` packs the loose objects of its last stretch (a later
    # consolidation, `repack -a -d`, keeps those deltas). "scratch": one pack of the whole
    # history after the window less the one before it, deltas searched again (`repack -f`,
    # `gc --aggressive`): git's delta window (10 neighbours, sorted by size) then pairs a file's
    # versions of equal size from different months, so a bounded file whose text slides (log.md
    # between archives, the "newest" lists) costs more the longer the history.
    packed = [0.0] * sources
    alone = [0.0] * sources
    packed_paths: dict[str, dict[str, float]] = {}
    alone_paths: dict[str, dict[str, float]] = {}
    for start in (early, sources - window):
        after, before_window = (_packed_by_path(vault.root, [bounds[at]]) for at in (start + window, start))
        grown = sum(after.values()) - sum(before_window.values())
        packed[start:start + window] = [grown / window] * window
        packed_paths[str(start)] = {key: (after.get(key, 0) - before_window.get(key, 0)) / window
                                    for key in set(after) | set(before_window)}
        own = _packed_by_path(vault.root, [bounds[start + window], "^" + bounds[start]])
        alone[start:start + window] = [sum(own.values()) / window] * window
        alone_paths[str(start)] = {key: size / window for key, size in own.items()}
    out["packed"] = packed
    out["packed_alone"] = alone
    out["alone_paths"] = alone_paths
    out["packed_paths"] = packed_paths
    biggest = max(vault.wiki.rglob("*.md"), key=lambda p: p.stat().st_size)
    out["largest_page"] = f"{biggest.relative_to(vault.wiki)} {biggest.stat().st_size // 1024} KiB"
    out["profiles"] = {}
    for start, profiler in profilers.items():
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
        out["profiles"][str(start)] = text.getvalue()
    ctx.close()
    return out


def _head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def _objects_of(root: Path, old: str, new: str) -> list[tuple[str, str, int]]:
    """(type, path, bytes on disk, compressed) of each git object the commits ``old..new`` added:
    commits, trees and blobs (what an operation costs the repository; log.md rewritten whole was
    most of it once). A tree's path is its folder ("" for the root), a commit's is ""."""
    listed = subprocess.run(["git", "rev-list", "--objects", f"{old}..{new}"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    rows = [line.partition(" ") for line in listed.splitlines() if line]
    ids = "".join(oid + "\n" for oid, _, _ in rows)
    sizes = subprocess.run(["git", "cat-file", "--batch-check=%(objecttype) %(objectsize:disk)"], cwd=root,
                           input=ids, capture_output=True, text=True, check=True).stdout.split()
    return [(kind, path, int(size)) for (_, _, path), kind, size in zip(rows, sizes[::2], sizes[1::2], strict=True)]


# The folders that hold one file per source (raw/ the person's, wiki/sources/ the engine's),
# and the index's part pages: their blobs are summed as one row each, their trees by folder.
_GROUPED = ("raw/", "wiki/sources/", "wiki/index/", "wiki/log/")


def _path_group(kind: str, path: str) -> str:
    """The row an object's bytes go to: ``tree raw/``, ``blob wiki/sources/*``, ``blob wiki/log.md``, ``commit``."""
    if kind == "commit":
        return "commit"
    if kind == "tree":
        return f"tree {path + '/' if path else '(root)'}"
    folder = next((g for g in _GROUPED if path.startswith(g)), None)
    return f"blob {folder}*" if folder else f"blob {path}"


def _packed_by_path(root: Path, revisions: list[str]) -> dict[str, int]:
    """Bytes of one pack of the objects ``git rev-list --objects <revisions>`` lists (a commit:
    its whole history; ``B ^A``: what ``A..B`` added), deltas as git makes them (pack-objects'
    default window and depth, as gc), by :func:`_path_group` of each object."""
    listed = subprocess.run(["git", "rev-list", "--objects", *revisions], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    path_of = {oid: path for oid, _, path in (line.partition(" ") for line in listed.splitlines() if line)}
    with tempfile.TemporaryDirectory() as scratch:
        name = subprocess.run(["git", "pack-objects", "-q", f"{scratch}/pack"], cwd=root, input=listed,
                              capture_output=True, text=True, check=True).stdout.strip()
        shown = subprocess.run(["git", "verify-pack", "-v", f"{scratch}/pack-{name}.idx"], cwd=root,
                               capture_output=True, text=True, check=True).stdout
    grouped: dict[str, int] = {}
    for line in shown.splitlines():
        fields = line.split()
        # "<id> <type> <size> <size in pack> <offset> [<depth> <base>]"
        if len(fields) < 5 or len(fields[0]) != 40 or fields[1] not in ("commit", "tree", "blob", "tag"):
            continue
        key = _path_group(fields[1], path_of.get(fields[0], ""))
        grouped[key] = grouped.get(key, 0) + int(fields[3])
    return grouped


def one_side(base: Path, args: argparse.Namespace, code: Path | None) -> dict[str, Any]:
    """One import in its own process (``code``: import wikiwright from there)."""
    command = [sys.executable, __file__, "--child", str(base), "--sources", str(args.sources),
               "--window", str(args.window), "--early", str(args.early)]
    if code is not None:
        command += ["--code", str(code)]
    if args.profile and code is None:
        command += ["--profile", *map(str, args.profile)] + (["--profile-plan"] if args.profile_plan else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("{")), "")
    if done.returncode or not line:
        raise SystemExit(f"import run failed ({code or 'this tree'}):\n{done.stderr[-3000:]}")
    return dict(json.loads(line))


def window_mean(values: list[float], start: int, window: int) -> float:
    return 1000 * statistics.mean(values[start:start + window])


def print_by_path(sides: list[tuple[str, dict[str, Any]]], args: argparse.Namespace, first: int,
                  last: int) -> None:
    """Where the bytes go: per path (flat folders' blobs summed), bytes per source in the first
    and the last window, loose and packed; the rows that grew most (or cost most) first."""
    for label, data in sides:
        for key, what in (("loose_paths", "loose"), ("alone_paths", "packed as `gc --auto` (the window's own pack)"),
                          ("packed_paths", "packed from scratch (`repack -f`: the history's pack growth)")):
            early, late = data[key][str(first)], data[key][str(last)]
            rows = sorted(set(early) | set(late), key=lambda k: (-(late.get(k, 0) - early.get(k, 0)), k))
            print(f"\n{label}, git bytes per source by path, {what}; sources {first + 1}-{first + args.window} "
                  f"and {last + 1}-{args.sources}, the {args.by_path} that grew most:\n")
            print("| path | first | last | last − first |\n|---|---|---|---|")
            for row in rows[:args.by_path]:
                a, b = early.get(row, 0.0), late.get(row, 0.0)
                print(f"| {row} | {a:.0f} | {b:.0f} | {b - a:+.0f} |")
            print(f"| all | {sum(early.values()):.0f} | {sum(late.values()):.0f} | "
                  f"{sum(late.values()) - sum(early.values()):+.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=1000)
    parser.add_argument("--window", type=int, default=100, help="sources in the first and the last window")
    parser.add_argument("--compare", metavar="REF", help="also run REF's code (e.g. main) on the same notes")
    parser.add_argument("--profile", type=int, nargs="+", default=[], metavar="N",
                        help="cProfile sources N+1..N+window of this tree (several windows: several N)")
    parser.add_argument("--profile-plan", action="store_true", help="profile only the planner's steps")
    parser.add_argument("--early", type=int, default=0, metavar="N",
                        help="the early window starts after source N (e.g. 200: once index.md and log.md have "
                             "their bounded shape, so the ratio is the growth alone)")
    parser.add_argument("--by-path", type=int, default=0, metavar="N",
                        help="also print the N paths whose git bytes per source grew most (loose and packed)")
    parser.add_argument("--keep", action="store_true", help="keep the vaults")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # one import, JSON on stdout
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)  # import wikiwright from here
    args = parser.parse_args()
    if args.child is not None:
        sys.path.insert(0, str(args.code or ROOT))
        isolate(args.child)
        measured = run_import(args.child, args.sources, args.window, args.profile, args.profile_plan, args.early)
        print(json.dumps(measured))
        return 0
    base = Path(tempfile.mkdtemp(prefix="ww-growth-"))
    try:
        sides: list[tuple[str, dict[str, Any]]] = []
        if args.compare:
            code = export_code(args.compare, base / "ref-code")
            sides.append((args.compare, one_side(base / "ref", args, code)))
        sides.append(("this tree", one_side(base / "this", args, None)))
        first, last = args.early, args.sources - args.window
        print(f"Offline import of {args.sources} generated notes sharing names (one worker, in process); "
              f"ms per source, mean over sources {first + 1}-{first + args.window} and "
              f"{last + 1}-{args.sources}\n")
        print("| code | measure | first | last | growth (last / first) |\n|---|---|---|---|---|")
        for label, data in sides:
            for key, what in (("cpu", "CPU, this process"), ("plan", "… of which the offline engine's plan"),
                              ("door", "… of which the door (pages, catalogue, index.md, log.md, commit)"),
                              ("child", "CPU, child processes (git, extraction)"), ("wall", "wall"),
                              ("count", "git objects written per source (commit, trees, blobs)"),
                              ("objects", "git objects written, KiB per source (compressed, on disk)"),
                              ("packed_alone", "… once packed as `gc --auto` does (the window's objects "
                                               "in a pack of their own), KiB per source"),
                              ("packed", "… once packed from scratch (`repack -f`: the history's pack after "
                                         "the window less before), KiB per source")):
                if key not in data:
                    continue
                a, b = window_mean(data[key], first, args.window), window_mean(data[key], last, args.window)
                if key in ("objects", "packed", "packed_alone"):
                    a, b = a / 1000 / 1024, b / 1000 / 1024  # window_mean is in thousandths
                elif key == "count":
                    a, b = a / 1000, b / 1000
                mark = ""
                if key in ("cpu", "plan"):
                    mark = " (target ≤ 1.20: " + ("OK" if b / a <= 1.2 else "MISSED") + ")"
                print(f"| {label} | {what} | {a:.1f} | {b:.1f} | {b / a:.2f}{mark} |")
            print(f"| {label} | pages at the end; largest page | {data['pages']} | {data['largest_page']} | |")
        if args.by_path:
            print_by_path(sides, args, first, last)
        if len(sides) == 2:
            ref, this = sides[0][1], sides[1][1]
            a, b = window_mean(ref["cpu"], last, args.window), window_mean(this["cpu"], last, args.window)
            print(f"\nCPU per source at the last window, this tree / {sides[0][0]}: {b / a:.2f}")
        for label, data in sides:
            for start, profile in data.get("profiles", {}).items():
                what = "the planner's steps" if args.profile_plan else "the whole ingest"
                print(f"\ncProfile of {label}, {what}, sources {int(start) + 1}-{int(start) + args.window}:\n")
                print(profile)
    finally:
        keep_or_remove(base, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
