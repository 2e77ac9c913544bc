#!/bin/bash
# Tab and 1-4 switch views: Functions (with t for one thread), GC with its generations,
# Tasks that this target has no asyncio tasks.
. "$(dirname "$0")/lib.sh"
start_watching

keys 2
wait_for 'OWN%.*TOTAL%.*OWN s.*TOTAL s.*CPU%.*FUNCTION.*FILE:LINE'
wait_for 'All threads: [0-9]+ thread-samples'
wait_for '^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9]+|-)  alpha_spin '
keys s
wait_for 'TOTAL%[▼v]'
keys S S
wait_for 'FILE:LINE[▼v]'
keys Tab
wait_for 'Samples with a thread in the GC: [0-9.]+ %'
wait_for 'automatic collection (on|OFF)'
keys Tab
wait_for 'Interpreter 0: 0 tasks'
keys Tab
wait_for 'STATE'
keys BTab
wait_for 'Interpreter 0: 0 tasks'
keys 1

# t: the Functions view counts the selected thread alone: alpha-spinner, wherever its tid puts
# it (tids wrap around below the pid).
for i in $(seq 10); do
    shows '── Thread [0-9]+ "alpha-spinner"' && break
    keys j
    sleep 0.2
done
wait_for '── Thread [0-9]+ "alpha-spinner"'
keys t 2
wait_for 'Thread [0-9]+ alpha-spinner: [0-9]+ thread-samples'
wait_for 'alpha_spin '
shows 'beta_wait' && fail "only alpha-spinner's functions should be counted"
keys t
wait_for 'All threads:'
wait_for 'beta_wait'
pass
