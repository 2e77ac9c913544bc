#!/bin/bash
# pytop -- CMD: runs CMD (output to a log file it names), shows it from its first Python frame,
# and when it exits keeps the last picture with its exit status; a command that cannot run is
# a one-line error.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python

start_tui "TMPDIR='$WORK' '$PYTOP' -- '$PY' '$TUI_DIR/target.py' --exit-after 3 --status 3"
wait_for 'alpha-spinner'
wait_for 'gamma-waiter'
wait_for "command output: $WORK/pytop-python3\.[0-9]+-[A-Za-z0-9]{6}\.log"
log=$(ls "$WORK"/pytop-python3.*.log)
wait_for 'EXITED \(exit status 3\)' 10
shows 'alpha-spinner' || fail "the last picture should stay"
grep -q '^pid ' "$log" || fail "the command's output is not in $log"
[ "$(stat -c %a "$log")" = 600 ] || fail "$log is readable by others"
keys d
wait_for 'dumped the current snapshot to pytop-'
keys q
wait_for 'PYTOP-EXIT=0'

stop_tui
start_tui "TMPDIR='$WORK' '$PYTOP' -- /nonexistent/command --flag"
wait_for 'pytop: cannot run /nonexistent/command: No such file or directory'
wait_for 'PYTOP-EXIT=1'
ls "$WORK"/pytop-command-*.log >/dev/null 2>&1 && fail "a failed start left a log file"

# A command that is not Python: said so on screen while it runs, and its end shown.
stop_tui
start_tui "TMPDIR='$WORK' '$PYTOP' -- sleep 2"
wait_for 'waiting for the Python interpreter of process [0-9]+'
wait_for 'EXITED \(exit status 0\)' 10
keys q
wait_for 'PYTOP-EXIT=0'
pass
