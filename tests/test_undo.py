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


# Five sources about Kestrel on the model path: the third creates a page the fourth builds on,
# and the third and fourth both add to overview.md (the case a user met: refused on main).
KESTREL = [
    ("k1.md", "Kestrel is the job scheduler of the data team. Kestrel runs 40 jobs per hour.\n"),
    ("k2.md", "The Kestrel team is led by Dana Ortiz.\n"),
    ("k3.md", "Kestrel queues live in the Kestrel broker. The Kestrel broker keeps jobs for 7 days.\n"),
    ("k4.md", "The Kestrel broker runs on three nodes. Kestrel retries a failed job twice.\n"),
    ("k5.md", "Kestrel now runs 60 jobs per hour, up from 40.\n"),
]


def _claim(page_: str, key: str, value: str, quote: str, replaces: bool = False) -> dict[str, object]:
    return {"op": "add_claim", "page": page_, "key": key, "value": value, "as_of": "2026-05-01",
            "quote": quote, "replaces": replaces}


KESTREL_REPLIES: dict[str, list[dict[str, object]]] = {
    "k1.md": [
        {"op": "create_page", "page": "kestrel", "type": "entity", "title": "Kestrel",
         "summary": "The data team's job scheduler.", "body": "# Kestrel\n\nThe data team's job scheduler.\n"},
        _claim("kestrel", "kestrel.jobs-per-hour", "40 jobs per hour", "Kestrel runs 40 jobs per hour."),
        {"op": "add_to_section", "page": "overview", "heading": "Systems", "text": "- [[kestrel]]: the job scheduler."},
    ],
    "k2.md": [_claim("kestrel", "kestrel.owner", "Dana Ortiz", "The Kestrel team is led by Dana Ortiz.")],
    "k3.md": [
        {"op": "create_page", "page": "kestrel-broker", "type": "entity", "title": "Kestrel broker",
         "summary": "Where Kestrel queues live.", "body": "# Kestrel broker\n\nWhere [[kestrel]] queues live.\n"},
        _claim("kestrel-broker", "kestrel-broker.retention", "7 days", "The Kestrel broker keeps jobs for 7 days."),
        {"op": "add_links", "page": "kestrel", "links": ["kestrel-broker"]},
        {"op": "add_to_section", "page": "overview", "heading": "Systems",
         "text": "- [[kestrel-broker]]: where Kestrel queues live."},
    ],
    "k4.md": [
        _claim("kestrel-broker", "kestrel-broker.nodes", "three nodes", "The Kestrel broker runs on three nodes."),
        _claim("kestrel", "kestrel.retries", "twice", "Kestrel retries a failed job twice."),
        {"op": "add_to_section", "page": "overview", "heading": "Systems", "text": "- Kestrel retries failed jobs."},
    ],
    "k5.md": [_claim("kestrel", "kestrel.jobs-per-hour", "60 jobs per hour",
                     "Kestrel now runs 60 jobs per hour, up from 40.", replaces=True)],
}


def _kestrel_script(request: dict[str, object]) -> dict[str, object]:
    text = " ".join(str(m.get("content") or "") for m in request.get("messages") or []  # type: ignore[attr-defined]
                    if m.get("role") == "user")
    for name, _ in KESTREL:
        if f"`raw/{name}`" in text:
            return {"title": f"Kestrel note {name}", "summary": "A note about Kestrel.", "key_points": [],
                    "operations": KESTREL_REPLIES[name]}
    return {"title": "unknown", "summary": "", "operations": []}


def test_revert_the_third_of_five_model_ingests_that_later_ones_built_on(services: Services) -> None:
    with ScriptedServer(_kestrel_script) as server:
        use_model(services, server)
        for name, text in KESTREL:
            services.drop(name, text)
            assert [r.state for r in services.drain()] == ["ingested"], name
    commits = ingest_commits(services.vault.root)[::-1]
    root = services.vault.root
    assert "7 days" in page(services, "kestrel-broker")
    out = _run(root, "revert", commits[2])
    assert "Reverted the ingest of raw/k3.md" in out
    assert not (services.vault.wiki / "sources" / "src-k3.md").exists()
    broker = page(services, "kestrel-broker")
    assert "7 days" not in broker and "Where [[kestrel]] queues live" not in broker
    assert _current(services, "kestrel-broker", "kestrel-broker.nodes") == ["three nodes"]  # ingest 4 stays
    overview = page(services, "overview")
    assert "where Kestrel queues live" not in overview and "- Kestrel retries failed jobs." in overview
    assert _current(services, "kestrel", "kestrel.jobs-per-hour") == ["60 jobs per hour"]
    assert _current(services, "kestrel", "kestrel.retries") == ["twice"]
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    _doctor_clean(root)
