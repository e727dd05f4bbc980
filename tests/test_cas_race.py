"""A person's save landing in the instant between wikiwright's last comparison and its install
(issue 19), made to happen every run: fsutil's test hook runs "the person" exactly there. For
every writer of a file a person may edit — pages, index.md, log.md, overview.md, REVIEW.md (the
door's writes and the review file's own), SCHEMA.md, .gitignore's generated section,
.obsidian/app.json and the daily logs — the person's line is still in the file afterwards, and
wikiwright's change is redone on their text where it applies. Both ways editors save: in place
(truncate and rewrite the same file) and temp file + rename (Obsidian, vim, VS Code)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from wikiwright.core import fsutil
from wikiwright.core.config import load_config
from wikiwright.core.obsidian import write_ignore_filters
from wikiwright.core.vault import Vault
from wikiwright.door.init import init_vault
from wikiwright.intake.rawgit import SECTION_START
from wikiwright.memory.dailylog import append_session
from wikiwright.runtime.context import VaultContext
from wikiwright.wiki import reviewfile
from wikiwright.wiki.writer import PageChange

from tests.conftest import Services

SAVES = ("in-place", "rename")


class PersonAt:
    """The race hook: the first time wikiwright is about to install ``name``, the person saves
    it with one more line (``edit`` makes their new text from what is on disk)."""

    def __init__(self, name: str, save: str, edit: Callable[[str], str] | None = None) -> None:
        self.name, self.save = name, save
        self.edit = edit or (lambda text: text + ("" if not text or text.endswith("\n") else "\n")
                             + "person line, saved in the race\n")
        self.fired = 0

    def __call__(self, path: Path) -> None:
        if path.name != self.name or self.fired:
            return
        self.fired += 1
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        new = self.edit(text)
        if self.save == "rename":
            tmp = path.with_name(f".{path.name}.editor-tmp")
            tmp.write_text(new, encoding="utf-8")
            os.replace(tmp, path)
        else:
            with path.open("w", encoding="utf-8") as handle:
                handle.write(new)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "files"
    made.mkdir()
    return made


def _kept(path: Path, person: PersonAt) -> str:
    assert person.fired == 1, "the person's save was not made at the race point"
    text = path.read_text(encoding="utf-8")
    assert "person line, saved in the race" in text, f"the person's line was lost from {path.name}"
    return text


@pytest.mark.parametrize("save", SAVES)
def test_page_write(services: Services, save: str) -> None:
    services.drop("first.md", "# First\n\nThe billing API answers in 200 ms.\n")
    services.drain()
    door = services.pipeline.door
    page = next((services.vault.wiki / "sources").glob("*.md"))
    name = f"sources/{page.stem}"
    text = page.read_text(encoding="utf-8")
    ours = text.replace("200 ms", "150 ms", 1)
    assert ours != text
    person = PersonAt(page.name, save)
    with fsutil.race_hook(person), door.operation("lint-fix", "a page change") as op:
        outcome = op.write([PageChange(name, ours, base=text)])
    disk = _kept(page, person)
    assert outcome.written == [name] and "150 ms" in disk  # ours merged onto their text


@pytest.mark.parametrize("save", SAVES)
def test_overview_write(services: Services, save: str) -> None:
    door = services.pipeline.door
    path = services.vault.wiki / "overview.md"
    text = path.read_text(encoding="utf-8")
    ours = text.replace("\n---\n", "\n---\n\nWikiwright's overview line.\n", 1)
    person = PersonAt("overview.md", save)
    with fsutil.race_hook(person), door.operation("lint-fix", "link from the overview") as op:
        op.write([PageChange("overview", ours, base=text)])
    assert "Wikiwright's overview line." in _kept(path, person)


@pytest.mark.parametrize("save", SAVES)
def test_index_rebuild(services: Services, save: str) -> None:
    services.drop("first.md", "# First\n\nThe billing API answers in 200 ms.\n")
    services.drain()
    door = services.pipeline.door
    person = PersonAt("index.md", save)
    (services.vault.wiki / "topics").mkdir(exist_ok=True)
    topic = services.vault.wiki / "topics" / "new-topic.md"
    topic.write_text("---\ntype: topic\ntitle: New Topic\n---\n# New Topic\n")
    with fsutil.race_hook(person), door.operation("lint-fix", "rebuild the index") as op:
        op.settle(["wiki/topics/new-topic.md"])
        op.rebuild_index()
    assert "new-topic" in _kept(services.vault.wiki / "index.md", person)


@pytest.mark.parametrize("save", SAVES)
def test_log_entry(services: Services, save: str) -> None:
    door = services.pipeline.door
    person = PersonAt("log.md", save)
    with fsutil.race_hook(person), door.operation("lint-fix", "an operation worth a log entry") as op:
        op.always_log = True
    assert "an operation worth a log entry" in _kept(services.vault.wiki / "log.md", person)


@pytest.mark.parametrize("save", SAVES)
def test_review_proposal_through_the_door(services: Services, save: str) -> None:
    door = services.pipeline.door
    person = PersonAt("REVIEW.md", save)
    with fsutil.race_hook(person), door.operation("lint", "a proposal") as op:
        op.propose("held-back", [{"description": "race proposal through the door", "facts": {"n": 1}}])
    assert "race proposal through the door" in _kept(services.vault.review_file, person)


@pytest.mark.parametrize("save", SAVES)
def test_review_file_own_edit(vault: Vault, save: str) -> None:
    person = PersonAt("REVIEW.md", save, lambda text: text.replace("- [ ] race tick", "- [x] race tick")
                      + "person line, saved in the race\n")
    first = reviewfile.proposal("held-back", "race tick", facts={"n": 1})
    with VaultContext(load_config(vault.root), vault) as ctx:
        door = ctx.door
        with door.operation("lint", "a first proposal") as op:
            op.propose("held-back", [first])
        with fsutil.race_hook(person), door.operation("lint", "a second proposal") as op:
            op.propose("held-back", [reviewfile.proposal("held-back", "second", facts={"n": 2})])
    text = _kept(vault.review_file, person)
    assert f"- [x] race tick ^{first.id}" in text and "second" in text  # their tick stays, ours is added


@pytest.mark.parametrize("save", SAVES)
def test_schema_at_init(tmp_path: Path, save: str) -> None:
    person = PersonAt("SCHEMA.md", save, lambda text: "# My schema\n\nperson line, saved in the race\n")
    with fsutil.race_hook(person):
        vault, _created = init_vault(tmp_path / "v", "wikiwright", "wikiwright@localhost")
    assert _kept(vault.root / "SCHEMA.md", person).startswith("# My schema")


@pytest.mark.parametrize("save", SAVES)
def test_gitignore_section(services: Services, save: str) -> None:
    ignore = services.vault.root / ".gitignore"
    ignore.write_text(".wikiwright/\n")  # the person removed the daemon's section: the ingest puts it back
    person = PersonAt(".gitignore", save)
    with fsutil.race_hook(person):
        services.drop("first.md", "# First\n\nThe billing API answers in 200 ms.\n")
        services.drain()
    assert SECTION_START in _kept(ignore, person)


@pytest.mark.parametrize("save", SAVES)
def test_obsidian_app_json(tmp_path: Path, save: str) -> None:
    app = tmp_path / ".obsidian" / "app.json"
    app.parent.mkdir()
    app.write_text('{"alwaysUpdateLinks": true}\n')
    person = PersonAt("app.json", save, lambda text: json.dumps(
        {**json.loads(text), "person line, saved in the race": True}))
    with fsutil.race_hook(person):
        assert write_ignore_filters(tmp_path)
    settings = json.loads(_kept(app, person))
    assert settings["alwaysUpdateLinks"] and settings["userIgnoreFilters"] == ["raw/", ".wikiwright/"]


def test_daily_log_append(vault: Vault) -> None:
    """O_APPEND never overwrites the person's bytes; a save by rename landing while wikiwright
    appends used to take the appended block with the file it replaced."""
    when = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    append_session(vault.logs, ["- first block"], label="race", when=when)
    person = PersonAt("2026-11-29.md", "rename")
    with fsutil.race_hook(person):
        append_session(vault.logs, ["- 🔴 wikiwright's block, appended in the race"], label="race", when=when)
    text = _kept(vault.logs / "2026-11-29.md", person)
    assert "first block" in text and "wikiwright's block, appended in the race" in text


def test_an_in_place_save_still_being_written_when_the_swap_happens(folder: Path) -> None:
    """The person's editor has the file open (in place) at the race point and writes its bytes
    only after wikiwright's exchange: they land in the displaced file, which is then the
    person's, so it goes back to the path and the compare-and-swap reports the change."""
    path = folder / "page.md"
    path.write_bytes(b"before\n")
    inode = path.stat().st_ino
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []

    def person(at: Path) -> None:
        handle = at.open("a", encoding="utf-8")  # open before the swap, written after it

        def finish() -> None:
            try:
                while path.stat().st_ino == inode:  # until wikiwright's file is at the path
                    time.sleep(0.001)
                handle.write("person line, saved in the race\n")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
            finally:
                handle.close()

        threads.append(threading.Thread(target=finish))
        threads[0].start()

    with fsutil.race_hook(person):
        replaced = fsutil.atomic_replace_if(path, b"wikiwright's version\n", b"before\n")
    threads[0].join()
    assert not errors
    assert not replaced
    assert path.read_bytes() == b"before\nperson line, saved in the race\n"
    assert [p.name for p in folder.iterdir()] == ["page.md"]  # no temp file left


@pytest.mark.parametrize("save", SAVES)
def test_removal_keeps_a_save_made_in_the_race(folder: Path, save: str) -> None:
    path = folder / "page.md"
    path.write_bytes(b"before\n")
    person = PersonAt("page.md", save)
    with fsutil.race_hook(person):
        assert not fsutil.atomic_replace_if(path, None, b"before\n")
    _kept(path, person)
    assert [p.name for p in folder.iterdir()] == ["page.md"]


def test_mode_is_atomic_exchange_here(folder: Path) -> None:
    """The test machine's filesystems (ext4, tmpfs, overlayfs) all do exchanges."""
    assert fsutil.cas_mode(folder) == fsutil.EXCHANGE_MODE
    assert list(folder.iterdir()) == []  # the probe leaves nothing behind


def test_status_and_doctor_say_which_mode_the_vault_runs_in(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from wikiwright.core.config import load_config
    from wikiwright.runtime.context import VaultContext
    from wikiwright.runtime.status import gather
    from wikiwright.upkeep.doctor import run_doctor

    from tests.helpers import cli

    shown = cli("status", "--vault", str(vault.root))
    assert "Writes:  compare-and-swap by atomic exchange" in shown.stdout, shown.stdout + shown.stderr
    assert "[ok  ] writes: compare-and-swap by atomic exchange" in cli("doctor", "--vault", str(vault.root)).stdout
    with VaultContext(load_config(vault.root), vault, write=False) as ctx:
        report = run_doctor(ctx.config, ctx.vault, ctx.ledger, ctx.repo, repair=False)
    assert next(c for c in report.checks if c.name == "writes").summary == "compare-and-swap by atomic exchange"
    # Where there is no exchange (a libc without renameat2; a filesystem refusing it is
    # remembered the same way), writes still compare-and-swap, by the fallback, and say so.
    monkeypatch.setattr(fsutil._rename2, "fn", None)
    assert gather(load_config(vault.root), vault)["writes"] == "fallback"
    page = vault.wiki / "overview.md"
    text = page.read_bytes()
    assert not fsutil.atomic_replace_if(page, b"ours\n", b"not what is there\n")
    assert fsutil.atomic_replace_if(page, text + b"ours\n", text) and page.read_bytes() == text + b"ours\n"
    assert not fsutil.atomic_replace_if(page, b"new\n", None)  # create refuses an existing file


@pytest.mark.parametrize("save", SAVES)
def test_sync_round_keeps_a_save_landing_as_it_writes_a_page(tmp_path: Path, isolated_env: dict[str, str],
                                                              save: str) -> None:
    """Sync writes the other machine's version of a page where it still holds HEAD's bytes: a
    person's save landing between that check and the install stays, and the file is theirs."""
    from tests.helpers import git
    from tests.test_sync import two_machines

    _remote, a, b = two_machines(tmp_path)
    try:
        try:
            a.ingest("heron.md", "# Heron\n\nProject Heron routes events through the Kestrel gateway.\n")
            a.sync()
            assert not list(b.vault.wiki.rglob("src-heron.md"))  # b has not seen it yet
            b.sync()
            page = next(iter(b.vault.wiki.rglob("src-heron.md")))
            a_page = next(iter(a.vault.wiki.rglob("src-heron.md")))
            a_page.write_text(a_page.read_text(encoding="utf-8") + "\nA line machine A's person added.\n",
                              encoding="utf-8")
            git(a.root, "commit", "-q", "-am", "A's person adds a line")
            a.sync()
            # B's person writes near the top while A's person's line is at the end: a clean merge.
            person = PersonAt(page.name, save,
                              lambda text: text.replace("\n# ", "\nperson line, saved in the race\n\n# ", 1))
            with fsutil.race_hook(person):
                b.sync()
            assert person.fired == 1
            text = page.read_text(encoding="utf-8")
            assert "person line, saved in the race" in text, text
            # Their save and the other machine's line merge cleanly: the page holds both; HEAD holds
            # the other machine's version, and the person's line waits to be committed under their name.
            assert "A line machine A's person added." in text, text
            committed = git(b.root, "show", "HEAD:" + str(page.relative_to(b.root)))
            assert "A line machine A's person added." in committed
            assert "person line, saved in the race" not in committed
        finally:
            b.close()
    finally:
        a.close()
