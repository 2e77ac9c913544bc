#!/bin/bash
# The Threads view: header facts, a row per thread with its kernel tid and where it is, the
# selected thread's stack with source lines, moving the cursor, all stacks, sorting.
. "$(dirname "$0")/lib.sh"
ROWS=48 # every stack fits the all-stacks view, each under its Waiting for: line
start_watching

wait_for "PID $TARGET_PID "
wait_for 'Python 3\.1[3-9]\.[0-9]+ \((release|debug build), GIL\)'
wait_for 'threads 4 '
wait_for 'rate [0-9]+/100 Hz'
for name in alpha-spinner beta-sleeper gamma-waiter; do
    tid=$(tid_of "$name") || fail "no thread $name in /proc/$TARGET_PID/task"
    wait_for "^[ *]+$tid +$name "
done
wait_for 'alpha_spin target\.py:[0-9]+'
wait_for 'beta_wait target\.py:[0-9]+'
wait_for 'gamma_block target\.py:[0-9]+'
# The main thread is first (sorted by tid) and selected: its stack is below, with source.
wait_for "Thread $TARGET_PID \"MainThread\" \(main thread"
wait_for '^  main_idle  .*target\.py:[0-9]+'
wait_for '^      time\.sleep\(0\.05\)'

# Down to the next thread: its stack replaces the main thread's.
keys j
wait_for 'Thread [0-9]+ "alpha-spinner"'
keys End
wait_for 'Thread [0-9]+ "gamma-waiter"'
wait_for 'lock\.acquire\(\)  # gamma blocks here'
keys Home
wait_for "Thread $TARGET_PID \"MainThread\""

# Enter: every stack, one after the other; Enter again: back to the table.
keys Enter
wait_for 'Thread [0-9]+ "beta-sleeper"'
wait_for 'Thread [0-9]+ "gamma-waiter"'
shows 'STATE' && fail "the table should give way to all stacks"
# It scrolls by lines; Home is the first thread's title, and back to the table it is selected.
keys j j
wait_gone "^── Thread $TARGET_PID \"MainThread\""
keys Home
wait_for "^── Thread $TARGET_PID \"MainThread\""
keys End
wait_for '^  gamma_block  '
keys Enter
wait_for 'STATE'

# s: sort by the next column (NAME), I inverts it.
keys s
wait_for 'NAME[▼v]'
keys I
wait_for 'NAME[▲^]'
first=$(screen | grep -E '^[ *] *[0-9]{2,} ' | head -1)
case $first in
    *MainThread*) ;;
    *) fail "inverted name order should put MainThread first, not: $first" ;;
esac
pass
