"""``history --kind K`` selects every kind history prints; a bad ``--since`` is an error (exit 2)."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from wikiwright.core.config import Config
from wikiwright.core.errors import WikiwrightError
from wikiwright.core.vault import Vault
from wikiwright.history.view import operations
from wikiwright.vcs.repo import GitRepo

from tests.helpers import cli, git, review_queue
from tests.lint_fixture import build_fixture


def _commit(vault: Vault, name: str, message: str) -> None:
    (vault.wiki / name).write_text(f"# {name}\n\nWritten for the history test.\n")
    git(vault.root, "add", "--", f"wiki/{name}")
    git(vault.root, "commit", "-q", "-m", message)


def _history(vault: Vault, *args: str) -> tuple[int, list[dict[str, object]], str]:
    out = cli("history", "--json", "--vault", str(vault.root), *args)
    ops = json.loads(out.stdout)["operations"] if out.returncode == 0 else []
    return out.returncode, ops, out.stderr


def test_every_kind_history_prints_can_be_selected(vault: Vault, config: Config) -> None:
    build_fixture(vault)
    assert cli("lint", "--review", "--vault", str(vault.root)).returncode == 1  # a `lint` commit
    text = vault.review_file.read_text()
    orphan = next(line for line in text.splitlines() if "no links from other pages" in line)
    vault.review_file.write_text(text.replace(orphan, orphan.replace("- [ ]", "- [-]")))
    queue = review_queue(config, vault)
    try:
        assert [o.state for o in queue.process()] == ["rejected"]  # a `review-rejection` commit
    finally:
        queue.close()
    _commit(vault, "topic-a.md", "consolidate: 1 daily log\n\nWikiwright-Operation: consolidate")
    # A commit from before the vocabulary was fixed still reads as today's kind.
    _commit(vault, "topic-b.md", "consolidation: 1 daily log\n\nWikiwright-Operation: consolidation")
    _commit(vault, "mine.md", "my own notes")  # a person's commit: manual

    code, everything, _ = _history(vault)
    assert code == 0
    printed = {str(op["kind"]) for op in everything}
    assert {"init", "lint", "review-rejection", "consolidate", "manual"} <= printed, printed
    assert "consolidation" not in printed
    repo = GitRepo(vault.root)
    for kind in sorted(printed):
        ops = operations(repo, kind=kind)
        assert ops and {op.kind for op in ops} == {kind}, (kind, ops)
    assert len(operations(repo, kind="consolidate")) == 2
    # The old name is still accepted as an alias.
    assert len(operations(repo, kind="consolidation")) == 2
    code, _, err = _history(vault, "--kind", "tidy-up")
    assert code == 2 and "unknown operation kind 'tidy-up'" in err and "review-rejection" in err
    # The text output names the kinds the same way.
    shown = cli("history", "--kind", "lint", "--vault", str(vault.root)).stdout
    assert " lint " in shown and "lint: " in shown


def test_since_takes_dates_and_relative_days_and_refuses_anything_else(vault: Vault) -> None:
    _commit(vault, "page.md", "my own notes")
    for bad in ("not a date", "2026-13-45"):
        code, _, err = _history(vault, "--since", bad)
        assert code == 2, (bad, err)
        assert f"--since {bad!r} is not" in err
    repo = GitRepo(vault.root)
    for bad in ("2026-02-30", "next blue moon", "3 fortnights ago"):
        with pytest.raises(WikiwrightError, match="is not"):
            operations(repo, since=bad)
    all_ops = operations(repo)
    assert len(all_ops) == 2  # init and the person's commit
    for good in ("2000-01-01", "2000-01-01 09:30", "2 days ago", "3 hours ago", "yesterday"):
        assert operations(repo, since=good) == all_ops, good
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    assert operations(repo, since=tomorrow) == []
    plain = cli("history", "--since", tomorrow, "--vault", str(vault.root))
    assert plain.returncode == 0 and "No operations match." in plain.stdout
