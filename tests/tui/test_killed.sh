#!/bin/bash
# A target killed under the view: EXITED shows, the last picture stays and can be dumped.
. "$(dirname "$0")/lib.sh"
start_watching
wait_for 'rate [0-9]+/100 Hz'

kill -9 "$TARGET_PID"
wait "$TARGET_PID" 2>/dev/null
wait_for 'EXITED' 5
shows 'alpha-spinner' || fail "the last picture should stay"
shows 'gamma_block' || fail "the last stacks should stay"
keys d
wait_for 'dumped the current snapshot to pytop-'
grep -l 'alpha-spinner' "$WORK"/pytop-*.txt >/dev/null || fail "the dump lacks the threads"
keys p
wait_for 'EXITED.*FROZEN'
keys q
wait_for 'PYTOP-EXIT=0'
pass
