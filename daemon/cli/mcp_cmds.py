"""The command line: mcp (the wiki as a Model Context Protocol server over stdio)."""

from __future__ import annotations

import argparse
import logging

from .common import AddParser, command, open_vault, setup_logging


def add_parsers(add: AddParser) -> None:
    add("mcp", "serve the wiki to agents over MCP (stdio): search, read_page, list_pages, history, ask, "
        "log, ingest_text, status; resources wiki://PAGE")


@command("mcp")
def cmd_mcp(args: argparse.Namespace) -> int:
    from ..runtime.mcp_server import serve

    setup_logging(args.verbose, logging.WARNING)  # stderr only: stdout carries the protocol
    config, vault = open_vault(args)
    return serve(config, vault)
