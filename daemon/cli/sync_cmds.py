"""The command line: sync — one round of fetch, integrate and push by hand."""

from __future__ import annotations

import argparse

from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, with_vault


def add_parsers(add: AddParser) -> None:
    p = add("sync", "one sync round with the git remote (git.remote): fetch, merge the other machines' "
            "work, push; exit 1 when it has to wait (offline, a merge in progress)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--rebuild-ledger", action="store_true",
                   help="first record every ingest in the shared history in this vault's ledger")


@command("sync")
@with_vault(write=True)
def cmd_sync(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..door.sync import Syncer, rebuild_ledger_sources
    from ..runtime.status import sync_summary

    config, ledger, repo = ctx.config, ctx.ledger, ctx.repo
    imported = rebuild_ledger_sources(repo, ledger) if args.rebuild_ledger else 0
    syncer = Syncer(config, ctx.vault, ledger, ctx.catalog, repo, door=ctx.door)
    if not syncer.enabled:
        print("wikiwright: sync is off: set git.remote (e.g. WIKIWRIGHT_GIT_REMOTE=origin or [git] remote "
              "in .wikiwright/config.toml)")
        return 2
    report = syncer.round()
    summary = sync_summary(config, ledger, repo)
    if args.json:
        emit_json({"state": report.state, "detail": report.detail, "merged": report.merged,
                   "conflicts": report.conflicts, "duplicates": report.duplicates, "refused": report.refused,
                   "imported": report.imported + imported, "status": summary})
    else:
        print(f"sync: {report.state}" + (f" — {report.detail}" if report.detail else ""))
        for path in report.conflicts:
            print(f"  conflict kept for review in REVIEW.md: {path}")
        for path in report.duplicates:
            print(f"  duplicate of a source another machine ingested first: {path}")
        for line in report.refused[:20]:
            print(f"  {line}")
        if len(report.refused) > 20:
            print(f"  … and {len(report.refused) - 20} more refused (REVIEW.md lists them)")
        if summary.get("not_pushed"):
            print(f"  {summary['not_pushed']} commits not pushed")
    return 0 if report.state in ("up-to-date", "integrated", "pushed") else 1
