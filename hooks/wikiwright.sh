# wikiwright shell helpers: source this from ~/.bashrc or ~/.zshrc
#   . /path/to/hooks/wikiwright.sh
#
#   wwlog "🔴 Deploys go through the staging gate from now on"
#   wwlog -s decisions "Use uv, not pip"
#   make test 2>&1 | tail -5 | wwlog -s "what didn't" -
#
# Each call appends one session block to today's daily log (secrets redacted). It never
# makes the shell wait more than WIKIWRIGHT_HOOK_TIMEOUT seconds and never fails a pipeline.
wwlog() {
    _ww_section=""
    if [ "$1" = "-s" ] || [ "$1" = "--section" ]; then
        _ww_section="$2"
        shift 2
    fi
    if [ $# -eq 0 ]; then
        echo "usage: wwlog [-s SECTION] TEXT|-" >&2
        return 0
    fi
    if [ -n "$_ww_section" ]; then
        "${WIKIWRIGHT_BIN:-wikiwright}" log --label "shell: ${PWD##*/}" --section "$_ww_section" "$@" >/dev/null || true
    else
        "${WIKIWRIGHT_BIN:-wikiwright}" log --label "shell: ${PWD##*/}" "$@" >/dev/null || true
    fi
    unset _ww_section
    return 0
}
