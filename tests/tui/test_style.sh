#!/bin/bash
# Colours follow the terminal and go with --no-color or NO_COLOR; Unicode lines in a UTF-8
# locale, ASCII otherwise.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
start_target

colours() {
    tmux -L "$SOCK" capture-pane -p -e -t t | grep -cE $'\e\\[([0-9;]*;)?(3[0-7]|9[0-7]|38;)'
}

start_pytop -p "$TARGET_PID"
wait_for 'alpha-spinner'
wait_for '── Thread'
[ "$(colours)" -gt 0 ] || fail "no colours by default"
stop_tui

start_pytop -p "$TARGET_PID" --no-color
wait_for 'alpha-spinner'
[ "$(colours)" = 0 ] || fail "colours despite --no-color"
stop_tui

start_tui "NO_COLOR=1 '$PYTOP' -p $TARGET_PID"
wait_for 'alpha-spinner'
[ "$(colours)" = 0 ] || fail "colours despite NO_COLOR"
stop_tui

TUI_LOCALE=C start_pytop -p "$TARGET_PID"
wait_for 'alpha-spinner'
wait_for '^-- Thread [0-9]+ "MainThread" .* -----'
wait_for 'TID[v]'
shows '─' && fail "Unicode lines outside a UTF-8 locale"
pass
