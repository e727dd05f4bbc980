"""The command line: mcp (the wiki as a Model Context Protocol server over stdio)."""

from __future__ import annotations

import argparse
import logging

from ..runtime.context import VaultContext
from .common import AddParser, command, setup_logging, with_vault


def add_parsers(add: AddParser) -> None:
    add("mcp", "serve the wiki to agents over MCP (stdio): search, read_page, list_pages, history, ask, "
        "log, ingest_text, status; resources wiki://PAGE")


@command("mcp")
@with_vault(write=True)
def cmd_mcp(args: argparse.Namespace, ctx: VaultContext) -> int:
    from ..runtime.mcp_server import serve

    setup_logging(args.verbose, logging.WARNING)  # stderr only: stdout carries the protocol
    return serve(ctx)
