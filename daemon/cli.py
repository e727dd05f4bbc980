"""The command line: argument parsing, exit codes, human and JSON output. No daemon logic.

Exit codes: 0 ok; 1 the command ran and found something wrong (quarantined input, lint
findings, a failed doctor check); 2 usage or configuration error; 3 the vault is locked by
another writer; 130 forced stop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__
from .config import Config, load_config, record_default_vault, user_config_path
from .errors import WikiwrightError

log = logging.getLogger("wikiwright")

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        _COMMANDS[name] = func
        return func

    return register


# -- shared helpers ------------------------------------------------------------------------

def setup_logging(verbose: int, default: int = logging.WARNING) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose == 1 else default
    from .logsetup import stderr_handler

    handler = stderr_handler()  # one line per event, secrets redacted, names escaped
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("watchdog", "apscheduler", "git", "LiteLLM", "litellm", "httpx"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def open_vault(args: argparse.Namespace) -> tuple[Config, Any]:
    """Config and vault for a command that works on a vault (the one naming rule)."""
    from .vault import find_vault

    base = load_config(None)
    vault = find_vault(getattr(args, "vault", None), os.environ, base.default_vault)
    return load_config(vault.root), vault


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


def _ago(ts: float | None) -> str:
    if not ts:
        return "never"
    seconds = max(0, time.time() - float(ts))
    if seconds < 90:
        return f"{seconds:.0f}s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


# -- commands --------------------------------------------------------------------------------

@command("init")
def cmd_init(args: argparse.Namespace) -> int:
    from .vault import init_vault

    config = load_config(None)
    vault, created = init_vault(Path(args.path), config.git.author_name, config.git.author_email)
    if created:
        print(f"Created vault {vault.root}")
        for item in created:
            print(f"  + {item}")
    else:
        print(f"{vault.root} is already a complete vault; nothing changed.")
    if not args.no_default:
        path = record_default_vault(vault.root)
        print(f"Default vault recorded in {path}")
    print(f"Next: cd {vault.root} && wikiwright run    (then drop files into raw/)")
    return 0


@command("run")
def cmd_run(args: argparse.Namespace) -> int:
    from .daemon import Daemon
    from .logsetup import add_file_log

    setup_logging(args.verbose, logging.INFO)
    add_file_log()
    config, vault = open_vault(args)
    return Daemon(config, vault, extra_jobs=_periodic_jobs(config, vault)).run()


def _periodic_jobs(config: Config, vault: Any) -> list[Any]:
    """Jobs other rooms ask the daemon to schedule (lint, consolidation, review)."""
    from .schedule import periodic_jobs

    return periodic_jobs(config, vault)


@command("status")
def cmd_status(args: argparse.Namespace) -> int:
    from .status import gather

    config, vault = open_vault(args)
    data = gather(config, vault)
    if args.json:
        emit_json(data)
        return 0
    daemon = data["daemon"]
    print(f"Vault:   {data['vault']}")
    print(f"Engine:  {data['engine']}")
    spend = data.get("spend") or {}
    if spend and (spend["month"]["calls"] or not data["engine"].startswith("offline")):
        print(f"Spend:   {_spend_line(spend['today'], 'today')}; {_spend_line(spend['month'], 'this month')}")
    if daemon["running"]:
        line = f"Daemon:  running ({daemon['holder']})"
        if "watcher_alive" in daemon:
            line += f", watcher {'alive' if daemon['watcher_alive'] else 'DOWN'}"
            line += f", last rescan {_ago(daemon.get('last_rescan'))}"
            if daemon.get("missed_by_watcher"):
                line += f", rescans found {daemon['missed_by_watcher']} file(s) the watcher missed"
            if daemon.get("heartbeat_stale"):
                line += f" — heartbeat stale ({daemon['heartbeat_age_seconds']}s)"
        print(line)
        if daemon.get("last_ingest"):
            print(f"         last ingest {_ago(daemon['last_ingest'])}")
        for problem in daemon.get("problems") or []:
            print(f"UNHEALTHY: {problem}")
    else:
        print("Daemon:  not running (start it with `wikiwright run`)")
    counts = data["counts"]
    print("Sources: " + ", ".join(f"{counts[s]} {s}" for s in
                                  ("ingested", "pending", "running", "duplicate", "quarantined", "skipped")))
    if data["git_problem"]:
        print(f"PAUSED:  commits wait: {data['git_problem']}")
    for notice in data["notices"]:
        print(f"Notice:  {notice['message']} (since {_ago(notice['since'])})")
    if data["pending"]:
        print("\nPending:")
        for row in data["pending"][:20]:
            reason = f" — {row['reason']}" if row["reason"] else ""
            print(f"  {row['path']} [{row['state']}]{reason}")
        if len(data["pending"]) > 20:
            print(f"  … and {len(data['pending']) - 20} more")
    if data["problems"]:
        print("\nNot ingested:")
        for row in data["problems"]:
            print(f"  {row['path']}: {row['state']} — {row['reason']}")
    if data["withdrawn"]:
        print("\nReverted or retracted:")
        for row in data["withdrawn"]:
            print(f"  {row['path']}: {row['state']} (was ingested in {row['commit']}, page [[{row['page']}]])")
    if data["duplicates"]:
        print("\nDuplicates:")
        for row in data["duplicates"][:20]:
            print(f"  {row['path']}: {row['reason']}")
    if data["recent_commits"]:
        print("\nRecent commits:")
        for commit in data["recent_commits"]:
            print(f"  {commit['sha']} {commit['date'][:19]} {commit['subject']}")
    return 0


@command("config")
def cmd_config(args: argparse.Namespace) -> int:
    from .vault import find_vault

    base = load_config(None)
    vault_root = None
    with contextlib.suppress(WikiwrightError):  # `config` also works outside any vault
        vault_root = find_vault(args.vault, os.environ, base.default_vault).root
    config = load_config(vault_root)
    rows = config.items()
    if args.json:
        emit_json({
            "user_config": str(user_config_path()),
            "vault": str(vault_root) if vault_root else None,
            "values": {name: {"value": value, "from": origin} for name, value, origin in rows},
        })
        return 0
    print(f"# user config file: {user_config_path()}")
    print(f"# vault: {vault_root or '(none found)'}")
    width = max(len(name) for name, _, _ in rows)
    for name, value, origin in rows:
        shown = json.dumps(value) if isinstance(value, str | bool) else value
        print(f"{name:<{width}} = {shown!s:<24} # {origin}")
    return 0


def _copy_into_raw(vault: Any, source: Path) -> Path:
    """Files outside raw/ are copied in first (raw/ is the record of what was ingested)."""
    resolved = source.resolve()
    if resolved.is_relative_to(vault.raw.resolve()):
        return source.absolute() if source.is_symlink() else resolved
    target = vault.raw / source.name
    n = 2
    while target.exists() or target.is_symlink():
        if target.is_file() and not target.is_symlink() and target.read_bytes() == source.read_bytes():
            return target
        target = vault.raw / f"{source.stem}-{n}{source.suffix}"
        n += 1
    shutil.copy2(source, target)
    return target


@command("ingest")
def cmd_ingest(args: argparse.Namespace) -> int:
    from .catalog import Catalog
    from .history import GitRepo
    from .queue import Ledger
    from .vault import VaultLock
    from .watch import Registrar
    from .worker import Pipeline

    setup_logging(args.verbose)
    config, vault = open_vault(args)
    files = [Path(f) for f in args.files]
    missing = [str(f) for f in files if not (f.exists() or f.is_symlink())]
    if missing:
        raise WikiwrightError(f"no such file: {', '.join(missing)}")
    lock = VaultLock(vault, "ingest")
    holder = lock.holder()
    if holder is not None:
        for f in files:
            target = _copy_into_raw(vault, f)
            print(f"queued {target.relative_to(vault.root)} for the running daemon ({holder})")
        return 0
    with lock:
        ledger = Ledger(vault.db_path)
        catalog = Catalog(vault)
        try:
            from .doctor import sweep_own_temp_files

            sweep_own_temp_files(vault)  # debris of a killed run; we hold the lock, no write is in flight
            ledger.reset_running()
            catalog.refresh()
            repo = GitRepo(vault.root, config.git.author_name, config.git.author_email,
                           config.git.lock_retry_seconds)
            planner = None
            if config.llm.enabled:
                from .llm_planner import ModelPlanner

                planner = ModelPlanner(config, vault, ledger, catalog)
            pipeline = Pipeline(config, vault, ledger, catalog, repo, planner=planner)
            registrar = Registrar(vault, ledger, config.ingest.max_source_bytes, threading.Event())
            targets = [_copy_into_raw(vault, f) for f in files]
            rels = []
            for target in targets:
                registrar.register(target)
                rels.append(target.relative_to(vault.root).as_posix())
            return _drain_with_progress(pipeline, ledger, rels)
        finally:
            ledger.close()
            catalog.close()


def _drain_with_progress(pipeline: Any, ledger: Any, rels: list[str]) -> int:
    total = len(rels)
    bad = 0
    tty = sys.stderr.isatty()
    done = 0
    for rel in rels:
        record = ledger.get_file(rel)
        if record is None:
            continue
        if record.state in ("pending",):
            continue
        done += 1
        print(f"[{done}/{total}] {rel}: {record.state}" + (f" — {record.reason}" if record.reason else ""))
        bad += record.state == "quarantined"
    while True:
        result = pipeline.drain_once()
        if result is None:
            # Work due again soon (a file still settling) is worth waiting for; a paused
            # repository is not: it is reported below and stays queued.
            soon = [r for r in (ledger.get_file(rel) for rel in rels)
                    if r is not None and r.state == "pending" and r.attempts < 3
                    and r.not_before - time.time() <= 3.0]
            if not soon:
                break
            time.sleep(max(0.0, min(r.not_before for r in soon) - time.time()) + 0.05)
            continue
        if result.path not in rels or result.state == "pending":
            continue
        done += 1
        line = f"[{done}/{total}] {result.path}: {result.state}"
        if result.detail:
            line += f" — {result.detail}"
        if result.commit:
            line += f" ({result.commit[:10]})"
        if tty:
            sys.stderr.write("\r\033[K")
        print(line)
        bad += result.state == "quarantined"
    for rel in rels:
        record = ledger.get_file(rel)
        if record is not None and record.state == "pending":
            done += 1
            bad += 1
            print(f"[{done}/{total}] {rel}: pending — {record.reason or 'queued'}; it stays queued for "
                  "`wikiwright run` or the next `wikiwright ingest`")
    return 1 if bad else 0


@command("lint")
def cmd_lint(args: argparse.Namespace) -> int:
    import sqlite3

    from .review import ReviewQueue

    config, vault = open_vault(args)
    queue = ReviewQueue(config, vault)
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


@command("log")
def cmd_log(args: argparse.Namespace) -> int:
    from .dailylog import append_session

    _config, vault = open_vault(args)
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    result = append_session(vault.logs, text, section=args.section, label=args.label or "")
    if result is None:
        print("wikiwright: nothing to log (empty text)", file=sys.stderr)
        return 1
    what = "new session" if result.new_session else "added to the last session"
    print(f"{result.path.relative_to(vault.root)}: {what} ({result.bytes_written} bytes)")
    return 0


@command("hook")
def cmd_hook(args: argparse.Namespace) -> int:
    """Fire and forget: whatever happens, exit 0 within the deadline (the agent must not wait or fail)."""
    import contextlib
    import signal

    from .hooks import HOOK_DEADLINE_SECONDS, run_claude_code_hook, run_git_post_commit

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("gave up: the hook's time limit passed")

    deadline = HOOK_DEADLINE_SECONDS
    with contextlib.suppress(ValueError):
        deadline = max(1, int(os.environ.get("WIKIWRIGHT_HOOK_TIMEOUT", deadline)))
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(deadline)
    try:
        _config, vault = open_vault(args)
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
        print(f"wikiwright hook {args.kind}: skipped: {exc}", file=sys.stderr)
    finally:
        signal.alarm(0)
    return 0


@command("consolidate")
def cmd_consolidate(args: argparse.Namespace) -> int:
    from .consolidate import Consolidator, dry_run_report
    from .queue import Ledger

    setup_logging(args.verbose, logging.INFO)
    config, vault = open_vault(args)
    read_only = args.dry_run or args.check
    # --dry-run and --check write nothing, not even a fresh state database.
    ledger = Ledger(Path(":memory:") if read_only and not vault.db_path.exists() else vault.db_path)
    try:
        consolidator = Consolidator(config, vault, ledger)
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
    finally:
        ledger.close()


def _spend_line(row: dict[str, Any], when: str) -> str:
    """``$0.0123 of $1.00 today, 12345 tokens (cap 50000), 7 calls``."""
    usd = f"${row['usd']:.4f}" + (f" of ${row['cap_usd']:.2f}" if row["cap_usd"] else "")
    tokens = f"{row['tokens']} tokens" + (f" of {row['cap_tokens']}" if row["cap_tokens"] else "")
    return f"{usd} {when}, {tokens}, {row['calls']} calls"


@command("schema")
def cmd_schema(args: argparse.Namespace) -> int:
    from .operations import schemas_document

    emit_json(schemas_document())
    return 0


@command("search")
def cmd_search(args: argparse.Namespace) -> int:
    from .catalog import Catalog
    from .query import describe_claim, search

    _config, vault = open_vault(args)
    catalog = Catalog(vault)
    try:
        results = search(vault, catalog, args.query, args.limit)
    finally:
        catalog.close()
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
def cmd_reindex(args: argparse.Namespace) -> int:
    from .catalog import Catalog

    _config, vault = open_vault(args)
    started = time.monotonic()
    catalog = Catalog(vault)
    try:
        count = catalog.rebuild()
    finally:
        catalog.close()
    print(f"Rebuilt the search catalogue: {count} pages in {time.monotonic() - started:.2f}s")
    return 0


def _print_answer(answer: Any) -> None:
    from .query import describe_claim

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
def cmd_ask(args: argparse.Namespace) -> int:
    from datetime import date

    from .catalog import Catalog
    from .query import ask, save_answer
    from .queue import Ledger
    from .session import writing_session

    config, vault = open_vault(args)
    question = " ".join(args.question)
    if args.save:
        with writing_session(config, vault, "ask --save") as session:
            answer = ask(config, vault, session.catalog, session.ledger, question)
            if args.json:
                emit_json(answer.to_json())
            else:
                _print_answer(answer)
            page, sha = save_answer(session, answer, date.today())
        print(f"\nSaved as wiki/{page}.md" + (f" (commit {sha[:10]})" if sha else ""), file=sys.stderr)
        return 0
    ledger = Ledger(vault.db_path)
    catalog = Catalog(vault)
    try:
        answer = ask(config, vault, catalog, ledger, question)
    finally:
        ledger.close()
        catalog.close()
    if args.json:
        emit_json(answer.to_json())
    else:
        _print_answer(answer)
    return 0 if answer.known else 1


@command("history")
def cmd_history(args: argparse.Namespace) -> int:
    from .catalog import Catalog
    from .history import GitRepo
    from .history_view import format_operation, operations, page_path
    from .queue import Ledger

    config, vault = open_vault(args)
    repo = GitRepo(vault.root, config.git.author_name, config.git.author_email)
    path = None
    if args.page:
        catalog = Catalog(vault)
        try:
            path = page_path(vault, catalog, repo, args.page)
        finally:
            catalog.close()
    aliases: dict[str, str] = {}
    if args.source:
        ledger = Ledger(vault.db_path)
        try:
            aliases = {r.page.rsplit("/", 1)[-1].casefold(): r.path for r in ledger.sources()}
            aliases.update({r.sha256[:12]: r.path for r in ledger.sources()})
        finally:
            ledger.close()
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
def cmd_revert(args: argparse.Namespace) -> int:
    from .revert import revert_ingest
    from .session import writing_session

    config, vault = open_vault(args)
    with writing_session(config, vault, "revert") as session:
        result = revert_ingest(session, args.ingest)
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
def cmd_retract(args: argparse.Namespace) -> int:
    from .retract import retract_source
    from .session import writing_session

    config, vault = open_vault(args)
    with writing_session(config, vault, "retract") as session:
        result = retract_source(session, args.source, reason=args.reason or "")
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


@command("service")
def cmd_service(args: argparse.Namespace) -> int:
    import subprocess

    from .service import ServiceManager

    manager = ServiceManager(args.manager or "")
    action = args.action
    if action in ("install", "print"):
        _config, vault = open_vault(args)
        if action == "print":
            sys.stdout.write(manager.render(vault.root).decode("utf-8"))
            return 0
        for note in manager.install(vault.root):
            print(note)
        return 0
    if action == "uninstall":
        for note in manager.uninstall():
            print(note)
        return 0
    if action == "status":
        running, text = manager.status()
        print(text)
        return 0 if running else 1
    command_line = manager.log_command(args.lines, args.follow)
    try:
        return subprocess.call(command_line)
    except FileNotFoundError:
        raise WikiwrightError(f"{command_line[0]} was not found; logs are in {command_line[-1]}") from None


@command("doctor")
def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import format_report, run_doctor

    config, vault = open_vault(args)
    report = run_doctor(config, vault, repair=not args.no_repair)
    if args.json:
        emit_json(report.to_dict())
    else:
        print(format_report(report))
    return 0 if report.ok else 1




# -- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wikiwright",
        description="Keep an LLM-maintained markdown wiki up to date: drop files into raw/, "
        "get linked pages, one git commit per change.",
    )
    parser.add_argument("--version", action="version", version=f"wikiwright {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help_text: str, vault: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if vault:
            p.add_argument("--vault", metavar="PATH", help="the vault (default: $WIKIWRIGHT_VAULT, "
                           "the current directory, or the default vault from `init`)")
        p.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
        return p

    p = add("init", "create a vault (git-initialised, first commit); safe to re-run", vault=False)
    p.add_argument("path", help="folder for the vault, e.g. ~/Wiki")
    p.add_argument("--no-default", action="store_true", help="do not record it as the default vault")

    add("run", "run the daemon in the foreground (Ctrl-C stops it cleanly)")

    p = add("status", "queue, sources by state with reasons, pauses, last commits")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("config", "print the effective config and where each value came from")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("ingest", "ingest files now, without the daemon (files outside raw/ are copied in)")
    p.add_argument("files", nargs="+", metavar="FILE")

    p = add("lint", "check the whole wiki: links, orphans, claims, index, front matter (exit 1 on findings)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--review", action="store_true", help="also add new findings to REVIEW.md (and commit it)")
    p.add_argument("--all", action="store_true", help="include findings rejected or dismissed in REVIEW.md")
    p = add("log", "append a session block to today's daily log (logs/YYYY-MM-DD.md); secrets are redacted")
    p.add_argument("text", nargs="+", metavar="TEXT", help="what happened; - reads it from stdin")
    p.add_argument("--section", metavar="S", help="put it under this section (What Changed, What Worked, "
                   "What Didn't, Patterns Learned, Decisions)")
    p.add_argument("--label", metavar="L", help="where it came from, shown in the session heading")

    p = add("hook", "for agent and git hooks: log a session (always exits 0, never blocks for long)")
    p.add_argument("kind", choices=("claude-code", "git-post-commit"),
                   help="claude-code: SessionEnd/PreCompact hook JSON on stdin; git-post-commit: log HEAD's subject")
    p.add_argument("--repo", metavar="PATH", help="git-post-commit: the code repository (default: current directory)")

    p = add("consolidate", "distil the daily logs into topic pages when the gates allow (one commit)")
    p.add_argument("--check", action="store_true", help="print each gate and its value; exit 0 if it would run")
    p.add_argument("--force", action="store_true", help="skip the time and session gates (never the lock)")
    p.add_argument("--dry-run", action="store_true", help="print the logs it would read and the prompt; write nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add("schema", "print the JSON schemas of the model's replies (the operations contract)", vault=False)
    p = add("search", "full-text search over the pages, with the matching line of each")
    p.add_argument("query", help="words to look for")
    p.add_argument("--limit", type=int, default=10, metavar="N", help="at most N pages (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    add("reindex", "rebuild the search catalogue from the pages")

    p = add("ask", "answer a question from the wiki, with [[page]] citations")
    p.add_argument("question", nargs="+", help="the question")
    p.add_argument("--save", action="store_true", help="file the answer as a page (type answer), one commit")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("history", "operations on the wiki (from commit trailers), newest first")
    p.add_argument("page", nargs="?", help="only commits that touched this page")
    p.add_argument("--source", metavar="S", help="only operations on this source (raw/ path, src- page or hash)")
    p.add_argument("--since", metavar="DATE", help="only operations since DATE (2026-04-01, '2 weeks ago')")
    p.add_argument("--kind", metavar="K", help="ingest, lint-fix, review-approval, consolidation, revert, "
                   "retract, answer, user-edit, init or manual")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N operations")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = add("revert", "undo one ingest with a new commit, keeping every later change")
    p.add_argument("ingest", metavar="INGEST", help="the ingest's commit sha, or the source's path in raw/")

    p = add("retract", "the source was wrong: strike its claims as retracted, restore what it replaced")
    p.add_argument("source", metavar="SOURCE", help="the source's path in raw/, or its src- page name")
    p.add_argument("--reason", metavar="TEXT", help="why, shown on the source page")

    p = add("service", "install, remove or inspect the background service (systemd user unit / launchd agent)")
    p.add_argument("action", choices=("install", "uninstall", "status", "logs", "print"),
                   help="install: write the unit and start it (idempotent); print: show the file only")
    p.add_argument("--manager", choices=("systemd", "launchd"), help="default: launchd on macOS, else systemd")
    p.add_argument("-n", "--lines", type=int, default=50, help="logs: how many lines")
    p.add_argument("-f", "--follow", action="store_true", help="logs: keep printing new lines")

    p = add("doctor", "check that nothing was lost (every source accounted for, commits, git, pages); "
            "repairs only what is safe and says what it did")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-repair", action="store_true", help="only report; change nothing")

    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    if not logging.getLogger().handlers:
        setup_logging(getattr(args, "verbose", 0))
    try:
        return _COMMANDS[args.command](args)
    except WikiwrightError as exc:
        print(f"wikiwright: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("wikiwright: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
