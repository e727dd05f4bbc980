from __future__ import annotations

import json
import re
import time
from typing import Any

from wikiwright.core.config import Config, load_config
from wikiwright.core.vault import Vault
from wikiwright.runtime.context import VaultContext
from wikiwright.upkeep.review import ReviewStore, parse_review

from tests.helpers import cli, daemon_log, git, review_queue, start_daemon, wait_for
from tests.lint_fixture import EXPECTED, build_fixture


def _propose(vault: Vault, kind: str, items: list[Any]) -> list[str]:
    """Proposals through REVIEW.md's one writer, the door (committed with the operation)."""
    with VaultContext(load_config(vault.root), vault) as ctx, ctx.door.operation("lint", "proposals") as op:
        return op.propose(kind, items)


def _ids(vault: Vault) -> list[str]:
    return re.findall(r"\^([a-z][a-z0-9-]*-[0-9a-f]{10})\s*$", vault.review_file.read_text(), re.MULTILINE)


def test_proposals_are_idempotent_and_keeps_a_persons_text(vault: Vault) -> None:
    review = vault.review_file
    review.write_text(review.read_text() + "\nMy own note, kept.\n\n## Held back by ingest checks\n\nThoughts.\n")
    items = [{"description": "rewrite of [[billing-api]] drops 40% of it", "pages": ["billing-api"]}]
    first = _propose(vault, "held-back", items)
    assert len(first) == 1
    assert _propose(vault, "held-back", items) == []
    text = review.read_text()
    assert "My own note, kept.\n" in text and "Thoughts.\n" in text
    assert text.count(f"^{first[0]}") == 1
    # It went under the existing heading, after the person's text there.
    assert text.index("Thoughts.") < text.index(first[0])
    # Tolerant parsing: odd spacing and an upper-case X still count.
    review.write_text(text.replace("- [ ] rewrite", "*  [X]  rewrite"))
    assert parse_review(review.read_text())[first[0]].answer == "approve"


def test_held_back_page_change_is_applied_when_ticked(vault: Vault, config: Config) -> None:
    target = vault.wiki / "notes.md"
    base = "---\ntype: topic\ntitle: Notes\n---\n\n# Notes\n\nFirst.\n\nTwo.\n\nThree.\n\nFour.\n"
    target.write_text(base)
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-q", "-m", "notes")
    new_text = base + "\nSecond, held back by a retention check.\n"
    fix = {"action": "write-page", "page": "notes", "text": new_text, "base": base}
    [item_id] = _propose(vault, "held-back", [{"description": "[[notes]]: big rewrite", "pages": ["notes"],
                                                      "fix": fix}])
    queue = review_queue(config, vault)
    try:
        assert queue.process() == []  # nothing answered yet
        # Meanwhile the person edits the page; the approved change merges with their words.
        target.write_text(base.replace("First.", "First, edited by hand."))
        vault.review_file.write_text(vault.review_file.read_text().replace("- [ ]", "- [x]"))
        [outcome] = queue.process()
        assert outcome.state == "applied", outcome
        text = target.read_text()
        assert "First, edited by hand." in text and "Second, held back" in text
        log = git(vault.root, "log", "-1", "--format=%B")
        assert "Wikiwright-Operation: review-approval" in log and f"Wikiwright-Review: {item_id}" in log
        assert queue.process() == []  # answered once, acted on once
    finally:
        queue.close()


def test_running_daemon_applies_ticks_rejections_and_keeps_free_text(
    vault: Vault, isolated_env: dict[str, str]
) -> None:
    build_fixture(vault)
    env = {**isolated_env, "WIKIWRIGHT_LINT_INTERVAL_HOURS": "0.0003", "WIKIWRIGHT_LINT_REVIEW_POLL_SECONDS": "0.3"}
    proc = start_daemon(vault.root, env)
    try:
        # REVIEW.md is written just before its commit and the proposals recorded just after it:
        # wait for all three, not only the file.
        def stored() -> dict[str, str]:
            store = ReviewStore(vault.db_path)
            try:
                return {item.id: item.kind for item in store.items()}
            finally:
                store.close()

        wait_for(lambda: len(_ids(vault)) == len(EXPECTED)
                 and "Wikiwright-Operation: lint" in git(vault.root, "log", "-1", "--format=%B")
                 and len(stored()) >= len(EXPECTED),
                 timeout=30, what="lint proposals in REVIEW.md, committed and recorded")
        kinds = stored()
        text = vault.review_file.read_text()
        for heading in ("## Conflicting claims", "## Stale restatements", "## Broken links", "## Orphan pages",
                        "## Index drift"):
            assert heading in text
        by_kind = {k: i for i, k in kinds.items()}
        conflict = by_kind["claim-conflict"]
        lines = []
        for line in text.splitlines():
            if line.endswith("^" + by_kind["orphan"]):
                continue  # removed: a rejection
            if line.endswith(f"^{conflict}-v2"):
                line = line.replace("- [ ]", "- [x]")  # the decision's 30 days stands
            elif f"^{conflict}" not in line and "- [ ]" in line:
                line = line.replace("- [ ]", "- [x]")
            lines.append(line)
        free = "\nNote to self: ask Dana about the enterprise tier.\n"
        vault.review_file.write_text("\n".join(lines) + "\n" + free)

        def answered() -> bool:
            s = ReviewStore(vault.db_path)
            try:
                return not s.items("open")
            finally:
                s.close()

        wait_for(answered, timeout=30, what="every answer carried out")
        fixes = git(vault.root, "log", "--format=%H", "--grep=Wikiwright-Operation: lint-fix").split()
        assert len(fixes) == 4  # stub, the conflict answered, supersede, index
        rejections = git(vault.root, "log", "--format=%H", "--grep=Wikiwright-Operation: review-rejection").split()
        assert len(rejections) == 1
        for sha in fixes:
            assert len(git(vault.root, "show", "--format=", "--name-only", sha).split()) >= 2
        faq = (vault.wiki / "faq.md").read_text()
        assert "- ~~`export.retention`: kept for 7 days (as of 2026-02-01, [[src-faq-draft]])~~ disputed by " \
               "[[src-decision]]" in faq
        guide = (vault.wiki / "client-guide.md").read_text()
        assert "~~ superseded by [[src-inc-482]]" in guide
        assert "title: Dana Whitfield" in (vault.wiki / "dana-whitfield.md").read_text()
        # Obsidian resolves links by file name: the link now points at the stub, reading the same.
        retention = (vault.wiki / "export-retention.md").read_text()
        assert "by [[dana-whitfield|Dana Whitfield]];" in retention and "[[Dana Whitfield]]" not in retention
        assert "retired-page" not in (vault.wiki / "index.md").read_text()
        log_md = (vault.wiki / "log.md").read_text()
        assert log_md.count("review-rejection | rejected:") == 1
        assert "`export.retention` = 30 days stands" in vault.review_file.read_text()
        # Only the value the chosen one contradicts is disputed; the enterprise value stays.
        assert "- `export.retention.enterprise`: 90 days (as of 2026-03-10, [[src-decision]])" in retention
        # Let lint run a few more times: nothing is proposed twice, the person's note stays.
        before = git(vault.root, "rev-parse", "HEAD")
        time.sleep(2.5)
        text = vault.review_file.read_text()
        assert free.strip() in text
        assert sorted(_ids(vault)) == sorted(set(_ids(vault)))
        assert len(_ids(vault)) == len(EXPECTED) - 1  # the removed line stays removed
        assert git(vault.root, "rev-parse", "HEAD") == before
        second = cli("lint", "--json", "--vault", str(vault.root), env=env)
        assert second.returncode == 0, second.stdout
        assert json.loads(second.stdout)["findings"] == []
        assert proc.poll() is None, daemon_log(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert git(vault.root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""


def test_retarget_links_keeps_what_each_link_displays() -> None:
    from wikiwright.upkeep.review import retarget_links

    text = ("See [[Dana Whitfield]], [[dana whitfield|Dana]], [[Dana Whitfield#Role]], ![[Dana Whitfield]] "
            "and [[Dana Whitfields]].\n")
    assert retarget_links(text, "Dana Whitfield", "dana-whitfield") == (
        "See [[dana-whitfield|Dana Whitfield]], [[dana-whitfield|Dana]], "
        "[[dana-whitfield#Role|Dana Whitfield#Role]], ![[dana-whitfield|Dana Whitfield]] and [[Dana Whitfields]].\n"
    )
