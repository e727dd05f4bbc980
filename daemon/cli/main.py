"""The command line: argument parsing, exit codes, human and JSON output. No daemon logic.

Exit codes: 0 ok; 1 the command ran and found something wrong (quarantined input, lint
findings, a failed doctor check); 2 usage or configuration error; 3 the vault is locked by
another writer; 130 forced stop.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .. import __version__
from ..core.errors import WikiwrightError
from . import (
    eval_cmds,
    handoff,
    history_cmds,
    hooks_cmds,
    ingest_cmds,
    mcp_cmds,
    memory_cmds,
    query_cmds,
    sync_cmds,
    upkeep_cmds,
    vault_cmds,
)
from .common import _COMMANDS, register_parser, setup_logging

# Each module registers its commands (the @command decorator) and their parsers (add_parsers).
COMMAND_MODULES = (vault_cmds, upkeep_cmds, ingest_cmds, memory_cmds, hooks_cmds, mcp_cmds, query_cmds,
                   history_cmds, sync_cmds, eval_cmds)


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

    for module in COMMAND_MODULES:
        module.add_parsers(add)
    return parser


register_parser(build_parser)  # for the daemon's executor of handed-off commands


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        # A running daemon does the work of ingest/ask/consolidate/lint/status (its model client
        # is loaded, and it logs for the command); without one, or when it declines, the command
        # runs here.
        handed = handoff.delegate(args, sys.argv[1:] if argv is None else argv)
        if handed is not None:
            return handed
        if not logging.getLogger().handlers:
            setup_logging(getattr(args, "verbose", 0))
        return _COMMANDS[args.command](args)
    except WikiwrightError as exc:
        print(f"wikiwright: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("wikiwright: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
