#!/bin/bash
# pytop --replay FILE is the live view on a recording: the header says REPLAY with the position,
# length and speed, a timeline marks the position; Space plays (the position moves), { and }
# go to the start and the end, g goes to a typed time, . and , step a sample, [ and ] change
# the speed; the views show the recorded threads and functions, and d dumps the picture.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
start_target
"$PYTOP" -p "$TARGET_PID" --record "$WORK/t.pyrec" -r 200 -d 0.5 -n 8 2>"$WORK/record.err" ||
    fail "pytop --record failed: $(cat "$WORK/record.err")"
start_pytop --replay "$WORK/t.pyrec"
wait_for 'REPLAY \|\| 0:00\.[0-9]{3} / 0:0[4-5]\.[0-9]{3} 1x'
wait_for 'alpha-spinner'
shows '^\[\|' || fail "no timeline with the position at its start"
shows "^pytop  PID $TARGET_PID " || fail "the header does not name the recorded PID $TARGET_PID"

keys Space
wait_for 'REPLAY > 0:0[1-4]\.[0-9]{3} / '
keys '}'
wait_for 'REPLAY \|\| 0:0[4-5]\.[0-9]{3} / '
shows '\|\]$' || fail "the timeline's position is not at its end"
keys '{'
wait_for 'REPLAY \|\| 0:00\.000 / '
keys g
wait_for 'go to \(seconds, or M:SS\):'
type_text '0:02.5'
keys Enter
wait_for 'REPLAY \|\| 0:02\.500 / '
# A step goes to the next sample, which may lie within half a millisecond of 2.5 s and show as
# 0:02.500: three steps are past it (samples are about 5 ms apart at 200 Hz).
keys . . .
wait_for 'REPLAY \|\| 0:02\.50[1-9] / |REPLAY \|\| 0:02\.5[1-9][0-9] / '
keys ,
wait_for 'REPLAY \|\| 0:02\.[45][0-9]{2} / '
keys ']'
wait_for 'REPLAY \|\| .* 2x'
keys '[' '['
wait_for 'REPLAY \|\| .* 0\.5x'

# The views as live: the Functions view counts the window ending at the position.
keys 2
wait_for 'thread-samples in [1-9][0-9]* samples over'
wait_for 'alpha_spin'
keys 1
# d dumps the picture shown, as live.
keys p
wait_for 'FROZEN'
keys d
wait_for 'dumped the frozen snapshot to pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt'
name=$(screen | grep -oE 'pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt' | head -1)
grep -q "^Process $TARGET_PID: Python 3\." "$WORK/$name" || fail "the dump has no header"
grep -qE 'in alpha_spin$' "$WORK/$name" || fail "alpha_spin is not in the dump"
keys q
wait_for 'PYTOP-EXIT=0'
pass
