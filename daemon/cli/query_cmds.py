"""The command line: search, reindex and ask."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("search", "full-text search over the pages, with the matching line of each")
    p.add_argument("query", help="words to look for")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="at most N pages (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add("reindex", "rebuild the search catalogue from the pages")
    p = add("ask", "answer a question from the wiki, with [[page]] citations")
    p.add_argument("question", nargs="+", help="the question")
    p.add_argument("--save", action="store_true", help="file the answer as a page (type answer), one commit")
    p.add_argument("--json", action="store_true", help="machine-readable output")


@command("search")
@with_vault(write=False)
def cmd_search(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..query.query import describe_claim, search

    results = search(ctx.vault, ctx.catalog, args.query, args.limit)
    if args.json:
        emit_json({"query": args.query, "results": [r.to_json() for r in results]})
        return 0
    if not results:
        print(f"No page matches {args.query!r}.")
        return 0
    for n, result in enumerate(results, start=1):
        print(f"{n}. {result.title} — wiki/{result.page}.md")
        if result.line is not None:
            print(f"   {result.line.number}: {result.line.label()}")
        shown = result.line.claim if result.line is not None else None
        for claim in result.claims:
            if claim != shown:
                print(f"   also: {describe_claim(claim)}")
    return 0


@command("reindex")
@with_vault(write=False)  # the catalogue is a cache of the pages: rebuilding it writes no vault file
def cmd_reindex(args: argparse.Namespace, ctx: VaultContext) -> int:
    started = time.monotonic()
    count = ctx.catalog.rebuild()
    print(f"Rebuilt the search catalogue: {count} pages in {time.monotonic() - started:.2f}s")
    return 0


def _print_answer(answer: Any) -> None:
    from ..query.query import describe_claim

    print(answer.text)
    if answer.engine == "offline":
        if answer.results:
            print("\nBest pages:")
            for n, result in enumerate(answer.results, start=1):
                print(f"  {n}. [[{result.stem}]] {result.title} — wiki/{result.page}.md")
                if result.line is not None:
                    print(f"     {result.line.number}: {result.line.label()}")
    elif answer.citations:
        print("\nSources: " + ", ".join(f"[[{p.rsplit('/', 1)[-1]}]]" for p in answer.citations))
    if answer.claims:
        print("\nCurrent claims that match:" if answer.engine == "offline" else "\nClaims relied on:")
        for ref in answer.claims:
            print(f"  - {describe_claim(ref.claim)} — on [[{ref.page.rsplit('/', 1)[-1]}]]")
    if answer.flags:
        print("\nDropped by the checks (not supported by the wiki):")
        for flag in answer.flags:
            print(f"  - {flag}")


@command("ask")
@with_vault(write=lambda args: bool(args.save))  # a plain question writes nothing
def cmd_ask(args: argparse.Namespace, ctx: VaultContext) -> int:
    from datetime import date

    from ..query.query import ask, save_answer

    question = " ".join(args.question)
    # --save writes through the door (its recovery first); a plain question opens no door.
    catalog = ctx.door.catalog if args.save else ctx.catalog
    answer = ask(ctx.config, ctx.vault, catalog, ctx.ledger, question, costs=lambda: ctx.costs)
    if args.json:
        emit_json(answer.to_json())
    else:
        _print_answer(answer)
    if args.save:
        page, sha = save_answer(ctx.door, answer, date.today())
        print(f"\nSaved as wiki/{page}.md" + (f" (commit {sha[:10]})" if sha else ""), file=sys.stderr)
        return 0
    return 0 if answer.known else 1
