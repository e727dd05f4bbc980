"""The command line: lint and doctor."""

from __future__ import annotations

import argparse
import logging

from ..core.errors import WikiwrightError
from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("lint", "check the whole wiki: links, orphans, claims, index, front matter (exit 1 on findings)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--review", action="store_true", help="also add new findings to REVIEW.md (and commit it)")
    p.add_argument("--all", action="store_true", help="include findings rejected or dismissed in REVIEW.md")
    p = add("doctor", "check that nothing was lost (every source accounted for, commits, git, pages); "
            "repairs only what is safe and says what it did")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-repair", action="store_true", help="only report; change nothing")
    p.add_argument("--full", action="store_true",
                   help="check the whole history and object store again (default: what changed since the last run)")


@command("lint")
@with_vault(write=True)
def cmd_lint(args: argparse.Namespace, ctx: VaultContext) -> int:
    import sqlite3

    from ..upkeep.review import ReviewQueue

    queue = ReviewQueue(ctx.config, ctx.vault, lambda: ctx.door, ctx.llm_client)
    try:
        report = queue.lint()
        added: list[str] = []
        if args.review:
            added, _ = queue.sync_findings(report)
    except (OSError, sqlite3.Error) as exc:
        raise WikiwrightError(f"lint could not read the wiki: {exc}") from exc
    finally:
        queue.close()
    shown = [*report.findings, *report.suppressed] if args.all else report.findings
    if args.json:
        data = report.to_dict()
        data["findings"] = [f.to_dict() for f in shown]
        data["added_to_review"] = added
        emit_json(data)
    else:
        for finding in shown:
            where = f"wiki/{finding.page}.md" + (f":{finding.line}" if finding.line else "")
            print(f"{where}: {finding.kind}: {finding.message} [{finding.id}]")
        note = f", {len(report.suppressed)} hidden by REVIEW.md answers (--all shows them)" if report.suppressed else ""
        print(f"{len(report.findings)} finding(s) over {report.pages} pages in {report.seconds:.2f}s{note}")
        if added:
            print(f"{len(added)} new proposal(s) added to REVIEW.md")
    return 1 if report.findings else 0


@command("doctor")
# Its repairs record files in the ledger; --no-repair writes nothing (not even a new state.db).
@with_vault(write=lambda args: not args.no_repair)
def cmd_doctor(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..upkeep.doctor import format_report, run_doctor

    report = run_doctor(ctx.config, ctx.vault, ctx.ledger, ctx.repo, repair=not args.no_repair, full=args.full)
    if args.json:
        emit_json(report.to_dict())
    else:
        print(format_report(report))
    return 0 if report.ok else 1




# -- parser ---------------------------------------------------------------------------------
