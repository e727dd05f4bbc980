"""The command line: ingest (one-shot) and schema."""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..core.errors import WikiwrightError
from .common import AddParser, command, emit_json, open_vault, setup_logging

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("ingest", "ingest files now, without the daemon (files outside raw/ are copied in)")
    p.add_argument("files", nargs="+", metavar="FILE")
    add("schema", "print the JSON schemas of the model's replies (the operations contract)", vault=False)


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
    from ..core.vault import VaultLock
    from ..ingest.pipeline import Pipeline
    from ..intake.ledger import Ledger
    from ..intake.watch import Registrar
    from ..vcs.repo import GitRepo
    from ..wiki.catalog import Catalog

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
            from ..upkeep.doctor import sweep_own_temp_files

            sweep_own_temp_files(vault)  # debris of a killed run; we hold the lock, no write is in flight
            ledger.reset_running()
            catalog.refresh()
            repo = GitRepo(vault.root, config.git.author_name, config.git.author_email,
                           config.git.lock_retry_seconds)
            planner = None
            if config.llm.enabled:
                from ..ingest.llm_planner import ModelPlanner

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


@command("schema")
def cmd_schema(args: argparse.Namespace) -> int:
    from ..ingest.operations import schemas_document

    emit_json(schemas_document())
    return 0
