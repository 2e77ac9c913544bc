#!/bin/bash
# Not a terminal: a one-line error that suggests --dump or -b, exit status 2, and no command
# started. A terminal curses cannot drive (unknown, or unable to move the cursor): the same.
. "$(dirname "$0")/lib.sh"
need_python
[ -x "$PYTOP" ] || fail "no pytop binary at $PYTOP"
start_target

"$PYTOP" -p "$TARGET_PID" </dev/null >"$WORK/out" 2>"$WORK/err"
status=$?
[ "$status" = 2 ] || fail "exit status $status, not 2"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "not one line: $(cat "$WORK/err")"
grep -q -- '--dump' "$WORK/err" && grep -q -- ' -b' "$WORK/err" ||
    fail "no hint of --dump or -b: $(cat "$WORK/err")"
[ -s "$WORK/out" ] && fail "wrote to stdout: $(cat "$WORK/out")"

TMPDIR=$WORK "$PYTOP" -- "$PY" -c 'open("'"$WORK"'/ran", "w")' </dev/null >/dev/null 2>&1
[ $? = 2 ] || fail "pytop -- CMD without a terminal: not exit status 2"
sleep 0.5
[ -e "$WORK/ran" ] && fail "the command was started without a terminal"

command -v tmux >/dev/null 2>&1 || pass
start_tui "TERM=dumb '$PYTOP' -p $TARGET_PID"
wait_for "pytop: the terminal 'dumb' \(TERM\) cannot move the cursor; use --dump or -b"
wait_for 'PYTOP-EXIT=2'
stop_tui
# ncurses itself (new_prescr in libtinfo) loses a block when newterm() fails: not pytop's
# leak, so a sanitizer build is told not to count leaks for this one run.
start_tui "TERM=no-such-terminal ASAN_OPTIONS=\${ASAN_OPTIONS:-}:detect_leaks=0 '$PYTOP' -p $TARGET_PID"
wait_for "pytop: cannot drive the terminal 'no-such-terminal' \(TERM\)"
wait_for 'PYTOP-EXIT=2'
pass
