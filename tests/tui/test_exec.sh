#!/bin/bash
# The target exec()s: into Python again, the view follows it (the header says so, the new
# program's threads show); into /bin/sleep, the view ends within a second or two with the
# one-line reason and exit status 1; a command started with -- that exec()s into /bin/sleep
# ends the same way, and the command with it.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
EXECER="$TUI_DIR/../integration/targets/execer.py"

start_script "$EXECER" "$WORK/python.json" "$PY"
start_pytop -p "$TARGET_PID"
wait_for 'before-exec-worker'
shows 'exec\(\)ed' && fail "the header tells of an exec before any"
touch "$WORK/python.json.go"
wait_for "exec\\(\\)ed $(basename "$PY") at [0-9]{2}:[0-9]{2}:[0-9]{2}" 5
wait_for 'after-exec-worker' 10
shows 'before-exec-worker' && fail "the old program's thread is still shown"
keys q
wait_for 'PYTOP-EXIT=0'
stop_tui
kill "$TARGET_PID" 2>/dev/null
wait "$TARGET_PID" 2>/dev/null

start_script "$EXECER" "$WORK/sleep.json" sleep
start_pytop -p "$TARGET_PID"
wait_for 'before-exec-worker'
touch "$WORK/sleep.json.go"
t0=$SECONDS
wait_for "process $TARGET_PID exec\\(\\)ed (/usr)?/bin/sleep; it is no longer a Python process" 5
wait_for 'PYTOP-EXIT=1' 2
[ $((SECONDS - t0)) -le 3 ] || fail "the view took $((SECONDS - t0)) s to end after the exec"
stop_tui
kill "$TARGET_PID" 2>/dev/null
wait "$TARGET_PID" 2>/dev/null
TARGET_PID=

start_pytop -- "'$PY'" "'$EXECER'" "'$WORK/spawn.json'" sleep
wait_for 'before-exec-worker'
child=$(sed -n 's/.*"pid": \([0-9]*\).*/\1/p' "$WORK/spawn.json")
[ -n "$child" ] || fail "the command did not report its pid"
touch "$WORK/spawn.json.go"
wait_for "process $child exec\\(\\)ed (/usr)?/bin/sleep; it is no longer a Python process" 5
wait_for 'PYTOP-EXIT=1' 5
for i in $(seq 100); do
    kill -0 "$child" 2>/dev/null || break
    sleep 0.05
done
kill -0 "$child" 2>/dev/null && fail "the command $child still runs after the view ended"
pass
