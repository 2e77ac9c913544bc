#!/bin/bash
# bench-heat.sh: a benchmark, not a test: what the source heat view costs. One pytop at --rate
# 1000 (or $1) on a 100-thread target, its CPU use measured in turn with the Functions view
# shown, with the source heat view of the spinner's function open, the same with instructions
# (o), and the Functions view again: one run, so the phases share the machine's noise.
# Usage: tests/tui/bench-heat.sh [RATE]; BENCH_SECONDS (10).
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
SECS=${BENCH_SECONDS:-10}
RATE=${1:-1000}
start_target --idle 96

ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# pytop's CPU use over SECS, in % of a core.
measure() {
    local t0 t1
    sleep 1
    t0=$(ticks "$pid")
    sleep "$SECS"
    t1=$(ticks "$pid")
    awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" -v s="$SECS" \
        'BEGIN { printf "%.1f", (b - a) / hz / s * 100 }'
}

start_pytop -p "$TARGET_PID" --rate "$RATE"
wait_for 'threads 100 ' 20
shell=$(tmux -L "$SOCK" display -p -t t '#{pane_pid}')
pid=$(ps -o pid= --ppid "$shell" | tr -d ' ' | head -1)
keys 2
wait_for ' alpha_spin '
closed=$(measure)
keys /
type_text alpha_spin
keys Enter
wait_for '^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9-]+ +alpha_spin '
keys Enter
keys c
wait_for '^alpha_spin  .*own'
open=$(measure)
keys o
wait_for '@[0-9]+ +[A-Z_]+' 15
instr=$(measure)
keys o
keys Escape
wait_for 'OWN%▼'
again=$(measure)
got=$(screen | grep -oE 'rate [0-9-]+/[^ ]+ Hz' | head -1)
echo "rate $RATE, 100 threads ($got): pytop CPU over ${SECS}s: Functions view ${closed}%," \
    "source heat view ${open}%, with instructions ${instr}%, Functions view again ${again}%"
stop_tui
