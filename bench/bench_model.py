"""Benchmark the model path: prompt size and model calls per ingest as the wiki grows.

Builds synthetic wikis of 10, 100, 1,000 and 10,000 pages, ingests the same ordinary sources
into each through the real pipeline and litellm's HTTP path to the scripted server, and
prints per ingest: prompt tokens (chars/4 of everything sent), model calls, and our own
processing time excluding the model (wall time of the ingest minus the HTTP call latency).

    .venv/bin/python bench/bench_model.py [--sizes 10,100,1000,10000] [--sources 5]
    .venv/bin/python bench/bench_model.py --kestrel 1000

Target (issue 3): prompt tokens at 10,000 pages within 1.2x of those at 100 pages; at most
2 model calls per ordinary source.

``--kestrel N`` (issue 22) tells a correction story among N look-alike pages: a gateway
(Kestrel) whose rate limit, burst and retention claims sit on one page beside N "Kestrel shard"
pages sharing its words and claim attributes; four corrections follow, one in words that share
nothing with the claim's key. The scripted model supersedes only the claims its prompt shows (a
careful model cannot correct what it does not see). Target: no missed supersession.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.llm_server import ScriptedServer, prompt_text
from wikiwright.core.config import load_config
from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.runtime.context import VaultContext
from wikiwright.wiki.pages import Page, render_page

SYLLABLES = ["ka", "lo", "mi", "ran", "tor", "vex", "qui", "zen", "bar", "dul", "fen", "gor", "hal", "jin", "mor",
             "nex", "pol", "ris", "sul", "tem", "ul", "vor", "wex", "yan"]


def words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))) for _ in range(n)]


def build_wiki(root: Path, size: int, rng: random.Random) -> tuple[Vault, list[str]]:
    vault, _ = init_vault(root, "wikiwright", "wikiwright@localhost")
    vocab = words(rng, 3000)
    titles = []
    for n in range(size):
        title = f"{vocab[n % len(vocab)].capitalize()} {n:05d}"
        name = f"{vocab[n % len(vocab)]}-{n:05d}"
        text = " ".join(rng.choice(vocab) for _ in range(220))
        body = (f"# {title}\n\n{text}\n\n## Claims\n- `{name}.limit`: {rng.randint(1, 999)} per second "
                f"(as of 2026-01-01, [[src-seed]])\n")
        page = Page({"type": "entity", "title": title, "summary": text[:120], "sources": ["src-seed"],
                     "updated": "2026-01-01", "tags": [], "aliases": []}, body)
        (vault.wiki / f"{name}.md").write_text(render_page(page), encoding="utf-8")
        titles.append(title)
    subprocess.run(["git", "-C", str(root), "add", "wiki"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=seed", "-c", "user.email=s@x", "commit", "-qm", "seed"],
                   check=True)
    return vault, titles


def source_text(rng: random.Random, titles: list[str], index: int) -> str:
    mentioned = rng.sample(titles[: min(len(titles), 10)], 2)  # same mentions at every size
    filler = " ".join(words(random.Random(index), 300))
    return (f"# Meeting {index}\n\nWe discussed {mentioned[0]} and {mentioned[1]}. {filler}\n\n"
            f"The {mentioned[0]} limit is now 40 per second.\n")


def reply_for(request: dict[str, Any]) -> dict[str, Any]:
    return {"title": "Meeting", "summary": "A meeting.", "key_points": ["one"], "operations": [
        {"op": "add_to_section", "page": "meeting-notes", "heading": "Log", "text": "- a meeting happened"}]}


def run_size(size: int, sources: int) -> dict[str, float]:
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        vault, titles = build_wiki(Path(tmp) / "vault", size, rng)
        with ScriptedServer(reply_for) as server:
            os.environ["SCRIPTED_LLM_KEY"] = "sk-bench"
            # The process's vault context on the model's config, and its ingest wiring.
            ctx = VaultContext(server.config(load_config(vault.root)), vault)
            ctx.catalog.refresh()
            setup = time.perf_counter() - t0
            services = ctx.ingest_services()
            pipeline, registrar, costs = services.pipeline, services.registrar, ctx.costs
            # One warm-up ingest (imports litellm, warms caches), not measured.
            warm = vault.raw / "warmup.md"
            warm.write_text(source_text(random.Random(999), titles, 999))
            registrar.register(warm)
            pipeline.drain_once()
            prompts, calls, ours = [], [], []
            for index in range(sources):
                path = vault.raw / f"meeting-{index}.md"
                path.write_text(source_text(random.Random(index), titles, index))
                registrar.register(path)
                before = len(server.requests)
                model_before = costs._db.execute("SELECT coalesce(sum(latency_s),0) FROM llm_calls").fetchone()[0]
                started = time.perf_counter()
                result = pipeline.drain_once()
                wall = time.perf_counter() - started
                model_after = costs._db.execute("SELECT coalesce(sum(latency_s),0) FROM llm_calls").fetchone()[0]
                assert result is not None and result.state == "ingested", result
                new = server.requests[before:]
                calls.append(len(new))
                prompts.append(sum(len(prompt_text(r)) for r in new) / 4)
                ours.append(wall - (model_after - model_before))
        ctx.close()
    return {"size": size, "setup_s": setup, "prompt_tokens": statistics.mean(prompts),
            "prompt_tokens_max": max(prompts), "calls": statistics.mean(calls), "calls_max": max(calls),
            "ours_ms": statistics.median(ours) * 1000}


KESTREL_DESIGN = """\
# Kestrel gateway design

Date: 2026-02-01.

The Kestrel gateway allows 100 requests per second per tenant.
Kestrel accepts bursts of 200 requests.
The Kestrel ingest tier keeps raw events for 90 days.
"""
# (claim key, old value, the design doc's sentence, the correction, its sentence, the new value)
KESTREL_CLAIMS = [
    ("kestrel.rate-limit", "100 requests per second per tenant", "The Kestrel gateway allows 100 requests per "
     "second per tenant.", "We lowered the Kestrel rate limit from 100 to 50 requests per second per tenant.",
     "50 requests per second per tenant"),
    ("kestrel.burst", "200 requests", "Kestrel accepts bursts of 200 requests.",
     "The Kestrel burst is now 300 requests.", "300 requests"),
    ("kestrel.data-retention", "90 days", "The Kestrel ingest tier keeps raw events for 90 days.",
     "Raw events are now kept for 30 days.", "30 days"),  # no word of the key, nor the old value
    ("kestrel.rate-limit", "50 requests per second per tenant", "", "Going forward the per-tenant limit on the "
     "Kestrel gateway is 40 requests per second, replacing the earlier limit.", "40 requests per second per tenant"),
]


def kestrel_story(pages: int) -> int:
    """The Kestrel correction story among ``pages`` look-alike pages; returns missed supersessions."""
    from wikiwright.wiki.pages import parse_claims, parse_page

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = init_vault(Path(tmp) / "vault", "wikiwright", "wikiwright@localhost")
        for n in range(pages):
            name = f"kestrel-shard-{n:04d}"
            prose = (f"Kestrel shard {n} serves tenants in region {n % 23}; its gateway rate limit and burst are "
                     f"tuned per tenant, and raw events from it are kept by the ingest tier. Requests per second "
                     f"per tenant are reviewed weekly.")
            body = (f"# Kestrel shard {n}\n\n{prose}\n\n## Claims\n"
                    f"- `kestrel-shard-{n:04d}.rate-limit`: {rng.randint(60, 140)} requests per second per tenant "
                    f"(as of 2026-01-01, [[src-seed]])\n"
                    f"- `kestrel-shard-{n:04d}.burst`: {rng.randint(100, 300)} requests "
                    f"(as of 2026-01-01, [[src-seed]])\n")
            page = Page({"type": "entity", "title": f"Kestrel shard {n}", "summary": prose[:100],
                         "sources": ["src-seed"], "updated": "2026-01-01", "tags": [], "aliases": []}, body)
            (vault.wiki / f"{name}.md").write_text(render_page(page), encoding="utf-8")
        subprocess.run(["git", "-C", str(vault.root), "add", "wiki"], check=True)
        subprocess.run(["git", "-C", str(vault.root), "-c", "user.name=seed", "-c", "user.email=s@x", "commit",
                        "-qm", "seed"], check=True)
        design = {"title": "Kestrel gateway design", "summary": "Limits.", "key_points": [], "operations": [
            {"op": "create_page", "page": "kestrel-gateway", "type": "entity", "title": "Kestrel gateway",
             "summary": "The gateway in front of the ingest tier.", "body": "# Kestrel gateway\n\nThe gateway."},
            *[{"op": "add_claim", "page": "kestrel-gateway", "key": key, "value": old, "as_of": "2026-02-01",
               "quote": quote, "replaces": False} for key, old, quote, _, _ in KESTREL_CLAIMS if quote]]}

        def model(request: dict[str, Any]) -> dict[str, Any]:
            prompt = prompt_text(request)
            if "`raw/kestrel-design.md`" in prompt:
                return design
            for index, (key, old, _, correction, new) in enumerate(KESTREL_CLAIMS):
                if f"`raw/kestrel-fix-{index}.md`" in prompt:
                    if f"`{key}`: {old}" not in prompt:
                        return {"title": "fix", "summary": "", "operations": []}  # not shown: not corrected
                    return {"title": "fix", "summary": "", "operations": [
                        {"op": "add_claim", "page": "kestrel-gateway", "key": key, "value": new,
                         "as_of": "2026-05-01", "quote": correction, "replaces": True}]}
            return {"title": "unknown", "summary": "", "operations": []}

        with ScriptedServer(model) as server:
            os.environ["SCRIPTED_LLM_KEY"] = "sk-bench"
            ctx = VaultContext(server.config(load_config(vault.root)), vault)
            services = ctx.ingest_services()
            pipeline, registrar = services.pipeline, services.registrar
            sources = [("kestrel-design.md", KESTREL_DESIGN)]
            sources += [(f"kestrel-fix-{i}.md", f"# Kestrel change {i}\n\nDate: 2026-05-0{i + 1}.\n\n{c[3]}\n")
                        for i, c in enumerate(KESTREL_CLAIMS)]
            chars = []
            for name, text in sources:
                path = vault.raw / name
                path.write_text(text)
                registrar.register(path)
                before = len(server.requests)
                result = pipeline.drain_once()
                assert result is not None and result.state == "ingested", result
                chars.append(sum(len(prompt_text(r)) for r in server.requests[before:]))
            ctx.close()
        claims, _ = parse_claims(parse_page((vault.wiki / "kestrel-gateway.md").read_text()).body)
        missed = []
        last = {key: new for key, _, _, _, new in KESTREL_CLAIMS}  # each key's final value
        for key, old, _, _, new in KESTREL_CLAIMS:
            values = {c.value for c in claims if c.key == key and c.is_current}
            if old in values or (last[key] == new and new not in values):
                missed.append(f"{key}: {old} -> {new} (current: {', '.join(sorted(values)) or 'none'})")
        print(f"kestrel story at {pages} look-alike pages: prompt chars per ingest "
              f"{' '.join(str(c) for c in chars)}; missed supersessions: {len(missed)}")
        for line in missed:
            print(f"  missed: {line}")
        return len(missed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,100,1000,10000")
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--kestrel", type=int, metavar="N", help="only the Kestrel correction story at N pages")
    args = parser.parse_args()
    if args.kestrel:
        missed = kestrel_story(args.kestrel)
        print(f"target: no missed supersession: {'met' if not missed else 'NOT met'}")
        return 0 if not missed else 1
    rows = [run_size(int(s), args.sources) for s in args.sizes.split(",")]
    base = next((r for r in rows if r["size"] == 100), rows[0])
    print(f"{'pages':>7} {'prompt tok/ingest':>18} {'max':>7} {'vs 100':>7} {'calls/ingest':>13} {'max':>4} "
          f"{'ours ms (excl. model)':>22} {'setup s':>8}")
    for r in rows:
        ratio = r["prompt_tokens"] / base["prompt_tokens"]
        print(f"{r['size']:>7} {r['prompt_tokens']:>18.0f} {r['prompt_tokens_max']:>7.0f} {ratio:>6.2f}x "
              f"{r['calls']:>13.1f} {r['calls_max']:>4} {r['ours_ms']:>22.1f} {r['setup_s']:>8.1f}")
    worst = max(r["prompt_tokens"] for r in rows if r["size"] >= 100) / base["prompt_tokens"]
    ok = worst <= 1.2 and all(r["calls_max"] <= 2 for r in rows)
    by_size = {r["size"]: r for r in rows}
    if 1000 in by_size and 10000 in by_size:  # issue 12: <= 1.2x from 1,000 to 10,000 pages
        growth = by_size[10000]["prompt_tokens"] / by_size[1000]["prompt_tokens"]
        print(f"prompt tokens 1,000 -> 10,000 pages: {growth:.2f}x (target <= 1.2x)")
        ok = ok and growth <= 1.2
    print(f"target: prompt tokens within 1.2x of 100 pages (worst {worst:.2f}x), <= 2 calls per source: "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
