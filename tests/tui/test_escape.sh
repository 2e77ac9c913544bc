#!/bin/bash
# Names from the target never reach the terminal raw: escape sequences, control characters,
# a right-to-left override and bytes that are not UTF-8 are drawn as \x.. and \u.. escapes.
. "$(dirname "$0")/lib.sh"
start_watching --hostile

# In the table the name and the function may be cut (the columns share the width); the stack
# below has them whole.
wait_for 'evil\\x1b\]2;pwned\\x07\\x1b\[2J'
title=$(tmux -L "$SOCK" display -p -t t '#{pane_title}')
case $title in
    *pwned*) fail "the target's name changed the terminal's title" ;;
esac
tmux -L "$SOCK" capture-pane -p -e -t t | grep -q $'\e\\[31mred' && fail "a colour of the target's"
wait_for 'PID [0-9]+ '
# The hostile thread's stack, its function named the same way.
keys End
wait_for '^  evil\\x1b\]2;pwned\\x07\\x1b\[2J\\x1b\[31mred\\u202e\\xed\\xb3\\xbf  '
wait_for '── Thread [0-9]+ "evil\\x1b\]2;pwned\\x07\\x1b\[2J\\x1b\[31mred\\u202e\\xed\\xb3\\xbf" '
# Outside UTF-8 every byte past ASCII is escaped too.
stop_tui
TUI_LOCALE=C start_pytop -p "$TARGET_PID"
wait_for 'evil\\x1b\]2;pwned'
shows $'\u2026' && fail "a UTF-8 ellipsis outside a UTF-8 locale"
pass
