"""The command line: history, revert and retract."""

from __future__ import annotations

import argparse
import logging

from ..core.opkinds import OpKind
from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("history", "operations on the wiki (from commit trailers), newest first")
    p.add_argument("page", nargs="?", help="only commits that touched this page")
    p.add_argument("--source", metavar="S", help="only operations on this source (raw/ path, src- page or hash)")
    p.add_argument("--since", metavar="DATE", help="only operations since DATE (2026-04-01, '2 weeks ago', "
                   "yesterday); anything else is an error")
    p.add_argument("--kind", metavar="K", help="only operations of kind K: " + ", ".join(k.value for k in OpKind))
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N operations")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("revert", "undo one ingest with a new commit, keeping every later change")
    p.add_argument("ingest", metavar="INGEST", help="the ingest's commit sha, or the source's path in raw/")
    p = add("retract", "the source was wrong: strike its claims as retracted, restore what it replaced")
    p.add_argument("source", metavar="SOURCE", help="the source's path in raw/, or its src- page name")
    p.add_argument("--reason", metavar="TEXT", help="why, shown on the source page")


@command("history")
@with_vault(write=False)
def cmd_history(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..history.view import format_operation, operations, page_path

    repo = ctx.repo
    path = page_path(ctx.vault, ctx.catalog, repo, args.page) if args.page else None
    aliases: dict[str, str] = {}
    if args.source:
        sources = ctx.ledger.sources()
        aliases = {r.page.rsplit("/", 1)[-1].casefold(): r.path for r in sources}
        aliases.update({r.sha256[:12]: r.path for r in sources})
    ops = operations(repo, path=path, source=args.source, since=args.since, kind=args.kind,
                     limit=args.limit, source_aliases=aliases)
    if args.json:
        emit_json({"page": path, "operations": [op.to_json() for op in ops]})
        return 0
    if not ops:
        print("No operations match.")
        return 0
    if path:
        print(f"History of {path} (newest first):")
    for op in ops:
        print("\n".join(format_operation(op)))
    return 0


@command("revert")
@with_vault(write=True)
def cmd_revert(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..history.revert import revert_ingest

    result = revert_ingest(ctx.door, ctx.terms, args.ingest)
    ref = result.ingest
    print(f"Reverted the ingest of {ref.source_path} ({ref.commit.sha[:10]})"
          + (f" in commit {result.commit[:10]}" if result.commit else " (nothing left to change)"))
    for page in result.pages:
        print(f"  changed wiki/{page}.md")
    for page in result.deleted:
        print(f"  removed wiki/{page}.md (created by that ingest)")
    for line in result.restored:
        print(f"  current again: {line}")
    for line in result.removed:
        print(f"  removed claim: {line}")
    for warning in result.warnings:
        print(f"  note: {warning}")
    print(f"{ref.source_path} is recorded as reverted and will not be ingested again by itself.")
    return 0


@command("retract")
@with_vault(write=True)
def cmd_retract(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..history.retract import retract_source

    result = retract_source(ctx.door, args.source, reason=args.reason or "")
    print(f"Retracted {result.source.path}" + (f" in commit {result.commit[:10]}" if result.commit else ""))
    for line in result.retracted:
        print(f"  struck as retracted: {line}")
    for line in result.restored:
        print(f"  current again: {line}")
    for line in result.kept_struck:
        print(f"  kept struck: {line}")
    for page in result.prose:
        print(f"  prose still cites it: wiki/{page}.md (run `wikiwright lint`)")
    return 0
