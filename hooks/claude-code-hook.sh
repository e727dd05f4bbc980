#!/bin/sh
# wikiwright hook for Claude Code (SessionEnd and PreCompact): appends a session block to the
# vault's daily log with your messages and the session's final summary. Fire and forget: it
# never blocks or fails the session (always exits 0, gives up after WIKIWRIGHT_HOOK_TIMEOUT
# seconds, default 10), but a hook that cannot run says why on stderr and in its log file
# (`wikiwright hooks status` shows the last lines). `wikiwright hooks install claude-code`
# installs a copy of this script with the absolute path of your wikiwright in it.
bin="${WIKIWRIGHT_BIN:-wikiwright}"
hook_log="${WIKIWRIGHT_HOOK_LOG:-${XDG_STATE_HOME:-$HOME/.local/state}/wikiwright/log/hooks.log}"
if ! command -v "$bin" >/dev/null 2>&1; then
    msg="wikiwright hook claude-code: skipped: $bin not found (set WIKIWRIGHT_BIN or run: wikiwright hooks install claude-code)"
    echo "$msg" >&2
    mkdir -p "$(dirname "$hook_log")" 2>/dev/null
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $msg" >> "$hook_log" 2>/dev/null
    exit 0
fi
WIKIWRIGHT_HOOK_LOG="$hook_log" "$bin" hook claude-code >/dev/null
exit 0
