"""Shared pieces of the command line: the command registry, vault lookup, output helpers."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from ..runtime.context import VaultContext

log = logging.getLogger("wikiwright")

Handler = Callable[[argparse.Namespace], int]
VaultHandler = Callable[[argparse.Namespace, VaultContext], int]
_COMMANDS: dict[str, Handler] = {}


_PARSER: list[Callable[[], argparse.ArgumentParser]] = []  # main.py registers build_parser


def register_parser(build: Callable[[], argparse.ArgumentParser]) -> None:
    _PARSER[:] = [build]


class RegisteredCommandLine:
    """The command line as the daemon's executor (runtime/handoff.py) asks for it: the parser
    main.py registered and the handlers the @command decorator registered. Reaching them through
    these registries keeps cli/ free of import circles (`run` needs every command)."""

    def parse(self, argv: list[str]) -> argparse.Namespace | None:
        if not _PARSER:  # cli/main.py not imported: the command line is not there to parse it
            return None
        try:
            return _PARSER[0]().parse_args(argv)
        except SystemExit:
            return None

    def run(self, args: argparse.Namespace) -> int:
        return _COMMANDS[args.command](args)


def command(name: str) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        _COMMANDS[name] = func
        return func

    return register


# -- shared helpers ------------------------------------------------------------------------

def setup_logging(verbose: int, default: int = logging.WARNING) -> None:
    from ..runtime.handoff import serving

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


def with_vault(*, write: bool | Callable[[argparse.Namespace], bool]) -> Callable[[VaultHandler], Handler]:
    """A command that works on a vault: its handler gets the process's :class:`VaultContext`.

    Run by the daemon for a client, that is the daemon's own context (every command it serves
    shares it: one connection to each database, one door); else one opened for the command
    (the one naming rule: ``--vault``, ``WIKIWRIGHT_VAULT`` and the working folder, the user
    config's default vault) and closed when it ends. ``write=False``: a command that only
    reads; its context opens nothing that writes (no door, no recovery); a function of the
    arguments when that depends on them (``consolidate --dry-run``)."""

    def wrap(func: VaultHandler) -> Handler:
        @functools.wraps(func)
        def handler(args: argparse.Namespace) -> int:
            from ..runtime.handoff import serving_context

            shared = serving_context()
            if shared is not None:
                return func(args, shared)
            writes = write(args) if callable(write) else write
            with VaultContext.find(getattr(args, "vault", None), write=writes) as ctx:
                return func(args, ctx)

        return handler

    return wrap


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
