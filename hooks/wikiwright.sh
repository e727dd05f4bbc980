# wikiwright shell helpers: source this from ~/.bashrc or ~/.zshrc
# (`wikiwright hooks install shell` does it, with the absolute path of your wikiwright)
#   . /path/to/hooks/wikiwright.sh
#
#   wwlog "🔴 Deploys go through the staging gate from now on"
#   wwlog -s decisions "Use uv, not pip"
#   make test 2>&1 | tail -5 | wwlog -s "what didn't" -
#
# Each call appends a note to today's daily log (secrets redacted); a note is not a session
# for the consolidation gate (`wikiwright log --session` is). It never makes the shell wait
# more than WIKIWRIGHT_HOOK_TIMEOUT seconds and never fails a pipeline; when wikiwright cannot
# be run it says so on stderr and in the hooks' log file.
wwlog() {
    _ww_bin="${WIKIWRIGHT_BIN:-wikiwright}"
    _ww_section=""
    if [ "$1" = "-s" ] || [ "$1" = "--section" ]; then
        _ww_section="$2"
        shift 2
    fi
    if [ $# -eq 0 ]; then
        echo "usage: wwlog [-s SECTION] TEXT|-" >&2
        return 0
    fi
    _ww_log="${WIKIWRIGHT_HOOK_LOG:-${XDG_STATE_HOME:-$HOME/.local/state}/wikiwright/log/hooks.log}"
    if ! command -v "$_ww_bin" >/dev/null 2>&1; then
        _ww_msg="wwlog: $_ww_bin not found; nothing logged (run: wikiwright hooks install shell)"
    elif [ -n "$_ww_section" ]; then
        "$_ww_bin" log --label "shell: ${PWD##*/}" --section "$_ww_section" "$@" >/dev/null &&
            _ww_msg="" || _ww_msg="wwlog: wikiwright log failed (its message is above); nothing logged"
    else
        "$_ww_bin" log --label "shell: ${PWD##*/}" "$@" >/dev/null &&
            _ww_msg="" || _ww_msg="wwlog: wikiwright log failed (its message is above); nothing logged"
    fi
    if [ -n "$_ww_msg" ]; then
        echo "$_ww_msg" >&2
        mkdir -p "$(dirname "$_ww_log")" 2>/dev/null
        echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $_ww_msg" >> "$_ww_log" 2>/dev/null
    fi
    unset _ww_log _ww_msg
    unset _ww_bin _ww_section
    return 0
}
