"""A shared remote is untrusted input (issue 21): trailers from other machines are claims that
are checked against the commits they sit on; files with a generated block merge by block; a
``.git/index.lock`` left by a killed git child of ours is removed, another process's is waited
for; a syncing daemon killed again and again loses no line a person wrote.

Real parts only: a bare remote, clones, an attacker clone that pushes crafted commits
(``git commit-tree`` with forged trailers), the real daemon and CLI in subprocesses.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from wikiwright.door.sync import _merge_index
from wikiwright.ingest.concepts import OVERVIEW_END, OVERVIEW_START
from wikiwright.vcs.repo import GitRepo
from wikiwright.wiki.index import INDEX_END, INDEX_START

from tests.helpers import git
from tests.test_sync import Machine, source_text

PERSON_LINES = ("Person line one, before the block.", "Person line two, after the block.",
                "Person line three, after the block.")


@pytest.fixture
def world(tmp_path: Path, isolated_env: dict[str, str]) -> Iterator[tuple[Path, Machine, Machine]]:
    """A bare remote, machine A (initialised, pushed) and machine B (a clone, initialised, synced)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "init", "-q", str(tmp_path / "a")], check=True)
    git(tmp_path / "a", "remote", "add", "origin", str(remote))
    a = Machine(tmp_path / "a")
    a.sync()
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "b")], check=True)
    b = Machine(tmp_path / "b")
    b.sync()
    yield remote, a, b
    a.close()
    b.close()


def _around_block(text: str, start: str, end: str) -> str:
    """``text`` with the person's three lines: one before its generated block, two after it."""
    at, until = text.index(start), text.index(end) + len(end) + 1
    return (text[:at] + PERSON_LINES[0] + "\n\n" + text[at:until] + "\n" + PERSON_LINES[1] + "\n"
            + PERSON_LINES[2] + "\n" + text[until:])


# -- files with a generated block merge by block ---------------------------------------------------

def test_overview_merge_keeps_the_persons_lines_around_the_block(world: tuple[Path, Machine, Machine]) -> None:
    """The merge base has no overview block (a fresh vault), the other machine's overview has
    one, this machine's has one with the person's text before and after it: every line stays
    (0 of 3 on the old code: the union emitted the start marker twice and the remote's whole
    file was taken)."""
    _remote, ma, mb = world
    ma.ingest("apples.md", source_text(1, "apples"))
    ma.sync()
    mb.ingest("bananas.md", source_text(2, "bananas"))
    overview = mb.root / "wiki" / "overview.md"
    overview.write_text(_around_block(overview.read_text(encoding="utf-8"), OVERVIEW_START, OVERVIEW_END),
                        encoding="utf-8")
    mb.sync()
    ma.sync()
    for machine in (ma, mb):
        text = (machine.root / "wiki" / "overview.md").read_text(encoding="utf-8")
        kept = [line for line in PERSON_LINES if line in text]
        assert kept == list(PERSON_LINES), text
        assert text.count(OVERVIEW_START) == 1 and text.count(OVERVIEW_END) == 1, text
        assert text.index(PERSON_LINES[0]) < text.index(OVERVIEW_START) < text.index(PERSON_LINES[1])
        assert "[[src-apples" in text  # the block is a generated one, not the person's text


def test_index_merge_keeps_the_persons_lines_when_the_base_has_no_block(vault) -> None:
    """index.md the same way: a base whose block a person had deleted, a remote version with
    the block put back at the end, this machine's with text on both sides of it."""
    repo = GitRepo(vault.root)
    head = "---\ntype: index\ntitle: Index\n---\n\n# Index\n\nA person's preface.\n"
    block = f"{INDEX_START}\n\n## Sources (1)\n\n- [[src-a]]\n{INDEX_END}\n"
    base, theirs = head, head + "\n" + block
    ours = _around_block(head + "\n" + block, INDEX_START, INDEX_END)
    merged = _merge_index(repo, base, ours, theirs)
    assert [line for line in PERSON_LINES if line in merged] == list(PERSON_LINES), merged
    assert merged.count(INDEX_START) == 1 and merged.count(INDEX_END) == 1, merged
    assert "A person's preface." in merged

