"""An earlier commit's code beside this tree's: its package, importable in a process of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def has_commit(ref: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{ref}^{{commit}}"],
                          capture_output=True).returncode == 0


def export_code(ref: str, out: Path) -> Path:
    """``ref``'s daemon/ and shipped files in ``out``, importable as ``wikiwright`` from ``out/pkg``."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "daemon", "config", "systemd", "hooks"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    (out / "pkg").mkdir()
    (out / "pkg" / "wikiwright").symlink_to(out / "daemon")
    return out / "pkg"


def run_release(pkg: Path, *args: str, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The earlier release's CLI (``pkg`` first on the path, so its ``wikiwright`` is imported)."""
    code = (f"import sys; sys.path.insert(0, {str(pkg)!r}); import wikiwright; "
            f"assert wikiwright.__file__.startswith({str(pkg)!r}), wikiwright.__file__; "
            "from wikiwright.cli.main import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], env=env if env is not None else dict(os.environ),
                          capture_output=True, text=True, timeout=timeout, cwd=pkg)
