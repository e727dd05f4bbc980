"""The command line: log, hook and consolidate: daily logs and their consolidation."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, setup_logging, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("log", "append a note to today's daily log (logs/YYYY-MM-DD.md); secrets are redacted")
    p.add_argument("text", nargs="+", metavar="TEXT", help="what happened; - reads it from stdin")
    p.add_argument("--section", metavar="S", help="put it under this section (What Changed, What Worked, "
                   "What Didn't, Patterns Learned, Decisions)")
    p.add_argument("--label", metavar="L", help="where it came from, shown in the block's heading")
    p.add_argument("--session", action="store_true", help="log it as a working session: it counts toward "
                   "the consolidation gate (a plain note does not)")
    p = add("hook", "for agent and git hooks: log a session (always exits 0, never blocks for long)")
    p.add_argument("kind", choices=("claude-code", "git-post-commit"),
                   help="claude-code: SessionEnd/PreCompact hook JSON on stdin; git-post-commit: log the "
                   "commits, amends and rebases the repository's git hooks queued")
    p.add_argument("--repo", metavar="PATH", help="git-post-commit: the code repository (default: current directory)")
    p = add("consolidate", "distil the daily logs into topic pages when the gates allow (one commit)")
    p.add_argument("--check", action="store_true", help="print each gate and its value; exit 0 if it would run")
    p.add_argument("--force", action="store_true", help="skip the time and session gates (never the lock)")
    p.add_argument("--dry-run", action="store_true", help="print the logs it would read and the prompt; write nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")


@command("log")
@with_vault(write=False)  # an append to today's daily log: no database, no door
def cmd_log(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..memory.dailylog import append_session

    vault = ctx.vault
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    result = append_session(vault.logs, text, section=args.section, label=args.label or "", counted=args.session)
    if result is None:
        print("wikiwright: nothing to log (empty text)", file=sys.stderr)
        return 1
    block = "session" if args.session else "note (not counted as a session)"
    what = f"new {block}" if result.new_session else f"added to the last {block}"
    print(f"{result.path.relative_to(vault.root)}: {what} ({result.bytes_written} bytes)")
    return 0


@command("hook")
def cmd_hook(args: argparse.Namespace) -> int:
    """Fire and forget: whatever happens, exit 0 within the deadline (the agent must not wait or fail)."""
    import signal

    from ..memory.hooks import HOOK_DEADLINE_SECONDS, record_hook_problem, run_claude_code_hook, run_git_post_commit

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("gave up: the hook's time limit passed")

    deadline = HOOK_DEADLINE_SECONDS
    with contextlib.suppress(ValueError):
        deadline = max(1, int(os.environ.get("WIKIWRIGHT_HOOK_TIMEOUT", deadline)))
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(deadline)
    try:
        vault = VaultContext.find(getattr(args, "vault", None), write=False).vault  # its path alone
        if args.kind == "claude-code":
            raw = sys.stdin.read(1 << 20)
            payload = json.loads(raw) if raw.strip() else {}
            if not isinstance(payload, dict):
                raise ValueError("the hook payload is not a JSON object")
            result = run_claude_code_hook(payload, vault)
        else:
            result = run_git_post_commit(Path(args.repo or os.getcwd()), vault)
        if result is not None and args.verbose:
            print(f"logged to {result.path}", file=sys.stderr)
    except BaseException as exc:  # a hook must never fail its caller, whatever went wrong
        record_hook_problem(args.kind, f"skipped: {exc}")
        if args.kind == "git-post-commit":
            from ..memory.hooks import queue_dir, release_drain_flag

            with contextlib.suppress(Exception):  # what was queued stays queued for the next commit
                release_drain_flag(queue_dir(Path(args.repo or os.getcwd())))
    finally:
        signal.alarm(0)
    return 0


@command("consolidate")
@with_vault(write=lambda args: not (args.dry_run or args.check))  # those two write nothing
def cmd_consolidate(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..memory.consolidate import Consolidator, dry_run_report

    setup_logging(args.verbose, logging.INFO)
    config, vault = ctx.config, ctx.vault
    # --dry-run and --check write nothing, not even a fresh state database (a read-only
    # context's ledger): the gate reads the ledger and the repository alone.
    if args.dry_run or args.check:
        consolidator = Consolidator(config, vault, ctx.ledger, ctx.repo)
    else:  # a run: through the context's door (the daemon's, when it serves the command)
        consolidator = Consolidator(config, vault, ctx.ledger, ctx.repo, door=ctx.door,
                                    llm=ctx.llm_client() if config.llm.enabled else None)
    if args.dry_run:
        sys.stdout.write(dry_run_report(consolidator))
        return 0
    status = consolidator.gate()
    if args.check:
        if args.json:
            emit_json(status.as_dict())
        else:
            for line in status.lines():
                print(line)
            print("would run" if status.would_run(args.force) else "would not run")
        return 0 if status.would_run(args.force) else 1
    result = consolidator.run(force=args.force)
    if result.recovered:
        print(result.recovered)
    if args.json:
        plan = result.plan
        emit_json({"state": result.state, "detail": result.detail, "commit": result.commit,
                   "logs": [r.rel for r in plan.logs] if plan else [],
                   "pages": [c.page for c in plan.changes] if plan else [],
                   "bytes_in": plan.bytes_in if plan else 0, "bytes_out": plan.bytes_out if plan else 0})
    elif result.state in ("gate-closed", "busy"):
        for line in (result.gate.lines() if result.gate else []):
            print(line)
        print(f"not consolidating: {result.detail} (--force skips the time and session gates)")
    else:
        print(f"{result.state}: {result.detail}" + (f" (commit {result.commit[:10]})" if result.commit else ""))
    return 0 if result.state in ("consolidated", "proposed", "nothing-new") else 1
