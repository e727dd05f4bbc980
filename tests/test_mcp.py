"""`wikiwright mcp` driven by the official SDK's own stdio client, on a real vault.

One server process for the whole conversation (its start-up is the slow part): the tools,
reading, searching, bad arguments, a log observation that consolidation folds into the wiki,
and notes dropped through ingest_text, first without a daemon (ingested by the server itself),
then with one running (ingested by the daemon).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from wikiwright.core.vault import Vault, VaultLock

from tests.helpers import cli, start_daemon, wait_for

mcp_client = pytest.importorskip("mcp.client.stdio")
from mcp.client.session import ClientSession  # noqa: E402


def _result(res: Any) -> dict[str, Any]:
    assert not res.is_error, res.content[0].text
    return json.loads(res.content[0].text)


def _error(res: Any) -> str:
    assert res.is_error, res.content[0].text
    return str(res.content[0].text)


def test_mcp_server_over_stdio(vault: Vault, tmp_path: Path) -> None:
    env = {**os.environ, "WIKIWRIGHT_VAULT": str(vault.root)}
    params = mcp_client.StdioServerParameters(command=sys.executable, args=["-m", "wikiwright", "mcp"], env=env,
                                              cwd=str(tmp_path))
    daemon = None
    errlog = (tmp_path / "mcp-stderr.log").open("w")

    async def conversation() -> None:
        with anyio.fail_after(180):
            await talk()

    async def talk() -> None:
        nonlocal daemon
        async with mcp_client.stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert tools == {"search", "read_page", "list_pages", "history", "log", "ingest_text", "status"}
            # No daemon: the note is ingested by the server, through the one-shot ingest's pipeline.
            dropped = _result(await session.call_tool("ingest_text", {
                "title": "Billing export", "text": "The billing export pages invoices 500 at a time.\n"}))
            assert dropped["state"] == "ingested" and dropped["path"] == "raw/billing-export.md"
            assert dropped["page"] == "sources/src-billing-export" and dropped["commit"]
            assert "no daemon" in dropped["ingested_by"]
            found = _result(await session.call_tool("search", {"query": "invoices"}))
            assert [hit["page"] for hit in found["results"]] == ["sources/src-billing-export"]
            page = _result(await session.call_tool("read_page", {"page": "[[Billing export]]"}))
            assert page["path"] == "wiki/sources/src-billing-export.md" and "500 at a time" in page["text"]
            resource = await session.read_resource("wiki://sources/src-billing-export")
            assert resource.contents[0].text == page["text"]  # type: ignore[union-attr]
            listed = _result(await session.call_tool("list_pages", {"type": "source"}))
            assert [p["page"] for p in listed["pages"]] == ["sources/src-billing-export"]
            ops = _result(await session.call_tool("history", {"page": "sources/src-billing-export"}))
            assert [op["kind"] for op in ops["operations"]] == ["ingest"]
            logged = _result(await session.call_tool("log", {
                "text": "Deploys go through the staging gate", "priority": "🔴", "section": "decisions"}))
            assert logged["counts_as_session"] and logged["path"].startswith("logs/")
            again = _result(await session.call_tool("log", {
                "text": "Restarted the dev server, api_key=sk-live-abcdefghijklmnopqrstu", "priority": "ephemeral"}))
            assert not again["counts_as_session"] and not again["new_block"]  # one session per connection

            # Bad arguments: MCP errors, and the server goes on answering.
            assert "validation error" in _error(await session.call_tool("log", {"text": "x", "priority": "urgent"}))
            assert "needs the observation" in _error(await session.call_tool("log", {"text": "  "}))
            assert "no page" in _error(await session.call_tool("read_page", {"page": "nothing-like-it"}))
            assert "not a page name" in _error(await session.call_tool("read_page", {"page": "../../etc/passwd"}))
            assert "no page has type" in _error(await session.call_tool("list_pages", {"type": "nope"}))
            assert "search needs words" in _error(await session.call_tool("search", {"query": ""}))
            assert "validation error" in _error(await session.call_tool("search", {"query": 3, "limit": "many"}))
            assert "Unknown tool" in _error(await session.call_tool("write_page", {"page": "x"}))
            assert "unknown kind" in _error(await session.call_tool("history", {"kind": "nonsense"}))
            with pytest.raises(Exception, match=r"Unknown resource|no page"):
                await session.read_resource("wiki://../../etc/passwd")
            status = _result(await session.call_tool("status", {}))
            assert status["consolidation"]["sessions"] == 1 and not status["daemon"]["running"]

            # With a daemon running, the daemon ingests the note; the tool reports what it reached.
            daemon = start_daemon(vault.root, env)
            wait_for(lambda: "(run)" in (VaultLock(vault).holder() or ""), timeout=30, what="the daemon to start")
            second = _result(await session.call_tool("ingest_text", {
                "text": "# Deploy gate\n\nDeploys wait for the staging gate on Tuesdays.\n", "wait_seconds": 60}))
            assert second["state"] == "ingested" and second["ingested_by"] == "the running daemon"
            assert second["path"] == "raw/deploy-gate.md"

    try:
        anyio.run(conversation)
    finally:
        errlog.close()
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=30)
    assert "Traceback" not in (tmp_path / "mcp-stderr.log").read_text()
    text = "".join(p.read_text() for p in vault.logs.glob("*.md"))
    assert "🔴 Deploys go through the staging gate" in text and "sk-live-abc" not in text
    # The observation reaches the wiki through consolidation, like any daily log.
    result = cli("consolidate", "--force", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    decisions = (vault.wiki / "decisions.md").read_text()
    assert "Deploys go through the staging gate" in decisions and "sk-live-abc" not in decisions


def test_only_the_mcp_command_imports_the_sdk() -> None:
    import subprocess

    code = ("import sys\nfrom wikiwright.cli.main import build_parser\nbuild_parser()\n"
            "import wikiwright.runtime.mcp_server\n"
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_ask_is_offered_only_when_a_model_is_configured(vault: Vault) -> None:
    import dataclasses

    from wikiwright.core.config import load_config
    from wikiwright.runtime.mcp_server import WikiTools, build_server

    config = load_config(vault.root)
    with_model = dataclasses.replace(config, llm=dataclasses.replace(config.llm, model="openai/scripted"))

    async def names(cfg: Any) -> set[str]:
        return {tool.name for tool in await build_server(WikiTools(cfg, vault)).list_tools()}

    assert "ask" not in anyio.run(names, config)
    assert "ask" in anyio.run(names, with_model)
