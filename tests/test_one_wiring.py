"""The ingest wiring (door -> planner -> pipeline -> registrar) is written once, in the vault
context (runtime/context.py: ``VaultContext.ingest_services`` and ``wire_ingest``), and the
benchmarks and tests take it from there (issue 24: five copies had drifted, ``allow_hard_links``
missing in three). A benchmark or test that builds a Door, Pipeline or Registrar itself is a
copy a change to the wiring never reaches: it measures or tests something the daemon does not run.

Read as source (the AST of every file in bench/ and tests/), so a construction behind an alias
(``from wikiwright.door import Door as D``) or a module attribute (``pipeline.Pipeline(...)``)
counts as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRED = ("Door", "Pipeline", "Registrar")

# Files whose subject is the door itself, so they build doors by hand on purpose. Each entry
# must still construct one (a stale entry fails below).
ALLOWED = {
    # A crash at every crash point of each operation kind, in a forked child, then the restart:
    # what is under test is the door's operation and its recovery (Door.open), each opened bare
    # so the child holds nothing but the door, and a pipeline on that door to drive an ingest.
    "tests/test_door_crash.py": "crash points of the door's operations and the recovery of a new door",
    # A door on the context's parts that has not recovered yet: the consolidation run is the
    # process's first operation, and what its recovery did is what the test reads.
    "tests/test_consolidate.py": "a consolidation run reporting the recovery of a crashed run",
    # A door opened without the term index: it must refuse the journal whose delta needs one.
    "tests/test_terms_delta.py": "a door without the sink a journaled delta names refuses to open",
}


def _constructions(source: str, label: str) -> list[str]:
    """``label:line name`` of each call building a Door (``Door(...)``, ``Door.open(...)``), a
    Pipeline or a Registrar in ``source``, in line order."""
    tree = ast.parse(source, filename=label)
    names = {name: name for name in WIRED}  # local name -> the class it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wikiwright"):
            for alias in node.names:
                if alias.name in WIRED:
                    names[alias.asname or alias.name] = alias.name
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        built = None
        if isinstance(func, ast.Name) and func.id in names:
            built = names[func.id]
        elif isinstance(func, ast.Attribute) and func.attr in WIRED:
            built = func.attr  # module.Pipeline(...)
        elif isinstance(func, ast.Attribute) and func.attr == "open":
            target = func.value
            named = names.get(target.id) if isinstance(target, ast.Name) else None
            if named == "Door" or (isinstance(target, ast.Attribute) and target.attr == "Door"):
                built = "Door.open"
        if built is not None:
            found.append((node.lineno, f"{label}:{node.lineno} {built}"))
    return [hit for _, hit in sorted(found)]


def _in_file(name: str) -> list[str]:
    return _constructions((ROOT / name).read_text(encoding="utf-8"), name)


def _scanned() -> list[str]:
    paths = [*(ROOT / "bench").glob("*.py"), *(ROOT / "tests").rglob("*.py")]
    return sorted(path.relative_to(ROOT).as_posix() for path in paths)


def test_benchmarks_and_tests_take_the_ingest_wiring_from_the_vault_context() -> None:
    copies = [hit for name in _scanned() if name not in ALLOWED for hit in _in_file(name)]
    assert copies == [], (
        "a Door, Pipeline or Registrar built outside the shared wiring (open a VaultContext and take "
        "ctx.door / ctx.ingest_services(); tests: tests/conftest.py open_services; a need the wiring "
        "lacks is a parameter there, not a copy):\n" + "\n".join(copies))


def test_each_allowed_file_still_builds_a_door() -> None:
    """An allow-list entry whose file no longer builds one by hand is taken off the list."""
    stale = [name for name in ALLOWED if not (ROOT / name).exists() or not _in_file(name)]
    assert stale == []


def test_the_scan_sees_every_spelling_of_a_construction() -> None:
    """The detector itself: each way of writing a construction is found (else the first test
    could pass on a copy it does not see), and a mere mention (an import, a type) is not."""
    sample = ("from wikiwright.door import Door as D\n"
              "from wikiwright.ingest import pipeline\n"
              "from wikiwright.intake.watch import Registrar\n"
              "import wikiwright.door\n"
              "def typed(door: D, registrar: Registrar) -> None: ...\n"
              "d = D.open(config, vault)\n"
              "p = pipeline.Pipeline(d)\n"
              "r = Registrar(vault, ledger, 1, event)\n"
              "e = wikiwright.door.Door.open(config, vault)\n"
              "f = D(config, vault, ledger, catalog, repo)\n")
    assert _constructions(sample, "sample.py") == [
        "sample.py:6 Door.open", "sample.py:7 Pipeline", "sample.py:8 Registrar", "sample.py:9 Door.open",
        "sample.py:10 Door"]
