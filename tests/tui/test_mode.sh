#!/bin/bash
# The sampling mode is the user's: the header says which ("mode wall"); m cycles wall, cpu,
# gil, exception (the statistics start afresh, a message says what now counts); in cpu mode the
# Functions view counts the spinner, the sleepers at most as a sliver, and its CPU% column tells the
# spinner's function (on a CPU) from the sleepers' (0) in wall mode; --mode and --active-only
# choose at start. o shows each frame's instruction; i the reader's costs in the bottom line.
. "$(dirname "$0")/lib.sh"
start_watching

wait_for 'mode wall'
keys 2
wait_for 'All threads: [0-9]+ thread-samples in [0-9]+ samples over'
wait_for 'CPU%'
# Wall mode: the sleeper's function is there, never on a CPU; the spinner's mostly on one.
cpu_of() {
    screen | grep -E " $1 " | head -1 | awk '{print $5}'
}
wait_for ' beta_wait '
sleep 1.5
[ "$(cpu_of beta_wait)" = "0" ] || fail "beta_wait's CPU% is '$(cpu_of beta_wait)', not 0"
c=$(cpu_of alpha_spin)
[ -n "$c" ] && [ "$c" != "-" ] || fail "alpha_spin's CPU% is '$c', not a share"

keys m
wait_for 'mode cpu'
wait_for 'mode cpu: the statistics count thread-samples on a CPU, from now on'
wait_for 'thread-samples on a CPU in [0-9]+ samples'
sleep 1.5
shows ' alpha_spin ' || fail "cpu mode: the spinner's function is not counted"
# The sleeper wakes every half second and is on a CPU for the moment it takes to sleep again: a
# sample may catch it (CI saw 1 in 69), so it may show, but only as a sliver beside the spinner.
own_of() {
    screen | grep -E " $1 " | head -1 | awk '{print $1}'
}
b=$(own_of beta_wait)
[ -z "$b" ] || awk -v b="$b" -v a="$(own_of alpha_spin)" 'BEGIN {exit !(b + 0 < 10 && a + 0 > 50)}' ||
    fail "cpu mode: the sleeper's function has $b % of the samples on a CPU (the spinner's: $(own_of alpha_spin) %)"

keys m
wait_for 'mode gil'
wait_for 'thread-samples holding the GIL in'
keys m
wait_for 'mode exception'
keys m
wait_for 'mode wall'
wait_for 'the statistics count all thread-samples'

# o: each frame of the stack pane shows its instruction; o again: no more.
keys 1
keys Enter
keys o
wait_for 'instructions: each frame shows the one it is at'
wait_for 'alpha_spin \[[A-Z_]+'
wait_for 'beta_wait \[CALL'
keys o
wait_for 'instructions: off'
sleep 1.5
shows ' alpha_spin \[' && fail "o off: the instruction still shows"

# i: the bottom line tells what reading costs, then the key hints again.
keys i
wait_for 'reader: [0-9.]+ reads [0-9.]+ KiB a sample  code cache [0-9.]+% hits'
keys i
wait_for 'q quit'

# The Threads view keeps every thread in every mode; --active-only says what it reads.
stop_tui
start_pytop -p "$TARGET_PID" --mode gil --active-only
wait_for 'alpha-spinner'
wait_for 'mode gil \(GIL holder only\)'
shows 'beta-sleeper' || fail "--active-only: the sleeper is no longer listed"
# The spinner's %CPU (the kernel's CPU time) runs on between its turns with the GIL, over the
# sliding window: a share of one busy thread, never lost nor piled up. It is '-' in a window
# where no sample caught the spinner holding the GIL: it holds it about a quarter of the time in
# 1.3 ms turns, and at 100 Hz a run of windows with 1-5 GIL samples each was seen, once none.
shares=0
for i in 1 2 3 4 5 6 7 8; do
    sleep 1
    # The state may be two words ("GIL CPU"): %CPU is the second of the share columns.
    c=$(screen | grep -E '^ *[0-9]+ alpha-spinner ' | head -1 |
        awk '{n = 0; for (i = 3; i <= NF; i++) if ($i ~ /^([0-9.]+|-)$/ && ++n == 2) {print $i; exit}}')
    [ "$c" = "-" ] && continue
    awk -v c="$c" 'BEGIN {exit !(c + 0 >= 1 && c + 0 <= 110)}' ||
        fail "--active-only: alpha-spinner's %CPU is '$c', not a share of a busy thread"
    shares=$((shares + 1))
done
[ "$shares" -ge 4 ] || fail "--active-only: alpha-spinner's %CPU was a share in $shares of 8 refreshes"
pass
