#!/bin/bash
# Resizing redraws at once; a terminal too small says so; growing again restores the view.
. "$(dirname "$0")/lib.sh"
start_watching

tmux -L "$SOCK" resize-window -t t -x 40 -y 8
wait_for 'Terminal too small \(40x8\)'
keys j
tmux -L "$SOCK" resize-window -t t -x 80 -y 24
wait_for 'STATE'
wait_for 'alpha-spinner'
# At 80 columns the key hint and the header still fit.
wait_for '^q quit'
wait_for "PID $TARGET_PID"
lines=$(screen | wc -l)
[ "$lines" -le 24 ] || fail "drew $lines lines in a 24-line terminal"
while IFS= read -r line; do
    [ "$(LC_ALL=C.UTF-8 bash -c 'printf %s "${#1}"' _ "$line")" -le 80 ] ||
        fail "a line is wider than 80: $line"
done < <(screen)
tmux -L "$SOCK" resize-window -t t -x 160 -y 50
wait_for 'STATE'
keys q
wait_for 'PYTOP-EXIT=0'
pass
