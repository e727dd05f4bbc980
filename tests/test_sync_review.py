"""Issue 21, reviewed as an attacker: what the first fixes left open.

Real parts only: a bare remote, two machines' vaults, an attacker clone pushing crafted commits
(``git commit-tree``), the real sync round, review queue and pipeline.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from wikiwright.core.opkinds import OpKind
from wikiwright.runtime.status import gather
from wikiwright.wiki.reviewfile import proposal

from tests.helpers import git, review_queue
from tests.test_sync import Machine, source_text, world  # noqa: F401  (the fixture)
from tests.test_sync_trust import Attacker, _drain, _drop, _sha, _victim_ingested_its_own

HOSTILE = "---\ntype: concept\ntitle: Takeover\n---\n\n# Takeover\n\nWhat the attacker wants this page to say.\n"


def _propose_page(machine: Machine, page: str, text: str) -> str:
    """This machine's own proposal to write ``text`` as ``page`` (as an edit conflict makes one)."""
    item = proposal("edit-conflict", f"[[{page}]] changed while wikiwright worked on it — tick to replace it",
                    pages=[page], fix={"action": "write-page", "page": page, "text": text, "base": None},
                    facts={"page": page, "text": text})
    with machine.pipeline.door.operation(OpKind.LINT, "a proposal") as op:
        op.propose("edit-conflict", [item])
    return item.id


def _tick(text: str, item_id: str) -> str:
    ticked = re.sub(rf"^(\s*- )\[ \](.*\^{re.escape(item_id)}\s*)$", r"\1[x]\2", text, flags=re.M)
    assert ticked != text, text
    return ticked


def _remote_ticks_a_proposal(remote: Path, victim: Machine, tmp_path: Path) -> str:
    """The victim proposes a page text and pushes; an attacker pushes REVIEW.md with it ticked."""
    item_id = _propose_page(victim, "concepts/takeover", HOSTILE)
    victim.sync()
    attacker = Attacker(remote, tmp_path / "evil")
    git(attacker.root, "pull", "-q", "origin", "main")
    review = (attacker.root / "REVIEW.md").read_text(encoding="utf-8")
    attacker.push("review: tick", {}, {"REVIEW.md": _tick(review, item_id).encode()})
    return item_id


def test_a_tick_from_another_machine_does_not_approve_this_machines_proposal(
        world: tuple[Path, Machine, Machine], tmp_path: Path) -> None:  # noqa: F811
    """Another machine ticks this machine's proposal to write a page (its text is only this
    machine's to vouch for; a held-back model operation is the same): old code applied it as
    soon as the sync brought the tick. Now the tick is undone in the merged REVIEW.md, the
    refusal is shown, and only the person's own tick here applies it."""
    remote, _ma, mb = world
    item_id = _remote_ticks_a_proposal(remote, mb, tmp_path)
    mb.sync()
    queue = review_queue(mb.config, mb.vault)
    try:
        done = queue.process()
        assert not (mb.root / "wiki" / "concepts" / "takeover.md").exists(), done
        text = mb.vault.review_file.read_text(encoding="utf-8")
        assert "[ ]" in next(line for line in text.splitlines() if item_id in line), text
        assert "a tick from another machine" in text, text
        # The person's own tick on this machine still approves it.
        mb.vault.review_file.write_text(_tick(text, item_id), encoding="utf-8")
        done = queue.process()
        assert [o.state for o in done if o.id == item_id] == ["applied"], done
        assert "What the attacker wants" in (mb.root / "wiki" / "concepts" / "takeover.md").read_text()
    finally:
        queue.close()


def test_a_remote_tick_in_a_merge_is_undone_too(world: tuple[Path, Machine, Machine],  # noqa: F811
                                               tmp_path: Path) -> None:
    """The same through a merge (this machine committed meanwhile): HEAD never holds the tick."""
    remote, _ma, mb = world
    item_id = _remote_ticks_a_proposal(remote, mb, tmp_path)
    mb.ingest("plums.md", source_text(9, "plums"))
    mb.sync()
    assert len(git(mb.root, "log", "-1", "--format=%P").split()) == 2  # a merge
    head = subprocess.run(["git", "-C", str(mb.root), "show", "HEAD:REVIEW.md"], capture_output=True, text=True,
                          check=True).stdout
    assert "[x]" not in next(line for line in head.splitlines() if item_id in line), head


def test_a_removal_from_another_machine_does_not_dismiss_this_machines_proposal(
        world: tuple[Path, Machine, Machine], tmp_path: Path) -> None:  # noqa: F811
    """Removing an item's line is how a person dismisses it; another machine removing this
    machine's proposal from REVIEW.md would answer it from afar. The line is put back in the
    merged REVIEW.md, the refusal shown, and the item stays open until answered here (old code
    took the removal: the proposal vanished from the person's sight)."""
    remote, _ma, mb = world
    item_id = _propose_page(mb, "concepts/takeover", HOSTILE)
    mb.sync()
    attacker = Attacker(remote, tmp_path / "evil")
    git(attacker.root, "pull", "-q", "origin", "main")
    review = (attacker.root / "REVIEW.md").read_text(encoding="utf-8")
    removed = "".join(line for line in review.splitlines(keepends=True) if item_id not in line)
    assert removed != review
    attacker.push("review: remove", {}, {"REVIEW.md": removed.encode()})
    mb.sync()
    text = mb.vault.review_file.read_text(encoding="utf-8")
    assert item_id in text and "another machine removed" in text, text
    queue = review_queue(mb.config, mb.vault)
    try:
        done = queue.process()
        assert not [o for o in done if o.id == item_id and o.state in ("dismissed", "rejected")], done
        mb.vault.review_file.write_text(_tick(mb.vault.review_file.read_text(encoding="utf-8"), item_id),
                                        encoding="utf-8")
        done = queue.process()
        assert [o.state for o in done if o.id == item_id] == ["applied"], done
    finally:
        queue.close()


def test_crash_recovery_takes_no_forged_ingest_claim(world: tuple[Path, Machine, Machine],  # noqa: F811
                                                     tmp_path: Path) -> None:
    """A source was being ingested when the process died (the ledger marks it recovering at the
    next start); a remote commit claims those bytes without holding them. Old code's recovery
    took any commit naming the sha256: the victim's source recorded ingested at the forged
    commit, on no page of its own. Now recovery takes only a verified ingest of that path."""
    remote, _ma, mb = world
    text = source_text(11, "what the victim wrote")
    _drop(mb, "diary.md", text)
    sha = _sha(text.encode())
    forged = Attacker(remote, tmp_path / "evil").push("ingest: Diary", {
        "Wikiwright-Operation": "ingest", "Wikiwright-Source": f"raw/diary.md sha256:{sha}",
        "Wikiwright-Pages": "wiki/sources/src-diary.md"})
    mb.sync()
    running = mb.ledger.claim_next()
    assert running is not None and running.path == "raw/diary.md"
    assert mb.ledger.reset_running() == 1  # what a restart does with work the dead process was running
    _drain(mb)
    _victim_ingested_its_own(mb, "raw/diary.md", sha, "sources/src-diary", forged)


def test_refused_trailers_and_entries_share_one_record_one_section(world: tuple[Path, Machine, Machine],  # noqa: F811
                                                                   tmp_path: Path) -> None:
    """One push with a refused entry (.obsidian/) and a forged ingest claim: both are listed in
    status's sync refusals and under the one REVIEW.md heading (old code: the claim only as a
    notice, under a second heading "Sync refused")."""
    remote, _ma, mb = world
    text = source_text(12, "ledgers")
    _drop(mb, "ledger.md", text)
    Attacker(remote, tmp_path / "evil").push("ingest: Ledger", {
        "Wikiwright-Operation": "ingest", "Wikiwright-Source": f"raw/ledger.md sha256:{_sha(text.encode())}",
        "Wikiwright-Pages": "wiki/sources/src-ledger.md"}, {".obsidian/plugins/x/main.js": b"alert(1)\n"})
    mb.sync()
    refused = gather(mb.config, mb.vault)["sync"]["refused"]
    assert any(".obsidian/plugins/x/main.js" in line for line in refused), refused
    assert any("the ingest claim for `raw/ledger.md`" in line for line in refused), refused
    review = mb.vault.review_file.read_text(encoding="utf-8")
    headings = [line for line in review.splitlines() if line.startswith("#") and "efused" in line]
    assert headings == ["## Refused from the remote by sync"], review
    section = review.split(headings[0], 1)[1].split("\n## ", 1)[0]
    assert ".obsidian/plugins/x/main.js" in section and "raw/ledger.md" in section, review


def test_a_remote_commit_in_wikiwrights_name_does_not_make_a_persons_file_self_feeding(
        world: tuple[Path, Machine, Machine], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A commit authored "wikiwright" (any author name can be written) puts the exact bytes of a
    file the victim has in raw/ under wiki/: old code skipped the victim's file as one of
    wikiwright's own pages coming back. Now only this machine's own commits count."""
    remote, _ma, mb = world
    text = "# Board minutes\n\nThe board agreed to move the offices to the harbour in May.\n"
    _drop(mb, "minutes.md", text)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "wikiwright")
    Attacker(remote, tmp_path / "evil").push("ingest: Minutes", {"Wikiwright-Operation": "ingest"},
                                             {"wiki/notes/minutes.md": text.encode()})
    mb.sync()
    assert (mb.root / "wiki" / "notes" / "minutes.md").read_text(encoding="utf-8") == text  # it came in
    _drain(mb)
    record = mb.ledger.get_file("raw/minutes.md")
    assert record is not None and record.state == "ingested", record


def test_a_conflict_proposed_by_a_merge_that_crashed_is_proposed_again(
        world: tuple[Path, Machine, Machine], isolated_env: dict[str, str]) -> None:  # noqa: F811
    """A merge's REVIEW.md items are the door's proposals: the store learns them with the commit
    (journaled), never before. Old code wrote REVIEW.md and the store's row before the merge
    commit; a crash in between put REVIEW.md back but kept the row, so the conflict was never
    proposed again and this machine's lines were quoted nowhere."""
    from tests.test_sync import sync_env, ww

    _remote, ma, mb = world
    ma.ingest("shared.md", source_text(1, "gadgets"))
    ma.sync()
    mb.sync()
    page = "wiki/sources/src-shared.md"
    title = next(line for line in (ma.root / page).read_text().splitlines() if line.startswith("# "))
    for machine, who in ((ma, "A"), (mb, "B")):
        path = machine.root / page
        path.write_text(path.read_text().replace(title, f"{title} (edited on {who})", 1))
        git(machine.root, "commit", "-qam", f"edited on {who}")
    ma.sync()
    head = git(mb.root, "rev-parse", "HEAD")
    crashed = ww(mb.root, {**sync_env(isolated_env), "WIKIWRIGHT_CRASH_AT": "before-commit"}, "sync")
    assert crashed.returncode != 0 and git(mb.root, "rev-parse", "HEAD") == head
    mb.sync()
    review = mb.vault.review_file.read_text(encoding="utf-8")
    assert "sync-conflict" in review and f"{title} (edited on B)" in review, review
    assert len(git(mb.root, "rev-list", "--parents", "-n1", "HEAD").split()) == 3
    assert git(mb.root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""
