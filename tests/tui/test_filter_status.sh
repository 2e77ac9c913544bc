#!/bin/bash
# A filter in force stays on the status line, saying how many rows it hides in the view shown;
# a message (a dump's name) takes the key-hint line for a few seconds, then goes, and never
# hides the filter or where a command's output goes.
. "$(dirname "$0")/lib.sh"
start_watching

keys /
type_text bet
keys Enter
wait_for '^Filter: bet  hides 3 of 4 threads  \(c clears it\)'
wait_gone 'alpha-spinner'
keys d
wait_for '^dumped the current snapshot to pytop-'
shows '^Filter: bet  hides 3 of 4 threads' || fail "the message hid the filter"
# The message goes after a few seconds (frames keep coming all the while); the filter stays.
wait_gone 'dumped the current snapshot' 8
wait_for '^q quit .* h help'
shows '^Filter: bet  hides 3 of 4 threads' || fail "the filter went with the message"
# Each view says what the filter does to it.
keys 2
wait_for '^Filter: bet  names a thread: its functions alone'
keys 3
wait_for '^Filter: bet  no effect in this view'
keys 1 c
wait_for 'alpha-spinner'
wait_gone '^Filter:'

# pytop -- CMD with a filter: the filter and the command's log path share the status line,
# and a message hides neither.
stop_tui
start_tui "TMPDIR='$WORK' '$PYTOP' --filter gamma -- '$PY' '$TUI_DIR/target.py'"
wait_for 'gamma-waiter'
log="command output: $WORK/pytop-python3\.[0-9]+-[A-Za-z0-9]{6}\.log"
wait_for "^Filter: gamma  hides 3 of 4 threads  \(c clears it\)  $log"
keys d
wait_for '^dumped the current snapshot to pytop-'
shows "^Filter: gamma  hides 3 of 4 threads  \(c clears it\)  $log" ||
    fail "the message hid the filter or the log path"
wait_gone 'dumped the current snapshot' 8
shows "^Filter: gamma .*$log" || fail "the filter or the log path went with the message"
pass
