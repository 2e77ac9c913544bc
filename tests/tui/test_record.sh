#!/bin/bash
# R records every sample to pytop-PID-TIME.pyrec in the current directory (mode 0600, never over
# an existing file) while the view goes on: the header shows "● REC SIZE M:SS", growing; R again
# stops it and says what it holds; quitting while recording closes the file whole. The files
# read back with --replay: the target's threads and functions are in them.
. "$(dirname "$0")/lib.sh"
start_watching

keys R
wait_for 'recording to pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.pyrec \(R stops\)'
name=$(screen | grep -oE 'pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.pyrec' | head -1)
file=$WORK/$name
[ -f "$file" ] || fail "no file $file"
case $name in
    pytop-$TARGET_PID-*) ;;
    *) fail "$name does not name the PID $TARGET_PID" ;;
esac
mode=$(stat -c %a "$file")
[ "$mode" = 600 ] || fail "$name has mode $mode, not 600"
wait_for '● REC [0-9.]+ [km]?B 0:0[2-9]' 15
shows '^pytop  PID' || fail "the header is gone"
# The view goes on while recording: frozen and unfrozen, the marker stays.
keys p
wait_for 'FROZEN.*● REC|● REC.*FROZEN'
keys p
wait_gone 'FROZEN'
keys R
wait_for "recorded $name: 0:00:[0-9]{2}, [1-9][0-9]* samples"
wait_gone '● REC'

"$PYTOP" --replay "$file" --dump >"$WORK/replay.txt" 2>"$WORK/replay.err" ||
    fail "pytop --replay $name --dump failed: $(cat "$WORK/replay.err")"
[ -s "$WORK/replay.err" ] && fail "--replay of a closed recording says: $(cat "$WORK/replay.err")"
grep -q "^Process $TARGET_PID: Python 3\." "$WORK/replay.txt" || fail "the replayed dump has no header"
grep -qE 'in alpha_spin$' "$WORK/replay.txt" || fail "alpha_spin is not in the replayed dump"
"$PYTOP" --replay "$file" --export collapsed >"$WORK/collapsed" || fail "--export collapsed failed"
grep -q 'alpha_spin' "$WORK/collapsed" || fail "alpha_spin is not in the collapsed export"

# A second recording, ended by quitting: whole all the same.
keys R
wait_for 'recording to pytop-[0-9]+-[0-9]{8}-[0-9]{6}(-2)?\.pyrec'
second=$(screen | grep -oE 'recording to pytop-[0-9]+-[0-9]{8}-[0-9]{6}(-2)?\.pyrec' | head -1)
second=$WORK/${second#recording to }
[ "$second" != "$file" ] || fail "the second recording reuses $name"
sleep 1.5
keys q
wait_for 'PYTOP-EXIT=0'
"$PYTOP" --replay "$second" --dump >/dev/null 2>"$WORK/replay2.err" ||
    fail "--replay of the recording ended by q failed: $(cat "$WORK/replay2.err")"
[ -s "$WORK/replay2.err" ] && fail "the recording ended by q is not whole: $(cat "$WORK/replay2.err")"
pass
