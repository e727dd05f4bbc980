"""A person typing while wikiwright works (issue 15 item 3): hundreds of edits — in place, and
temp file + rename as Obsidian saves — to index.md, a page, overview.md and REVIEW.md, while
ingests, index rebuilds, review fixes and a consolidation run through the door. Afterwards no
line the person wrote is missing and none was first committed under wikiwright's identity."""

from __future__ import annotations

import os
import random
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from wikiwright.core.config import Config
from wikiwright.core.vault import Vault
from wikiwright.door import Door
from wikiwright.memory.consolidate import Consolidator
from wikiwright.memory.dailylog import append_session
from wikiwright.upkeep.review import ReviewQueue

from tests.conftest import Services
from tests.helpers import git

EDITS = 300
PERSON = "Test Person"
LINE_RE = re.compile(r"person line (\d+) ")


class Person(threading.Thread):
    """Appends numbered lines to the files, alternating in-place writes and temp + rename,
    until told to stop (or ``most`` edits)."""

    def __init__(self, files: list[Path], most: int) -> None:
        super().__init__(name="person", daemon=True)
        self.files = files
        self.most = most
        self.stop = threading.Event()
        self.wrote: dict[str, Path] = {}
        self.rng = random.Random(15)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for n in range(self.most):
                if self.stop.is_set():
                    return
                path = self.files[n % len(self.files)]
                line = f"person line {n} "
                text = path.read_text(encoding="utf-8")
                new = text + ("" if text.endswith("\n") else "\n") + line + "\n"
                if n % 2:
                    tmp = path.with_name(f".{path.name}.obsidian-tmp")
                    tmp.write_text(new, encoding="utf-8")
                    os.replace(tmp, path)
                else:
                    with path.open("w", encoding="utf-8") as handle:
                        handle.write(new)
                self.wrote[line.strip()] = path
                time.sleep(self.rng.uniform(0.005, 0.03))
        except BaseException as exc:
            self.error = exc


def _first_authors(root: Path) -> dict[str, str]:
    """For every person line: the author of the commit that first added it."""
    out = git(root, "log", "--reverse", "-p", "--no-renames", "--format=@@author %an")
    first: dict[str, str] = {}
    author = ""
    for row in out.splitlines():
        if row.startswith("@@author "):
            author = row.removeprefix("@@author ")
        elif row.startswith("+") and not row.startswith("+++"):
            match = LINE_RE.search(row)
            if match:
                first.setdefault(f"person line {match.group(1)}", author)
    return first


def _tick_proposals(door: Door, count: int) -> None:
    with door.operation("lint", "proposals to tick") as op:
        op.propose("held-back", [{"description": f"race proposal {n}", "facts": {"n": n},
                                  "fix": {"action": "write-page", "page": f"topics/race-{n}",
                                          "text": f"---\ntype: topic\ntitle: Race {n}\n---\n# Race {n}\n",
                                          "base": None}} for n in range(count)])
    review = door.vault.review_file
    review.write_text(review.read_text().replace("- [ ] race proposal", "- [x] race proposal"))


def test_hundreds_of_person_edits_against_the_door(services: Services, config: Config, vault: Vault) -> None:
    door = services.pipeline.door
    services.drop("first.md", "# First\n\nThe billing API answers in 200 ms.\n")
    services.drain()
    _tick_proposals(door, 3)
    when = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    for n in range(5):
        append_session(vault.logs, [f"- 🔴 Rule {n}: keep exports idempotent"], section="Decisions", label="race",
                       when=when + timedelta(minutes=10 * n))
    page = next((vault.wiki / "sources").glob("*.md"))
    files = [vault.wiki / "index.md", page, vault.wiki / "overview.md", vault.review_file]
    person = Person(files, 4 * EDITS)
    queue = ReviewQueue(config, vault, door)
    consolidator = Consolidator(config, vault, door.ledger, door.repo, door=door)
    operations = 0
    person.start()
    try:
        n = 0
        # Operations until the person has made EDITS edits, and at least six rounds of them
        # (however slow a loaded machine makes the rounds: the count is no speed test).
        while n < 6 or (person.is_alive() and len(person.wrote) < EDITS):
            n += 1
            services.drop(f"race-{n}.md", f"# Race source {n}\n\nThe billing API now answers in {n} ms.\n")
            services.drain()
            if n % 3 == 0:
                with door.operation("lint-fix", "rebuild the index") as op:
                    op.rebuild_index()
            if n % 4 == 1:
                queue.process()
            if n == 2:
                consolidator.run(force=True)
            operations += 1
    finally:
        person.stop.set()
        person.join(timeout=60)
        queue.close()
    assert person.error is None, person.error
    assert len(person.wrote) >= EDITS and operations >= 6
    # One more of each after the last edit: every file is settled by a door operation.
    services.drop("last.md", "# Last\n\nThe end.\n")
    services.drain()
    with door.operation("lint-fix", "rebuild the index") as op:
        op.rebuild_index()
        for path in files:
            op.settle([vault.rel(path)])
    lost = [line for line, path in person.wrote.items() if line not in path.read_text(encoding="utf-8")]
    assert not lost, f"{len(lost)} person line(s) lost, e.g. {lost[:3]}"
    authors = _first_authors(vault.root)
    ours = sorted(line for line, author in authors.items() if author != PERSON)
    assert not ours, f"{len(ours)} person line(s) first committed as wikiwright, e.g. {ours[:3]}"
    assert set(authors) == set(person.wrote), "every person line is committed, each under the person's name"
    commits = git(vault.root, "log", "--format=%s").splitlines()
    assert sum(s.startswith("ingest:") for s in commits) >= operations
    assert any(s.startswith("review-approval:") for s in commits) and any(s.startswith("consolidate:") for s in commits)
    print(f"{len(person.wrote)} person edits against {operations} rounds of operations: 0 lost, 0 misattributed")
