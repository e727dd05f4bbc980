"""``wikiwright eval``: the maintenance benchmark scores 100% on the scripted server, and a
deliberately broken reply script scores less (the scorer can fail)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from wikiwright.cli.main import main
from wikiwright.core.config import load_config
from wikiwright.runtime.evaluate import load_story, run_eval, story_script


def test_eval_on_the_scripted_server_scores_100_percent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["score"] == 100.0, card["checks"]
    assert card["engine"].startswith("scripted server")
    names = {c["name"] for c in card["checks"]}
    assert {"superseded (inc-482.md)", "conflicts found: precision", "conflicts found: recall",
            "retracted (draft-faq.md)", "citations valid", "quotes verified"} <= names
    assert all(c["passed"] == c["total"] > 0 for c in card["checks"])
    assert [s["calls"] for s in card["sources"]] == [1, 1, 1, 1, 1]
    assert all(s["prompt_tokens"] > 0 and s["seconds"] > 0 for s in card["sources"])
    assert card["totals"]["calls"] == 5 and card["held_back"] == []


def test_a_broken_reply_script_scores_below_100_percent() -> None:
    story = load_story()
    replies = copy.deepcopy(story["replies"])
    # The incident's model "forgets" that it replaces the old limit, and misquotes the chat.
    for op in replies["inc-482.md"]["operations"]:
        if op["op"] == "add_claim":
            op["replaces"] = False
    replies["chat-thread.md"]["operations"][0]["quote"] = "audit logs are kept for a whole year"
    good = story_script(story)

    def broken(request: dict[str, Any]) -> Any:
        reply = good(request)
        return copy.deepcopy(replies.get(_named(reply, story), reply))

    card = run_eval(load_config(None), use_configured_model=False, script=broken, story=story)
    checks = {c.name: c for c in card.checks}
    assert card.score < 100.0
    assert checks["superseded (inc-482.md)"].passed == 0  # 100/s left current on every page
    assert checks["conflicts found: precision"].ratio < 1.0  # 100 vs 50 now reported too
    assert checks["quotes verified"].ratio < 1.0
    assert any("verbatim" in h["reason"] for h in card.held)


def _named(reply: dict[str, Any], story: dict[str, Any]) -> str:
    return next((name for name, r in story["replies"].items() if r["title"] == reply.get("title")), "")


def test_eval_against_a_model_that_never_answers_scores_it_and_fails(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A configured model nobody serves (a closed port): every source waits for the model. The
    # story's retraction has nothing to retract; the scorecard says why, and the command fails.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("WIKIWRIGHT_LLM_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("WIKIWRIGHT_LLM_API_BASE", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("WIKIWRIGHT_LLM_TIMEOUT", "5")
    monkeypatch.setenv("WIKIWRIGHT_LLM_MAX_RETRIES", "0")
    assert main(["eval", "--json"]) == 1
    captured = capsys.readouterr()
    card = json.loads(captured.out)
    assert [s["state"] for s in card["sources"]] == ["pending"] * 5
    assert all(s["reason"] for s in card["sources"])
    checks = {c["name"]: c for c in card["checks"]}
    assert checks["retracted (draft-faq.md)"]["passed"] == 0
    assert "not ingested" in checks["retracted (draft-faq.md)"]["detail"]
    assert checks["sources ingested"]["passed"] == 0 and "pending" in checks["sources ingested"]["detail"]
    assert card["score"] < 100.0
    assert "the model did not answer for 5 of 5 sources" in captured.err
