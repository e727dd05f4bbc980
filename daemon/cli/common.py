"""Shared pieces of the command line: the command registry, vault lookup, output helpers."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ..core.config import Config, load_config

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
    from .handoff import serving

    if serving():
        return  # a command the daemon runs for a client: the daemon's logging stays as it is
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose == 1 else default
    from ..core.logsetup import stderr_handler

    handler = stderr_handler()  # one line per event, secrets redacted, names escaped
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("watchdog", "apscheduler", "git", "LiteLLM", "litellm", "httpx"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def open_vault(args: argparse.Namespace) -> tuple[Config, Any]:
    """Config and vault for a command that works on a vault (the one naming rule)."""
    from ..core.vault import find_vault

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


AddParser = Callable[..., argparse.ArgumentParser]
