# lib.sh: what every TUI test shares: a private tmux server, a Python target, reading the screen.
# Sourced by tests/tui/test_*.sh (bash). Environment: PYTOP (the binary), PYTOP_SRCDIR,
# PYTOP_TUI_PYTHON (the target's interpreter; else the interpreter cache's python3.15, else
# the first 3.13+ interpreter of PYTOP_TEST_PYTHONS).
set -u

TUI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTOP=${PYTOP:-$TUI_DIR/../../pytop}
TEST_NAME=$(basename "$0" .sh)
SOCK="pytop-tui-$$"
TARGET_PID=
PY=
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pytop-tui.XXXXXX") || exit 99

# A sanitizer build (--enable-sanitizers[=thread]) writes what it finds to $WORK/sanitizer.PID
# (not to the terminal, where no one reads it) and stops there with a failing status; pass()
# fails on any such report. ThreadSanitizer would go on by default: the caller's TSAN_OPTIONS
# may still say so, but not where the reports go.
SANITIZER_LOG=$WORK/sanitizer
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$SANITIZER_LOG"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$SANITIZER_LOG"
TSAN_OPTIONS="halt_on_error=1:exitcode=66${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export TSAN_OPTIONS="$TSAN_OPTIONS:log_path=$SANITIZER_LOG"

tui_cleanup() {
    tmux -L "$SOCK" kill-server >/dev/null 2>&1
    if [ -n "$TARGET_PID" ]; then
        kill "$TARGET_PID" 2>/dev/null
        wait "$TARGET_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap tui_cleanup EXIT

skip() {
    echo "SKIP: $TEST_NAME: $*"
    exit 77
}

screen() {
    tmux -L "$SOCK" capture-pane -p -t t 2>/dev/null
}

# Prints each sanitizer report pytop wrote; false when there is none.
sanitizer_reports() {
    local f found=1
    for f in "$SANITIZER_LOG".*; do
        [ -e "$f" ] || continue
        echo "--- $(basename "$f"):"
        cat "$f"
        found=0
    done
    return $found
}

fail() {
    echo "FAIL: $TEST_NAME: $*"
    echo "--- the screen:"
    screen
    echo "---"
    sanitizer_reports
    exit 1
}

# Ends pytop (as a closed terminal does) and passes, unless a sanitizer reported something.
pass() {
    stop_tui
    if sanitizer_reports; then
        echo "FAIL: $TEST_NAME: the sanitizer reported the above"
        exit 1
    fi
    echo "PASS: $TEST_NAME"
    exit 0
}

need_tmux() {
    command -v tmux >/dev/null 2>&1 || skip "tmux is not installed"
    [ -x "$PYTOP" ] || fail "no pytop binary at $PYTOP"
}

# A 3.13+ interpreter with the GIL, into PY; skips the test (naming why) when there is none.
need_python() {
    local candidates=() p
    [ -n "${PYTOP_TUI_PYTHON:-}" ] && candidates+=("$PYTOP_TUI_PYTHON")
    candidates+=("${PYTOP_PYTHONS_DIR:-/var/cache/pytop-pythons}/root/usr/bin/python3.15")
    local IFS=:
    for p in ${PYTOP_TEST_PYTHONS:-}; do
        candidates+=("$p")
    done
    unset IFS
    for p in "${candidates[@]}"; do
        [ -x "$p" ] || continue
        if "$p" -c 'import sys, sysconfig
ok = sys.version_info >= (3, 13) and not sysconfig.get_config_var("Py_GIL_DISABLED")
sys.exit(0 if ok else 1)' >/dev/null 2>&1; then
            PY=$p
            return 0
        fi
    done
    skip "no Python 3.13+ with the GIL (set PYTOP_TUI_PYTHON, or PYTOP_TEST_PYTHONS;" \
        "tools/get-pythons installs some)"
}

# Starts tests/tui/target.py ARGS... in the background; TARGET_PID is its PID.
start_target() {
    start_script "$TUI_DIR/target.py" "$@"
}

# Starts the Python script $1 (args after it) in the background and waits until it prints
# "pid N"; TARGET_PID is its PID.
start_script() {
    "$PY" "$@" >"$WORK/target.out" 2>&1 </dev/null &
    TARGET_PID=$!
    local i
    for i in $(seq 150); do
        grep -q '^pid ' "$WORK/target.out" 2>/dev/null && return 0
        kill -0 "$TARGET_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$WORK/target.out"
    fail "the target did not start"
}

# Runs the shell command $1 in a new tmux session (COLS x ROWS, default 120x40), in $WORK,
# under LC_ALL=${TUI_LOCALE:-C.UTF-8}; then prints PYTOP-EXIT=status and waits.
start_tui() {
    local cmd=$1
    tmux -L "$SOCK" -f /dev/null new-session -d -s t -x "${COLS:-120}" -y "${ROWS:-40}" \
        "cd '$WORK' && LC_ALL=${TUI_LOCALE:-C.UTF-8} $cmd; echo PYTOP-EXIT=\$?; sleep 600" ||
        fail "tmux could not start"
}

# Starts pytop ARGS... against nothing in particular (the caller names the target).
start_pytop() {
    start_tui "'$PYTOP' $*"
}

# True while process $1 runs (a zombie has ended: its parent, here init, reaps it at leisure).
is_running() {
    local stat
    stat=$(cat /proc/"$1"/stat 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# Ends the tmux server (and what runs in it) and waits up to 5 s for the programs the pane's
# shell ran to end (a sanitizer writes its reports before that), so that start_tui can start
# afresh.
stop_tui() {
    local shell children pid i
    shell=$(tmux -L "$SOCK" list-panes -t t -F '#{pane_pid}' 2>/dev/null)
    children=$(cat /proc/"$shell"/task/*/children 2>/dev/null)
    tmux -L "$SOCK" kill-server >/dev/null 2>&1
    for i in $(seq 100); do
        tmux -L "$SOCK" list-sessions >/dev/null 2>&1 || break
        sleep 0.05
    done
    for pid in $children; do
        for i in $(seq 100); do
            is_running "$pid" || break
            sleep 0.05
        done
    done
}

keys() {
    tmux -L "$SOCK" send-keys -t t "$@"
}

type_text() {
    tmux -L "$SOCK" send-keys -t t -l "$1"
}

# Waits until the screen shows the extended regex $1, for up to $2 seconds (default 10).
wait_for() {
    local pattern=$1 limit=${2:-10} i
    for i in $(seq $((limit * 20))); do
        screen | grep -qE -- "$pattern" && return 0
        sleep 0.05
    done
    fail "waited ${limit}s for the screen to show: $pattern"
}

# Waits until the screen no longer shows $1.
wait_gone() {
    local pattern=$1 limit=${2:-10} i
    for i in $(seq $((limit * 20))); do
        screen | grep -qE -- "$pattern" || return 0
        sleep 0.05
    done
    fail "waited ${limit}s for the screen to stop showing: $pattern"
}

shows() {
    screen | grep -qE -- "$1"
}

# Freezes the picture and dumps it with d; NAME is the file's name pytop says, FILE its path.
dump_frozen() {
    keys p
    wait_for 'FROZEN'
    keys d
    wait_for 'dumped the frozen snapshot to pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt'
    name=$(screen | grep -oE 'pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt' | head -1)
    file=$WORK/$name
    [ -f "$file" ] || fail "no file $file"
}

# The kernel thread id of the target's thread named $1 (from /proc, as top -H shows it).
tid_of() {
    local t
    for t in /proc/"$TARGET_PID"/task/*; do
        if [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ]; then
            basename "$t"
            return 0
        fi
    done
    return 1
}

# Starts the usual target and pytop -p on it, and waits for the first picture.
start_watching() {
    need_tmux
    need_python
    start_target "$@"
    start_pytop -p "$TARGET_PID" ${PYTOP_ARGS:-}
    wait_for 'alpha-spinner'
}
