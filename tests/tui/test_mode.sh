#!/bin/bash
# The sampling mode is the user's: the header says which ("mode wall"); m cycles wall, cpu,
# gil, exception (the statistics start afresh, a message says what now counts); in cpu mode the
# Functions view counts the spinner and not the sleepers, and its CPU% column tells the
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
shows ' beta_wait ' && fail "cpu mode: the sleeper's function is counted"

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
# sliding window: a share of one busy thread, never lost nor piled up.
for i in 1 2 3 4 5; do
    sleep 1
    # The state may be two words ("GIL CPU"): %CPU is the second of the share columns.
    c=$(screen | grep -E '^ *[0-9]+ alpha-spinner ' | head -1 |
        awk '{n = 0; for (i = 3; i <= NF; i++) if ($i ~ /^([0-9.]+|-)$/ && ++n == 2) {print $i; exit}}')
    awk -v c="$c" 'BEGIN {exit !(c + 0 >= 1 && c + 0 <= 110)}' ||
        fail "--active-only: alpha-spinner's %CPU is '$c', not a share of a busy thread"
done
pass
