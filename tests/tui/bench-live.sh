#!/bin/bash
# bench-live.sh: a benchmark, not a test: pytop's own CPU use while it shows a 100-thread
# target, at the default rate and at --rate 1000 (or the rates given as arguments), and the
# time from a key press to the screen showing its effect (tmux send-keys, then capture-pane
# polled). Prints one line per rate. Usage: tests/tui/bench-live.sh [RATE...]
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
    subprocess.run(["tmux", "-L", sock, "send-keys", "-t", "t", "2" if i % 2 == 0 else "1"])
    t_sent = time.monotonic()
    while os.stat(out).st_size == size and time.monotonic() - t0 < 5:
        time.sleep(0.0005)
    # From the moment tmux had the key (send-keys returned) to pytop's answer on the pty.
    print("%.1f" % ((time.monotonic() - t_sent) * 1000))
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
    lat=$(latencies | sort -n)
    med=$(echo "$lat" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    max=$(echo "$lat" | tail -1)
    echo "rate ${rate}: pytop CPU ${cpu}% over ${SECS}s ($got); key to screen: median ${med} ms, max ${max} ms over $PRESSES presses"
    stop_tui
done
