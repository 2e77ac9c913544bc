#!/bin/bash
# The Threads view's STATE column and the stack's title say "idle" only where pytop knows it:
# before 3.15 nothing says whether a thread without the GIL waits for it, so a sleeper (or a
# CPU-bound thread between turns) reads "no GIL"; on 3.15 the sleeper is "idle". Runs the usual
# target on a 3.13 or 3.14 (skipped when there is none), then on 3.15 when there is one.
. "$(dirname "$0")/lib.sh"
need_tmux

with_gil() {
    "$1" -c 'import sys, sysconfig
sys.exit(0 if not sysconfig.get_config_var("Py_GIL_DISABLED") else 1)' >/dev/null 2>&1
}

bin=${PYTOP_PYTHONS_DIR:-/var/cache/pytop-pythons}/root/usr/bin
older=
for p in "$bin/python3.14" "$bin/python3.13" "$HOME"/.pyenv/versions/3.1[34]*/bin/python3; do
    if [ -x "$p" ] && with_gil "$p"; then
        older=$p
        break
    fi
done
[ -n "$older" ] || skip "no Python 3.13 or 3.14 with the GIL"

PY=$older
start_target
start_pytop -p "$TARGET_PID"
wait_for 'alpha-spinner'
sleeper=$(tid_of beta-sleeper) || fail "no thread beta-sleeper in /proc/$TARGET_PID/task"
waiter=$(tid_of gamma-waiter) || fail "no thread gamma-waiter in /proc/$TARGET_PID/task"
wait_for "^[ *]+$sleeper +beta-sleeper +no GIL "
wait_for "^[ *]+$waiter +gamma-waiter +no GIL "
# The main thread's stack title, in the dump's words (picked with the filter: after a pid wrap
# the main thread's tid need not be the lowest, and so the row selected first).
show_main() {
    keys /
    type_text MainThread
    keys Enter
    wait_for "Thread $TARGET_PID \"MainThread\" \(main thread, $1; most recent call first\)"
    keys c
    wait_for 'beta-sleeper'
}
show_main "no GIL"
if screen | grep -qE '^[ *]+[0-9]+ +[^ ]+ +idle( |$)'; then
    fail "a row says idle on $("$PY" -V 2>&1), where no thread's wish for the GIL is known"
fi
stop_tui
kill "$TARGET_PID" 2>/dev/null
wait "$TARGET_PID" 2>/dev/null
TARGET_PID=

if [ -x "$bin/python3.15" ] && with_gil "$bin/python3.15"; then
    PY=$bin/python3.15
    start_target
    start_pytop -p "$TARGET_PID"
    wait_for 'alpha-spinner'
    sleeper=$(tid_of beta-sleeper) || fail "no thread beta-sleeper in /proc/$TARGET_PID/task"
    wait_for "^[ *]+$sleeper +beta-sleeper +idle "
    show_main idle
    if screen | grep -qE '^[ *]+[0-9]+ +[^ ]+ +no GIL'; then
        fail "a row says no GIL on 3.15, which knows each thread's wish for the GIL"
    fi
fi
pass
