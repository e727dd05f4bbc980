"""What benchmarks share: another commit's code beside this tree's (to compare the two in one
run), a process environment of its own (a home, a git identity, no WIKIWRIGHT_ settings), and
the scratch folder's end (kept with ``--keep``, else removed)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository, for tests.*

from tests.release_code import export_code  # noqa: E402  (re-exported for the benchmarks)

__all__ = ["export_code", "isolate", "keep_or_remove"]


def isolate(base: Path) -> None:
    """This process's environment for a benchmark: its own home and git identity under ``base``,
    no automatic gc, none of the person's WIKIWRIGHT_ settings or service sockets."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
                         "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n")
    for name in list(os.environ):
        if name.startswith("WIKIWRIGHT_") or name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
            del os.environ[name]
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_STATE_HOME": str(home / ".state"), "GIT_CONFIG_GLOBAL": str(gitconfig),
                       "GIT_CONFIG_NOSYSTEM": "1"})


def keep_or_remove(base: Path, keep: bool) -> None:
    """A benchmark's scratch folder at its end: kept for a look (``--keep``: its path printed), else removed."""
    if keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
