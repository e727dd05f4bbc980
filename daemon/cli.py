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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
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

    setup_logging(args.verbose, logging.INFO)
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
            ledger.reset_running()
            catalog.refresh()
            repo = GitRepo(vault.root, config.git.author_name, config.git.author_email,
                           config.git.lock_retry_seconds)
            planner = None
            if config.llm.enabled:
                from .llm import ModelPlanner

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
            break
        if result.path not in rels:
            continue
        if result.state == "pending":
            record = ledger.get_file(result.path)
            if record and record.attempts < 5:
                time.sleep(1)
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
    return 1 if bad else 0


# Other rooms' command handlers go below, each at its own anchor (thin: parse, call the core, print).
# [handlers: lint/review]
# [handlers: daily-log/consolidation]
# [handlers: model]
# [handlers: search/history]
# [handlers: service/doctor]


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

    # Other rooms' commands are added below, each at its own anchor.
    # [anchor: lint/review commands]
    # [anchor: daily-log/consolidation commands]
    # [anchor: model commands]
    # [anchor: search/history commands]
    # [anchor: service/doctor commands]
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
