"""The command line: ingest (one-shot) and schema."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from ..core.errors import WikiwrightError
from ..intake.drop import copy_into_raw, expand
from ..intake.names import relative_name
from ..runtime.context import VaultContext
from .common import AddParser, command, emit_json, setup_logging, with_vault

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("ingest", "ingest files now, without the daemon (files outside raw/ are copied in)")
    p.add_argument("files", nargs="+", metavar="FILE")
    add("schema", "print the JSON schemas of the model's replies (the operations contract)", vault=False)


@command("ingest")
@with_vault(write=True)
def cmd_ingest(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..core.vault import VaultLock
    from ..ingest.pipeline import JobResult

    setup_logging(args.verbose)
    vault = ctx.vault
    given = [Path(f) for f in args.files]
    missing = [str(f) for f in given if not (f.exists() or f.is_symlink())]
    if missing:
        raise WikiwrightError(f"no such file: {', '.join(missing)}")
    # Folders give the files under them; a link outside raw/ is refused, never followed.
    files, refused = expand(vault, given)
    for line in refused:
        print(f"refused {line}")
    if not files:
        return 1
    lock = VaultLock(vault, "ingest")
    waiting_said = False
    while not lock.try_acquire():
        # Only a running daemon takes the files over; another one-shot `ingest` is waited for.
        if lock.holder_purpose() == "run":
            holder = lock.holder()
            for f, folder in files:
                target = copy_into_raw(vault, f, folder)
                print(f"queued {relative_name(vault.root, target)} for the running daemon ({holder})")
            return 1 if refused else 0
        if not waiting_said:
            print(f"waiting for {lock.holder() or 'another wikiwright command'} to finish", file=sys.stderr)
            waiting_said = True
        time.sleep(0.1)
    try:
        from ..runtime.oneshot import ingest_here

        targets = [copy_into_raw(vault, f, folder) for f, folder in files]
        done = 0

        def report(result: JobResult) -> None:
            nonlocal done
            done += 1
            line = f"[{done}/{len(targets)}] {result.path}: {result.state}"
            if result.detail:
                line += f" — {result.detail}"
            if result.state == "pending":
                line += "; it stays queued for `wikiwright run` or the next `wikiwright ingest`"
            elif result.commit:
                line += f" ({result.commit[:10]})"
            print(line)

        outcomes = ingest_here(ctx, targets, report)
        return 1 if refused or any(r.state in ("quarantined", "pending", "running") for r in outcomes) else 0
    finally:
        lock.release()


@command("schema")
def cmd_schema(args: argparse.Namespace) -> int:
    from ..ingest.operations import schemas_document

    emit_json(schemas_document())
    return 0
