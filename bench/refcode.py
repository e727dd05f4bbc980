"""Another commit's code beside this tree's, for benchmarks that compare the two in one run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
