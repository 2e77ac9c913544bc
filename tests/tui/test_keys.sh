#!/bin/bash
# The other keys: +/- change the refresh, r resets the statistics, Ctrl-L redraws, PgUp/PgDn
# and the arrows move over many threads.
. "$(dirname "$0")/lib.sh"
start_watching --idle 60
wait_for 'threads 64 '

keys +
wait_for 'refresh every 0\.5 s'
wait_for 'refresh 0\.5s'
keys - - -
wait_for 'refresh 3s'
keys -
wait_for 'refresh 5s'
keys + + + +
wait_for 'refresh 0\.5s'

keys r
wait_for 'statistics reset'
keys C-l
wait_for 'STATE'

keys PageDown
wait_for 'Thread [0-9]+ "idle-[0-9]+"'
keys PageUp
wait_for "Thread $TARGET_PID \"MainThread\""
keys Down Down
wait_for 'Thread [0-9]+ "beta-sleeper"'
keys Up
wait_for 'Thread [0-9]+ "alpha-spinner"'
keys End
wait_for 'Thread [0-9]+ "idle-59"|Thread [0-9]+ "gamma-waiter"'
pass
