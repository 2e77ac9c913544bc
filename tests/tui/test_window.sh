#!/bin/bash
# The statistics' window is the user's: the header says which ("window 1s"); w cycles 1 s,
# 10 s, 60 s and since the last reset ("window all 12s"), keeping what was counted when the
# window grows and starting afresh when it shrinks; --window sets it at start.
. "$(dirname "$0")/lib.sh"
start_watching

wait_for 'window 1s'
keys 2
wait_for 'All threads: [0-9]+ thread-samples in [0-9]+ samples over'
# The Functions view says how far back its counts reach: a second at most.
span() {
    screen | grep -oE 'samples over [0-9]+\.[0-9] s' | head -1 | grep -oE '[0-9]+\.[0-9]'
}
# True when the number $1 is at most $2.
at_most() {
    awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'
}
sleep 1.5
s=$(span)
at_most "$s" 1.0 || fail "a 1 s window spans $s s"

keys w
wait_for 'window 10s'
wait_for 'statistics over the last 10 s'
shows 'started afresh' && fail "a longer window should keep what was counted"
# What the 1 s window held is kept, and the window grows past it.
sleep 3
s=$(span)
at_most 2.5 "$s" || fail "3 s into a 10 s window the counts span $s s"

keys w
wait_for 'window 60s'
keys w
wait_for 'window all [0-9]+s'
wait_for 'statistics since the last reset'
sleep 1.5
all=$(screen | grep -oE 'window all [0-9]+s' | grep -oE '[0-9]+')
[ "$all" -ge 4 ] || fail "since the reset, the window reaches back only ${all}s"
keys r
wait_for 'statistics reset'
wait_for 'window all [0-2]s'

# Round to 1 s again: a shorter window starts afresh, and says so.
keys w
wait_for 'window 1s'
wait_for 'statistics over the last 1 s: started afresh'
sleep 1.5
s=$(span)
at_most "$s" 1.0 || fail "back at 1 s the window spans $s s"

# --window chooses it at start; w goes on to the next longer one.
stop_tui
start_pytop -p "$TARGET_PID" --window 5
wait_for 'alpha-spinner'
wait_for 'window 5s'
keys w
wait_for 'window 10s'
pass
