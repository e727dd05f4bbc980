"""REVIEW.md has one writer (wiki/reviewfile.py): every proposal can be ticked, bad bytes never stop it."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from wikiwright.core.config import load_config
from wikiwright.core.vault import Vault
from wikiwright.ingest.llm_planner import held_proposals
from wikiwright.ingest.operations import Workspace
from wikiwright.runtime.context import VaultContext
from wikiwright.wiki.reviewfile import HELD_BACK, ReviewStore, parse_review

from tests.conftest import Services
from tests.helpers import cli, daemon_log, git, review_queue, start_daemon, wait_for
from tests.model_helpers import page
from tests.test_model_checks import SOURCE

UNVERIFIED_CLAIM = {"op": "add_claim", "page": "billing-api", "key": "billing-api.auth", "value": "OAuth",
                    "as_of": "2026-05-01", "quote": "The billing API uses OAuth.", "replaces": False}
SCRIPT = {"op": "add_to_section", "page": "billing-api", "heading": "Embed",
          "text": "<script src=\"https://evil.example/x.js\"></script>"}


def _propose(vault: Vault, kind: str, items: list[Any]) -> list[str]:
    """Proposals through REVIEW.md's one writer, the door (committed with the operation)."""
    with VaultContext(load_config(vault.root), vault) as ctx, ctx.door.operation("lint", "proposals") as op:
        return op.propose(kind, items)


def _tick(vault: Vault, item_id: str, mark: str = "x") -> None:
    text = vault.review_file.read_text(encoding="utf-8")
    lines = [re.sub(r"^- \[ \]", f"- [{mark}]", line) if line.endswith(f"^{item_id}") else line
             for line in text.splitlines()]
    vault.review_file.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_operations_held_back_by_ingest_checks_are_tickable_proposals(services: Services) -> None:
    """The model path writes these lines at commit time (test_model_checks checks their ``^id``);
    here the same checks hold the operations, without a model, and a person answers them."""
    vault = services.vault
    (vault.wiki / "billing-api.md").write_text("---\ntype: entity\ntitle: Billing API\n---\n\n# Billing API\n\n"
                                               "Serves invoices.\n")
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-q", "-m", "a page")
    services.drop("notes.md", SOURCE)
    assert [r.state for r in services.drain()] == ["ingested"]
    workspace = Workspace(vault, "src-notes", SOURCE, date(2026, 5, 2), 0.3, find_claim_pages=lambda key: [])
    assert not workspace.apply(dict(UNVERIFIED_CLAIM)) and not workspace.apply(dict(SCRIPT))
    record = services.ledger.get_file("raw/notes.md")
    assert record is not None
    _propose(vault, HELD_BACK, held_proposals(record, "sources/src-notes", workspace.held))
    vault = services.vault
    held = {i: line for i, line in parse_review(vault.review_file.read_text()).items() if i.startswith("held-back-")}
    assert len(held) == 2, vault.review_file.read_text()
    claim_id = next(i for i, line in held.items() if "not found verbatim" in line.text)
    script_id = next(i for i, line in held.items() if "<script>" in line.text)
    assert "OAuth" not in page(services, "billing-api")
    _tick(vault, claim_id)
    _tick(vault, script_id)
    queue = review_queue(services.config, vault)
    try:
        outcomes = {o.id: o for o in queue.process()}
    finally:
        queue.close()
    # The person vouched for the claim: it is applied, cited to the source, in one commit.
    assert outcomes[claim_id].state == "applied", outcomes
    assert "- `billing-api.auth`: OAuth (as of 2026-05-01, [[src-notes]])" in page(services, "billing-api")
    commits = git(vault.root, "log", "--format=%B", f"--grep=Wikiwright-Review: {claim_id}")
    assert "Wikiwright-Operation: review-approval" in commits and "wiki/billing-api.md" in commits
    # A safety check is never waived, even when ticked: the script is not written.
    assert outcomes[script_id].state == "resolved" and "<script>" in outcomes[script_id].detail
    assert "evil.example" not in page(services, "billing-api")
    assert git(vault.root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""


def test_an_option_ticked_under_a_proposal_is_its_answer(vault: Vault) -> None:
    """Options are sub-checkboxes with their own ids; a tick on one is the answer."""
    [item_id] = _propose(vault, "claim-conflict", [{"description": "`k` has 2 values; which stands?",
                                                          "facts": {"k": 1}}])
    text = vault.review_file.read_text()
    line = parse_review(text)[item_id]
    assert line.options == () and line.answer == "open"
    text = text.replace(f"^{item_id}\n", f"^{item_id}\n    - [x] 8 MB ^{item_id}-v1\n    - [ ] both ^{item_id}-both\n")
    line = parse_review(text)[item_id]
    assert line.options == (("v1", "x"), ("both", " ")) and line.chosen == ("v1",)


def test_bad_bytes_in_review_md_keep_the_persons_text_and_ticks_still_apply(
    vault: Vault, isolated_env: dict[str, str]
) -> None:
    [first, second] = _propose(vault, "held-back", [
        {"description": "first proposal", "facts": {"n": 1}}, {"description": "second proposal", "facts": {"n": 2}}])
    text = vault.review_file.read_text().replace(f"- [ ] first proposal ^{first}", f"- [x] first proposal ^{first}")
    latin1 = "\nMy note: caf\xe9 in Latin-1.\n".encode("latin-1")
    vault.review_file.write_bytes(text.encode("utf-8") + latin1)
    env = {**isolated_env, "WIKIWRIGHT_LINT_INTERVAL_HOURS": "1000", "WIKIWRIGHT_LINT_REVIEW_POLL_SECONDS": "0.2"}
    proc = start_daemon(vault.root, env)
    try:
        def state(item_id: str) -> str:
            store = ReviewStore(vault.db_path)
            try:
                item = store.get(item_id)
                return item.state if item else ""
            finally:
                store.close()

        wait_for(lambda: state(first) == "dismissed", timeout=30, what="the tick carried out despite a bad byte")
        status = json.loads(cli("status", "--json", "--vault", str(vault.root), env=env).stdout)
        notices = [n["message"] for n in status["notices"] if n["key"] == "review-file"]
        assert notices and "not UTF-8" in notices[0], status["notices"]
        # The person's bytes are kept exactly; the daemon's note went onto its own line.
        data = vault.review_file.read_bytes()
        assert data.endswith(latin1) and b"dismissed" in data
        assert state(second) == "open"
        # Another answer still works while the bad byte is there; no error loop in the log.
        vault.review_file.write_bytes(data.replace(f"- [ ] second proposal ^{second}".encode(),
                                                   f"- [-] second proposal ^{second}".encode()))
        wait_for(lambda: state(second) == "rejected", timeout=30, what="a rejection next to a bad byte")
        assert proc.poll() is None, daemon_log(proc)
        assert "Traceback" not in daemon_log(proc) and "UnicodeDecodeError" not in daemon_log(proc)
        # Saved as UTF-8 again: the notice goes away.
        vault.review_file.write_bytes(vault.review_file.read_bytes().replace(b"caf\xe9", "café".encode()))

        def notice_gone() -> bool:
            out = json.loads(cli("status", "--json", "--vault", str(vault.root), env=env).stdout)
            return not [n for n in out["notices"] if n["key"] == "review-file"]

        wait_for(notice_gone, timeout=30, what="the notice cleared")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
