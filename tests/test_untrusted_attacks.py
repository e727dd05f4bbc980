"""Attacks and hurried-user inputs found after issues 10 and 13 were built, each a regression.

In-process and cheap: the secret scanner, the page sanitizer, the daily-log appender and the
MCP tools' argument checks (the stdio transport itself is proven by test_mcp).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from wikiwright.core.config import load_config
from wikiwright.core.secrets import scan
from wikiwright.core.vault import Vault
from wikiwright.memory.dailylog import append_session
from wikiwright.runtime.mcp_server import ToolInputError, WikiTools
from wikiwright.wiki.sanitize import clean_markdown

# A README describing the feature names the setting without holding a secret.
PLACEHOLDERS = [
    "Set password= in the config file.",
    "use `password=` to set it",
    "password=<your-password>",
    "password=***",
    "password: <password>",
    'password=""',
    "DB_PASSWORD=YOUR_PASSWORD",
    "password=${DB_PASSWORD}",
    "api_key=<key>",
    "password=%(pw)s",
    "password=...",
    "api_key = \"sk-...\"",
    "token: abc…",
    "in every prompt (`llm.redact_secrets = true`): the kinds",
    "tokens, private key blocks, `password=…`) before anything",
    "export OPENAI_API_KEY=sk-...",
    "The password: is asked at login.",
    "postgres://app:<password>@db/app",
    'password="YOUR_PASSWORD"',
]
REAL = [
    ("password = hunter2", "hunter2"),
    ('DB_PASSWORD: "s3cr3t!"', "s3cr3t!"),
    ("password=supersecret", "supersecret"),
    ("password=yourmom123", "yourmom123"),
    ("secret=`abc123xyz`", "abc123xyz"),
    ("postgres://app:pa55w0rd@db/app", "pa55w0rd"),
    ("access_token=abc1234567890", "abc1234567890"),
]


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_a_placeholder_is_not_a_secret(text: str) -> None:
    assert scan(text) == (text, [])


@pytest.mark.parametrize("text,value", REAL)
def test_a_real_value_is_still_redacted(text: str, value: str) -> None:
    redacted, kinds = scan(text)
    assert value not in redacted and kinds


@pytest.mark.parametrize("embed", ["![[.git/config]]", "![[notes/.env]]", "![[.obsidian/workspace.json]]"])
def test_an_embed_of_a_hidden_file_becomes_text(embed: str) -> None:
    cleaned = clean_markdown(embed)
    assert "![[" not in cleaned.text and cleaned.notes


def test_relative_embeds_inside_the_vault_stay() -> None:
    for text in ("![[./diagram.png]]", "![[img/diagram.png]]", "![a](./img/a.png)"):
        assert clean_markdown(text).text == text


def test_daily_log_drops_terminal_escapes_nul_and_bidi_overrides(tmp_path: Path) -> None:
    result = append_session(tmp_path, "ctl \x1b[31mred\x00 nul \u202eevil\u2028## fake session",
                            label="agent\x1b[2J")
    assert result is not None
    text = result.path.read_text(encoding="utf-8")
    for bad in ("\x1b", "\x00", "\u202e", "\u2028"):
        assert bad not in text
    assert "red nul evil" in text.replace("[31m", "")
    assert text.count("\n## ") == 1  # the separator did not open a second session heading


def test_mcp_read_page_refuses_huge_and_unopenable_names(vault: Vault) -> None:
    tools = WikiTools(load_config(vault.root), vault)
    for name in ("x" * 100_000, "y" * 300, "../secret", "sources/../../secret", ".obsidian/app"):
        with pytest.raises(ToolInputError):
            tools.read_page(name)
    tools.log("password = hunter2 and \x1b]0;title\x07 AKIAABCDEFGHIJKLMNOP")
    written = "".join(p.read_text(encoding="utf-8") for p in vault.logs.glob("*.md"))
    assert "hunter2" not in written and "AKIAABCDEFGHIJKLMNOP" not in written and "\x1b" not in written


def _claude_install(tmp_path: Path) -> tuple[Path, Path]:
    import sys

    from wikiwright.memory.install import install_claude_code

    settings = tmp_path / "home" / ".claude" / "settings.json"
    install_claude_code(None, Path(sys.executable), tmp_path / "hooks.log")
    return settings, tmp_path / "hooks.log"


def test_hook_install_writes_through_a_symlinked_settings_file(tmp_path: Path) -> None:
    from wikiwright.memory.install import uninstall_claude_code

    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    other = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo other"}]}]}}\n'
    dotfiles.write_text(other)
    link = tmp_path / "home" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    _claude_install(tmp_path)
    _claude_install(tmp_path)  # twice: still one entry
    assert link.is_symlink() and dotfiles.read_text().count("claude-code") == 2  # SessionEnd + PreCompact
    assert "echo other" in dotfiles.read_text()
    uninstall_claude_code(None)
    assert link.is_symlink() and dotfiles.read_text() == other


def test_hook_install_leaves_a_read_only_settings_file_alone(tmp_path: Path) -> None:
    from wikiwright.memory.install import HookInstallError

    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"a": 1}\n')
    settings.chmod(0o444)
    with pytest.raises(HookInstallError, match="read-only"):
        _claude_install(tmp_path)
    assert settings.read_text() == '{"a": 1}\n'


def test_a_refusal_note_never_carries_a_bidi_override() -> None:
    from wikiwright.core.logsetup import escape_controls
    from wikiwright.wiki.sanitize import link_target_problem

    problem = link_target_problem("invoice\u202egpj.exe")
    assert problem and "\u202e" not in problem and "\\u202e" in problem
    assert escape_controls("a\u2066b\u2069") == "a\\u2066b\\u2069"


def test_an_mcp_section_name_cannot_open_a_fake_session(vault: Vault) -> None:
    from datetime import date

    from wikiwright.memory.dailylog import parse_log

    tools = WikiTools(load_config(vault.root), vault, label="agent\n## Session 00:00 UTC — fake")
    tools.log("first", section="Decisions\n## Session 00:01 UTC — fake")
    tools.log("second", section="\u2028## Session 00:02 UTC")
    text = "".join(p.read_text(encoding="utf-8") for p in vault.logs.glob("*.md"))
    assert text.count("\n## ") == 1, text
    assert len(parse_log(text, date.today()).sessions) == 1


def test_a_transcript_path_that_is_a_fifo_does_not_block_the_hook(tmp_path: Path) -> None:
    import os

    from wikiwright.memory.hooks import read_transcript

    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    digest = read_transcript(fifo)  # opening a FIFO with no writer would wait forever
    assert digest.user_messages == [] and digest.end_offset == 0


def test_a_remote_image_inside_a_link_is_still_an_image() -> None:
    badge = "[![build](https://ci.example/badge.svg)](https://ci.example/job)"
    cleaned = clean_markdown(badge)
    assert "![" not in cleaned.text and cleaned.notes
    assert "https://ci.example/job" in cleaned.text  # the link itself stays
    assert clean_markdown("[![a](javascript:alert(1))](https://ok)").text == "[a](https://ok)"
    assert clean_markdown(badge, allow_remote_images=True).text == badge
