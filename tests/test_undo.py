"""Undo after real use (issue 23): revert any one ingest with everything later kept, retract
with every displaced value restored, and doctor clean after what a person asked for.

Everything runs on real git and the real CLI: ingests through the real pipeline (offline
engine, or the model path against the scripted server), revert/retract/doctor as commands.
"""

from __future__ import annotations

import re
from pathlib import Path

from wikiwright.wiki.pages import get_section, iter_links, link_key, parse_claims, parse_page, set_section

from tests.conftest import Services
from tests.helpers import cli, git, ingest_commits
from tests.llm_server import ScriptedServer
from tests.model_helpers import page, use_model
from tests.story import SOURCES, story_script
from tests.undo_corpus import corpus

HUNDRED = "100 requests per second per client"


def _run(vault: Path, *args: str) -> str:
    done = cli(*args, "--vault", str(vault), timeout=300)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def _doctor_clean(vault: Path) -> None:
    done = cli("doctor", "--no-repair", "--vault", str(vault), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all invariants hold" in done.stdout


def _model_story(services: Services, server: ScriptedServer) -> list[str]:
    use_model(services, server)
    for name, text in SOURCES:
        services.drop(name, text)
        assert [r.state for r in services.drain()] == ["ingested"]
    return ingest_commits(services.vault.root)[::-1]


def _current(services: Services, name: str, key: str) -> list[str]:
    claims, _ = parse_claims(parse_page(page(services, name)).body)
    return sorted(c.value for c in claims if c.key == key and c.is_current)


def test_revert_the_third_of_five_model_ingests(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        commits = _model_story(services, server)
    root = services.vault.root
    out = _run(root, "revert", commits[2])
    assert "Reverted the ingest of raw/inc-482.md" in out
    assert not (services.vault.wiki / "sources" / "src-inc-482.md").exists()
    # The 100/s it had struck is current again on every page; ingests 4 and 5 stand.
    for name in ("billing-api", "rate-limiting", "on-call-runbook"):
        assert "50 requests per second per client" not in page(services, name), name
        assert HUNDRED in _current(services, name, "billing-api.rate-limit"), name
    assert _current(services, "billing-api", "billing-api.log-retention.audit") == ["365 days"]
    assert "200 requests per second per client" in _current(services, "billing-api", "billing-api.rate-limit")
    assert "src-inc-482" not in (services.vault.wiki / "index.md").read_text()
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(root)


def test_retract_restores_the_displaced_value_on_every_page(services: Services) -> None:
    with ScriptedServer(story_script) as server:
        _model_story(services, server)
    root = services.vault.root
    _run(root, "retract", "raw/inc-482.md", "--reason", "the incident report was wrong")
    for name in ("billing-api", "rate-limiting", "on-call-runbook"):
        assert HUNDRED in _current(services, name, "billing-api.rate-limit"), page(services, name)
        assert "50 requests per second per client" not in _current(services, name, "billing-api.rate-limit")
    _doctor_clean(root)
