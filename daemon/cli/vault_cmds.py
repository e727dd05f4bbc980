"""The command line: init, run, status, config, service: the vault and its daemon."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ..core.config import load_config, record_default_vault, user_config_path
from ..core.errors import WikiwrightError
from ..runtime.context import VaultContext
from .common import AddParser, RegisteredCommandLine, _ago, command, emit_json, setup_logging, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("init", "create a vault (git-initialised, first commit); safe to re-run", vault=False)
    p.add_argument("path", help="folder for the vault, e.g. ~/Wiki")
    p.add_argument("--no-default", action="store_true", help="do not record it as the default vault")
    add("run", "run the daemon in the foreground (Ctrl-C stops it cleanly)")
    p = add("status", "queue, sources by state with reasons, pauses, last commits")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("config", "print the effective config and where each value came from")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("service", "install, remove or inspect the background service (systemd user unit / launchd agent)")
    p.add_argument("action", choices=("install", "uninstall", "status", "logs", "print"),
                   help="install: write the unit and start it (idempotent); print: show the file only")
    p.add_argument("--manager", choices=("systemd", "launchd"), help="default: launchd on macOS, else systemd")
    p.add_argument("-n", "--lines", type=int, default=50, help="logs: how many lines")
    p.add_argument("-f", "--follow", action="store_true", help="logs: keep printing new lines")


@command("init")
def cmd_init(args: argparse.Namespace) -> int:
    from ..door.init import init_vault

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
@with_vault(write=True)
def cmd_run(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..core.logsetup import add_file_log

    setup_logging(args.verbose, logging.INFO)
    add_file_log()
    return build_daemon(ctx).run()


def build_daemon(ctx: VaultContext) -> Any:
    """The daemon `wikiwright run` runs, on the process's context: the jobs other rooms ask it
    to schedule (lint, consolidation, review, sync; they take its door and parts once its
    setup opened them) and the control socket serving this command line's commands."""
    from ..runtime.daemon import Daemon
    from ..runtime.handoff import make_executor
    from ..runtime.schedule import periodic_jobs

    return Daemon(ctx, extra_jobs=periodic_jobs,
                  control=lambda daemon: make_executor(daemon, RegisteredCommandLine()))


@command("status")
@with_vault(write=False)
def cmd_status(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..runtime.status import gather

    data = gather(ctx)
    if args.json:
        emit_json(data)
        return 0
    daemon = data["daemon"]
    print(f"Vault:   {data['vault']}")
    print(f"Engine:  {data['engine']}")
    print(f"Writes:  compare-and-swap by {data['writes']}")
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
    consolidation = data.get("consolidation") or {}
    if consolidation.get("logs"):
        print(f"Logs:    {', '.join(consolidation['logs'][-3:])} {consolidation['line']}")
    if data["git_problem"]:
        print(f"PAUSED:  commits wait: {data['git_problem']}")
    sync = data.get("sync") or {}
    if sync.get("enabled"):
        line = (f"Sync:    {sync['remote']}/{sync['branch']}: {sync['ahead']} ahead, {sync['behind']} behind, "
                f"last sync {_ago(sync.get('last_sync'))}")
        if sync.get("not_pushed"):
            line += f"; {sync['not_pushed']} commits not pushed"
        print(line)
        if sync.get("waiting"):
            print(f"         waits: {sync['waiting']}")
        refused = sync.get("refused") or []
        if refused:
            print(f"         {sync.get('refused_total', len(refused))} entries refused from the remote "
                  "(not written, not committed; REVIEW.md lists them), the newest:")
            for line in refused[-10:]:
                print(f"         {line}")
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
    from ..core.vault import find_vault

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


def _spend_line(row: dict[str, Any], when: str) -> str:
    """``$0.0123 of $1.00 today, 12345 tokens (cap 50000), 7 calls``."""
    usd = f"${row['usd']:.4f}" + (f" of ${row['cap_usd']:.2f}" if row["cap_usd"] else "")
    tokens = f"{row['tokens']} tokens" + (f" of {row['cap_tokens']}" if row["cap_tokens"] else "")
    return f"{usd} {when}, {tokens}, {row['calls']} calls"


@command("service")
def cmd_service(args: argparse.Namespace) -> int:
    import subprocess

    from ..runtime.service import ServiceManager

    manager = ServiceManager(args.manager or "")
    action = args.action
    if action in ("install", "print"):
        vault = VaultContext.find(args.vault, write=False).vault  # the vault's path alone: nothing opened
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
