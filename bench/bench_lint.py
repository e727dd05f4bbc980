"""Lint time over generated wikis of 1,000 and 10,000 pages.

Each page has front matter, prose with wikilinks to other pages (some by title or alias,
some broken), a Claims section with current, superseded and conflicting claims, and one
source page per ten pages; index.md is built as the daemon builds it. Two timings per size:
"cold" (the page catalogue is empty and is built first, as after `wikiwright reindex`) and
"warm" (the catalogue is current, as in the running daemon, which refreshes it on every
ingest). The last column compares per-page cost with the smallest size measured in the
same run (1.00 = linear).

    .venv/bin/python bench/bench_lint.py [SIZES...]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository, for tests.helpers

from tests.helpers import rebuild_index
from wikiwright.core.config import LintConfig
from wikiwright.core.vault import Vault
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.catalog import Catalog


def generate(root: Path, pages: int, seed: int = 7) -> Vault:
    rng = random.Random(seed)
    vault = Vault(root)
    (vault.wiki / "sources").mkdir(parents=True)
    vault.state.mkdir()
    sources = max(1, pages // 10)
    for n in range(sources):
        (vault.wiki / "sources" / f"src-{n}.md").write_text(
            f"---\ntype: source\ntitle: Source document {n}\nsources:\n- raw/doc-{n}.md\n---\n\n"
            f"# Source document {n}\n\nSummary of document {n}.\n", encoding="utf-8")
    (vault.wiki / "index.md").write_text(
        "---\ntype: index\ntitle: Index\n---\n\n# Index\n\n<!-- wikiwright:index:start (built by wikiwright; edit"
        " outside this block) -->\n<!-- wikiwright:index:end -->\n", encoding="utf-8")
    (vault.wiki / "log.md").write_text("---\ntype: log\ntitle: Log\n---\n\n# Log\n", encoding="utf-8")
    (vault.wiki / "overview.md").write_text("---\ntype: overview\ntitle: Overview\n---\n\n# Overview\n")
    for n in range(pages - sources):
        links = [f"[[page-{rng.randrange(pages)}]]" for _ in range(4)]
        links.append(f"[[Topic number {rng.randrange(pages)}|a label]]")
        links.append(f"[[page-{rng.randrange(pages)}#Claims]]")
        if rng.random() < 0.02:
            links.append(f"[[Nobody {rng.randrange(pages)}]]")
        src = rng.randrange(sources)
        claims = [
            f"- `topic.{n}.size`: {rng.randrange(100)} units (as of 2026-01-{1 + n % 28:02d}, [[src-{src}]])",
            f"- ~~`area.{n % 50}.limit`: {n % 7} per second (as of 2025-12-01, [[src-{src}]])~~ superseded by "
            f"[[src-{(src + 1) % sources}]]",
            f"- `area.{n % 50}.limit.burst`: {n % 5} per second (as of 2026-02-01, [[src-{src}]])",
        ]
        body = (
            f"# Topic number {n}\n\nThis page is about topic {n}. It relates to {', '.join(links[:3])}.\n\n"
            f"More prose here, mentioning {', '.join(links[3:])} and a few plain words to read.\n\n"
            + "Filler sentence about the topic and its neighbours. " * 8
            + "\n\n## Claims\n" + "\n".join(claims) + "\n"
        )
        meta = (f"---\ntype: {rng.choice(['entity', 'concept', 'topic'])}\ntitle: Topic number {n}\n"
                f"summary: What topic {n} is.\nsources:\n- raw/doc-{src}.md\nupdated: 2026-02-01\ntags:\n- bench\n"
                f"aliases:\n- T{n}\n---\n\n")
        (vault.wiki / f"page-{n}.md").write_text(meta + body, encoding="utf-8")
    return vault


def measure(pages: int) -> tuple[float, float, int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        vault = generate(Path(tmp) / "vault", pages)
        config = LintConfig()
        started = time.perf_counter()
        catalog = Catalog(vault)
        report = run_lint(vault, config, catalog)
        cold = time.perf_counter() - started
        rebuild_index(vault, catalog)
        run_lint(vault, config, catalog)  # settle the catalogue after the index write
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            report = run_lint(vault, config, catalog)
            runs.append(time.perf_counter() - started)
        catalog.close()
        return cold, min(runs), report.pages, len(report.findings)


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [1000, 10000]
    print(f"{'pages':>7} {'cold s':>8} {'warm s':>8} {'findings':>9} {'warm ms/page':>13} {'vs first':>9}")
    base = None
    for size in sizes:
        cold, warm, counted, findings = measure(size)
        per_page = warm / counted
        base = base or per_page
        print(f"{counted:>7} {cold:>8.2f} {warm:>8.2f} {findings:>9} {per_page * 1000:>13.3f} {per_page / base:>9.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
