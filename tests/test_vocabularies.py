"""The project's closed vocabularies — fix actions, operation names, file and source states —
are each defined once and dispatched by a table; these tests hold the tables to the definitions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from wikiwright.core.opkinds import MACHINE_LOCAL_FIXES, FixAction
from wikiwright.ingest import normalize, operations
from wikiwright.intake.ledger import FileState, SourceState
from wikiwright.upkeep import review

DAEMON = Path(review.__file__).resolve().parents[1]


def _sources() -> list[tuple[Path, ast.AST]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(DAEMON.rglob("*.py"))]


def test_every_fix_action_has_exactly_one_applier() -> None:
    assert set(review._FIXES) == set(FixAction)
    assert set(FixAction) >= MACHINE_LOCAL_FIXES


def test_every_proposed_fix_names_an_action_of_the_vocabulary() -> None:
    """A fix dict written anywhere in the daemon (``{"action": ...}``) names its action through
    FixAction, never as a bare string a typo could turn into an item nobody can apply."""
    bare: list[str] = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "action" and isinstance(value, ast.Constant):
                    bare.append(f"{path.relative_to(DAEMON)}:{node.lineno} {value.value!r}")
    assert not bare, bare


def test_an_unknown_fix_action_is_not_applied(tmp_path: Path) -> None:
    from wikiwright.core.errors import FixNotApplicable
    from wikiwright.wiki.reviewfile import Item

    item = Item(id="x-1", kind="lint", description="d", pages=(), fix={"action": "__class__"}, state="open")
    queue = review.ReviewQueue.__new__(review.ReviewQueue)
    try:
        queue._apply(item)
    except FixNotApplicable as exc:
        assert "unknown fix '__class__'" in str(exc)
    else:
        raise AssertionError("an unknown fix action was applied")


def test_every_model_operation_has_one_applier_and_nothing_else_is_looked_up() -> None:
    assert set(operations._APPLY) == set(operations.OPERATION_SCHEMAS)
    assert set(normalize._BY_OPERATION) <= set(operations.OPERATION_SCHEMAS)
    for module in (operations, normalize):
        text = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert not re.search(r"getattr\(self, f[\"']", text), f"{module.__name__} dispatches by attribute name"


def test_the_ledgers_sql_names_only_states_of_its_vocabulary() -> None:
    from wikiwright.intake import ledger

    text = Path(ledger.__file__).read_text(encoding="utf-8")
    named = set(re.findall(r"state\s*(?:=|IN\s*\(|!=)\s*'([a-z]+)'", text))
    named |= {n for group in re.findall(r"state IN \(([^)]*)\)", text) for n in re.findall(r"'([a-z]+)'", group)}
    assert named, "the pattern found no state in the ledger's SQL"
    assert named <= {*FileState, *SourceState}, named - {*FileState, *SourceState}
