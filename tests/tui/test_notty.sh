#!/bin/bash
# Not a terminal: a one-line error that suggests --dump or -b, exit status 2, and no command
# started.
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
pass
