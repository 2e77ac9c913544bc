#!/bin/bash
# bench-live.sh: a benchmark, not a test: pytop's own CPU use while it shows a 100-thread
# target, at the default rate and at --rate 1000 (or the rates given as arguments); the time
# from a key press (tmux send-keys) to pytop's answer on the terminal (tmux pipe-pane); and the
# bytes a second it sends while nobody types. Prints one line per rate.
# Usage: tests/tui/bench-live.sh [RATE...]; BENCH_SECONDS (10), BENCH_PRESSES (20).
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
SECS=${BENCH_SECONDS:-10}
PRESSES=${BENCH_PRESSES:-20}
start_target --idle 96

# utime + stime of process $1, in clock ticks.
ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# Bytes pytop sends the terminal in SECS seconds while nobody types (what a slow link carries).
idle_bytes() {
    local out=$WORK/idle.out
    : >"$out"
    tmux -L "$SOCK" pipe-pane -t t "cat >>'$out'"
    sleep "$SECS"
    tmux -L "$SOCK" pipe-pane -t t
    stat -c %s "$out"
}

# Presses 2 and 1 in turn; prints, per press, the ms until pytop's first output byte reached
# the terminal (tmux pipe-pane), a file watched without starting processes in between.
latencies() {
    local out=$WORK/pane.out
    : >"$out"
    tmux -L "$SOCK" pipe-pane -t t "cat >>'$out'"
    sleep 0.3
    python3 - "$SOCK" "$out" "$PRESSES" <<'PY'
import os, subprocess, sys, time
sock, out, presses = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(presses):
    time.sleep(0.3)  # let a refresh pass, so the press is not mistaken for it
    size = os.stat(out).st_size
    t0 = time.monotonic()
    # From before tmux is told of the key to pytop's answer on the pty: an upper bound, as it
    # includes starting the tmux client.
    subprocess.Popen(["tmux", "-L", sock, "send-keys", "-t", "t", "2" if i % 2 == 0 else "1"])
    while os.stat(out).st_size == size and time.monotonic() - t0 < 5:
        time.sleep(0.0002)
    print("%.1f" % ((time.monotonic() - t0) * 1000))
PY
    tmux -L "$SOCK" pipe-pane -t t
}

rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(100 1000)
for rate in "${rates[@]}"; do
    [ "$rate" = 100 ] && args= || args="--rate $rate"
    start_pytop -p "$TARGET_PID" $args
    wait_for 'threads 100 ' 20
    shell=$(tmux -L "$SOCK" display -p -t t '#{pane_pid}')
    pid=$(ps -o pid= --ppid "$shell" | tr -d ' ' | head -1)
    sleep 2
    t0=$(ticks "$pid")
    sleep "$SECS"
    t1=$(ticks "$pid")
    hz=$(getconf CLK_TCK)
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$SECS" 'BEGIN { printf "%.1f", (b - a) / hz / s * 100 }')
    got=$(screen | grep -oE 'rate [0-9-]+/[^ ]+ Hz' | head -1)
    bytes=$(idle_bytes)
    stop_tui
    # Keys are timed with a 10 s refresh, so that no refresh is taken for an answer.
    start_pytop -p "$TARGET_PID" $args -d 10
    wait_for 'threads 100 ' 20
    sleep 1
    lat=$(latencies | sort -n)
    med=$(echo "$lat" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    max=$(echo "$lat" | tail -1)
    echo "rate ${rate}: pytop CPU ${cpu}% over ${SECS}s ($got); key to screen: median ${med} ms," \
        "max ${max} ms over $PRESSES presses; $((bytes / SECS)) bytes/s to the terminal"
    stop_tui
done
