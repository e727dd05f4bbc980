#!/bin/sh
# wikiwright hook for Claude Code (SessionEnd and PreCompact): appends a session block to the
# vault's daily log with your messages and the session's final summary. Fire and forget: it
# never blocks or fails the session (always exits 0, gives up after WIKIWRIGHT_HOOK_TIMEOUT
# seconds, default 10). Needs `wikiwright` on PATH (or set WIKIWRIGHT_BIN) and a vault:
# WIKIWRIGHT_VAULT, or the default vault recorded by `wikiwright init`.
bin="${WIKIWRIGHT_BIN:-wikiwright}"
command -v "$bin" >/dev/null 2>&1 || exit 0
"$bin" hook claude-code >/dev/null
exit 0
