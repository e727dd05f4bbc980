"""Secret scanning benchmark (issue 20): what core/secrets.py costs the daemon, which scans
every source, prompt, file name and log line.

Prints the import cost (a fresh interpreter importing wikiwright.core.secrets, then the first
scan, which loads detect-secrets), then ms per 100 KB over documents found on this machine (the
long descriptions in installed packages' ``*.dist-info/METADATA`` and text files under
/usr/share/doc, none written for wikiwright), and how many of those public documents the scanner
flags (each finding's kind and line, values cut short, so false positives can be read).

With ``--against REV`` the secret table of an older commit (``git show REV:daemon/core/secrets.py``)
is timed on the same documents in the same run, for comparison.

    .venv/bin/python bench/bench_secrets.py [--max-docs 400] [--against 24d8db4] [--show]
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from wikiwright.core import secrets  # noqa: E402


def documents(limit: int) -> list[tuple[str, str]]:
    site = sysconfig.get_paths()["purelib"]
    paths = sorted(glob.glob(f"{site}/*.dist-info/METADATA"))
    paths += sorted(p for p in glob.glob("/usr/share/doc/**/*", recursive=True)
                    if p.endswith((".md", ".txt", ".rst", "README", "NEWS")))
    docs = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text.strip():
            docs.append((path, text))
        if len(docs) >= limit:
            break
    return docs


def import_cost() -> tuple[float, float]:
    """(seconds to import the module, seconds for the first scan) in a fresh interpreter."""
    code = ("import time; t = time.perf_counter(); import wikiwright.core.secrets as s; a = time.perf_counter() - t; "
            "t = time.perf_counter(); s.scan('password = hunter2'); print(a, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def older_table(rev: str) -> ModuleType | None:
    try:
        source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:daemon/core/secrets.py"],
                                capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError):
        return None
    folder = Path(tempfile.mkdtemp())
    (folder / "secrets_old.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("secrets_old", folder / "secrets_old.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["secrets_old"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def timed(scan: object, docs: list[tuple[str, str]]) -> tuple[float, list[str]]:
    started = time.perf_counter()
    flagged = []
    for path, text in docs:
        _, kinds = scan(text)  # type: ignore[operator]
        if kinds:
            flagged.append(path)
    return time.perf_counter() - started, flagged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-docs", type=int, default=400)
    parser.add_argument("--against", metavar="REV", help="also time the secret table of this commit")
    parser.add_argument("--show", action="store_true", help="print each finding in a flagged document")
    args = parser.parse_args()

    imported, first = import_cost()
    print(f"import wikiwright.core.secrets: {imported * 1000:.0f} ms; first scan (loads detect-secrets): "
          f"{first * 1000:.0f} ms")
    docs = documents(args.max_docs)
    size = sum(len(text) for _, text in docs)
    print(f"{len(docs)} public documents found on this machine, {size / 1e6:.2f} MB")
    secrets.find("warm up")
    runs = [("scanner (detect-secrets + table)", secrets.scan)]
    if args.against:
        old = older_table(args.against)
        if old is None:
            print(f"--against {args.against}: no daemon/core/secrets.py at that commit")
        else:
            runs.append((f"secret table at {args.against}", old.scan))
    for name, scan in runs:
        seconds, flagged = timed(scan, docs)
        print(f"{name:36s} {seconds * 1000 / (size / 1e5):7.1f} ms per 100 KB; flags {len(flagged)} of "
              f"{len(docs)} public documents")
        if args.show and scan is secrets.scan:
            for path in flagged:
                text = dict(docs)[path]
                for finding in secrets.find(text):
                    start = text.rfind("\n", 0, finding.start) + 1
                    line = text[start:text.find("\n", finding.start)]
                    print(f"    {Path(path).parent.name[:40]}: {finding.kind}: {line.strip()[:100]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
