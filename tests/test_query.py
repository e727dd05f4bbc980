"""search and ask on the five-source story (pages by hand; the model is the scripted server)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import date
from typing import Any

from wikiwright.core.config import Config
from wikiwright.core.locks import vault_write_lock
from wikiwright.query.query import ask, daemon_keeps_catalog_fresh, describe_claim, gather_context, save_answer, search
from wikiwright.runtime.context import VaultContext
from wikiwright.wiki.catalog import Catalog
from wikiwright.wiki.pages import get_section, parse_claims, parse_page

from tests.conftest import Services
from tests.handmade_story import build_story
from tests.helpers import cli, daemon_log, git, start_daemon, wait_for
from tests.llm_server import ScriptedServer

FIFTY = "50 requests per second per client"
HUNDRED = "100 requests per second per client"


def test_search_finds_the_current_rate_limit_on_the_right_page(services: Services) -> None:
    build_story(services)
    results = search(services.vault, services.catalog, "billing api rate limit")
    assert results[0].page == "billing-api"
    line = results[0].line
    assert line is not None and line.claim is not None
    # The best line is the current claim that set the value, never the struck one.
    assert (line.claim.value, line.claim.source, line.claim.is_current) == (FIFTY, "src-inc-482", True)
    text = (services.vault.wiki / "billing-api.md").read_text().splitlines()
    assert FIFTY in text[line.number - 1]
    struck = [c for c in results[0].claims if c.value == HUNDRED]
    assert struck and struck[0].status == "superseded" and struck[0].by == "src-inc-482"
    assert "[superseded by [[src-inc-482]]; not current]" in describe_claim(struck[0])
    assert all(r.page not in ("index", "log") for r in results)


def test_search_sees_a_page_saved_a_moment_ago_and_the_cli_prints_json(services: Services) -> None:
    build_story(services, upto=1)
    (services.vault.wiki / "zebra-notes.md").write_text("---\ntype: concept\ntitle: Zebra notes\n---\n\n"
                                                        "# Zebra notes\n\nStripes are quokkafied.\n")
    env_vault = str(services.vault.root)
    out = cli("search", "quokkafied", "--json", "--vault", env_vault)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["page"] for r in data["results"]] == ["zebra-notes"]
    assert data["results"][0]["line"]["text"] == "Stripes are quokkafied."
    human = cli("search", "rate limit", "--vault", env_vault)
    assert "wiki/billing-api.md" in human.stdout and "[current]" in human.stdout
    rebuilt = cli("reindex", "--vault", env_vault)
    assert rebuilt.returncode == 0 and "pages" in rebuilt.stdout


def test_ask_without_a_model_shows_the_current_claim_and_says_a_model_would_answer(services: Services) -> None:
    build_story(services)
    answer = ask(services.config, services.vault, services.catalog, services.ledger,
                 "What is the billing API rate limit?", costs=lambda: services.ctx.costs)
    assert answer.engine == "offline" and "model" in answer.text
    assert answer.results[0].page == "billing-api"
    values = {(ref.claim.value, ref.claim.source) for ref in answer.claims}
    assert (FIFTY, "src-inc-482") in values
    assert all(value != HUNDRED for value, _ in values)  # struck: not current
    out = cli("ask", "what", "is", "the", "rate", "limit?", "--vault", str(services.vault.root))
    assert out.returncode == 0, out.stderr
    assert "a model" in out.stdout and FIFTY in out.stdout and "Best pages" in out.stdout


def _model_config(services: Services, server: ScriptedServer) -> Config:
    return server.config(services.config)  # type: ignore[no-any-return]


def _reply(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "answer": f"The billing API allows {FIFTY} since INC-482 [[src-inc-482]]; see [[billing-api]] "
                  "and [[rate-limits-overview]].",
        "known": True,
        "citations": ["billing-api", "[[src-inc-482]]", "no-such-page"],
        "claims": [
            {"page": "billing-api", "key": "billing-api.rate-limit", "value": FIFTY},
            {"page": "billing-api", "key": "billing-api.rate-limit", "value": HUNDRED},
            {"page": "ghost-page", "key": "billing-api.rate-limit", "value": FIFTY},
        ],
    }


def test_ask_cites_the_source_that_set_the_value_and_drops_what_the_wiki_does_not_support(
    services: Services,
) -> None:
    build_story(services)
    with ScriptedServer(_reply) as server:
        config = _model_config(services, server)
        answer = ask(config, services.vault, services.catalog, services.ledger, "What is the billing API rate limit?",
                     costs=lambda: services.ctx.costs)
        prompt = server.requests[0]["messages"][1]["content"]
    assert answer.engine == "model" and answer.known
    # The pages reached the model: index.md and the billing-api page with both claim lines.
    assert "wikiwright:index:start" in prompt and FIFTY in prompt and HUNDRED in prompt
    assert [(r.page, r.claim.value, r.claim.source, r.claim.as_of) for r in answer.claims] == [
        ("billing-api", FIFTY, "src-inc-482", "2026-04-03")]
    assert answer.citations == ["billing-api", "sources/src-inc-482"]
    flags = "\n".join(answer.flags)
    assert "no-such-page" in flags and HUNDRED in flags and "ghost-page" in flags
    assert "rate-limits-overview" in flags and "[[rate-limits-overview]]" not in answer.text


def test_ask_says_plainly_when_the_wiki_does_not_know(services: Services) -> None:
    build_story(services, upto=1)
    unknown = {"answer": "The wiki does not say who the CFO is.", "known": False, "citations": [], "claims": []}
    with ScriptedServer([unknown]) as server:
        config = _model_config(services, server)
        answer = ask(config, services.vault, services.catalog, services.ledger, "Who is the billing API's CFO?",
                     costs=lambda: services.ctx.costs)
        assert not answer.known and "does not say" in answer.text
        # Nothing matches at all: no model call is spent on it.
        nothing = ask(config, services.vault, services.catalog, services.ledger, "xylophone quasar",
                      costs=lambda: services.ctx.costs)
        assert not nothing.known and "does not know" in nothing.text
        assert len(server.requests) == 1


def test_prompt_stays_within_the_budget(services: Services) -> None:
    build_story(services)
    for n in range(30):
        (services.vault.wiki / f"rate-note-{n}.md").write_text(
            f"---\ntype: concept\ntitle: Rate note {n}\n---\n\n# Rate note {n}\n\n" + "rate limit words. " * 200)
    llm = services.config.llm.__class__(prompt_budget_chars=6000)
    context = gather_context(services.config.replace(llm=llm), services.vault, services.catalog, "rate limit")
    assert len(context.prompt()) <= 6000
    assert context.pages and context.truncated


def test_ask_save_files_a_linked_answer_page_in_one_commit(services: Services) -> None:
    build_story(services)
    with ScriptedServer(_reply) as server:
        config = _model_config(services, server)
        services.close()
        with VaultContext(config, services.vault) as ctx:
            answer = ask(config, services.vault, ctx.catalog, ctx.ledger, "What is the billing API rate limit?",
                         costs=lambda: ctx.costs)
            page, sha = save_answer(ctx.door, answer, date(2026, 5, 1))
    root = services.vault.root
    assert sha and page == "answers/what-is-the-billing-api-rate-limit"
    saved = parse_page((services.vault.wiki / f"{page}.md").read_text())
    assert saved.meta["type"] == "answer" and "[[billing-api]]" in saved.body and FIFTY in saved.body
    assert parse_claims(saved.body)[0] == []  # restated claims are not new claims
    entity = (services.vault.wiki / "billing-api.md").read_text()
    answers = get_section(parse_page(entity).body, "Answers")
    assert answers and "[[what-is-the-billing-api-rate-limit|What is the billing API rate limit?]]" in answers
    assert "## Claims" in entity and FIFTY in entity  # the rest of the page is untouched
    message = git(root, "log", "-1", "--format=%B")
    assert "Wikiwright-Operation: answer" in message
    changed = set(git(root, "show", "--name-only", "--format=", "HEAD").split())
    assert changed == {f"wiki/{page}.md", "wiki/billing-api.md", "wiki/sources/src-inc-482.md",
                       "wiki/index.md", "wiki/log.md"}
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    assert "what-is-the-billing-api-rate-limit" in (services.vault.wiki / "index.md").read_text()


def test_a_writing_command_runs_beside_the_daemon_and_waits_for_its_write_lock(services: Services) -> None:
    """retract (like revert and ask --save) needs no daemon stop: it takes the vault's write lock."""
    build_story(services)
    root = services.vault.root
    services.ledger.close()
    services.catalog.close()
    daemon = start_daemon(root)
    try:
        wait_for(lambda: (services.vault.state / "heartbeat.json").exists(), what="the daemon's heartbeat")
        with vault_write_lock(services.vault.state):
            retract = subprocess.Popen(
                [sys.executable, "-m", "wikiwright", "retract", "raw/draft-faq.md", "--vault", str(root)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            time.sleep(1.5)
            assert retract.poll() is None, "the command must wait while another writer holds the lock"
        out, err = retract.communicate(timeout=60)
        assert retract.returncode == 0, out + err
        assert "Wikiwright-Operation: retract" in git(root, "log", "-1", "--format=%B")
        # The daemon goes on ingesting afterwards.
        (services.vault.raw / "after.md").write_text("# After\n\nA note dropped after the retraction.\n")
        wait_for(lambda: "ingest: After" in git(root, "log", "-1", "--format=%s"), what="the next ingest")
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=30) == 0, daemon_log(daemon)
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""


def test_the_running_daemon_keeps_the_catalogue_fresh_so_search_needs_no_scan(services: Services) -> None:
    """A person's page saved in wiki/ is re-indexed by the daemon's page watcher within a poll."""
    root = services.vault.root
    services.ledger.close()
    services.catalog.close()
    assert not daemon_keeps_catalog_fresh(services.vault)
    daemon = start_daemon(root)
    try:
        wait_for(lambda: daemon_keeps_catalog_fresh(services.vault), what="the daemon watching wiki/")
        (services.vault.wiki / "zebra-crossings.md").write_text(
            "---\ntype: concept\ntitle: Zebra crossings\n---\n\n# Zebra crossings\n\nStriped walkways.\n")
        catalog = Catalog(services.vault)
        try:
            # No refresh here: only the daemon can have put the page into the catalogue.
            wait_for(lambda: [h.name for h in catalog.search("striped walkways")] == ["zebra-crossings"],
                     what="the daemon re-indexing a page a person saved")
            results = search(services.vault, catalog, "striped walkways")
            assert [r.page for r in results] == ["zebra-crossings"]
        finally:
            catalog.close()
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=30) == 0, daemon_log(daemon)
    assert not daemon_keeps_catalog_fresh(services.vault)  # a stopped daemon: searches scan again
