#!/bin/bash
# What each thread waits for: the header says DEADLOCK naming the cycle; the WAIT column says
# which RLock (by the waiting frame's variable, other) each deadlocked worker waits for and who
# holds it, the reader's
# recvfrom with the socket's endpoints (as the target says them), the main thread's sleep with
# the time left; the stack pane's head line gives the whole wait (address, owner's tid), and
# the waits age across refreshes; d writes the Deadlock section and a Waiting for: line a thread.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
COLS=160
start_script "$TUI_DIR/deadlock.py"
endpoints=$(sed -n 's/^endpoints //p' "$WORK/target.out")
start_pytop -p "$TARGET_PID"
wait_for 'DEADLOCK web-1 -> web-2 -> web-1'
wait_for ' web-1 .*RLock \(other\) held by web-2'
wait_for ' web-2 .*RLock \(other\) held by web-1'
wait_for " reader .*recvfrom socket TCP $endpoints"
wait_for ' MainThread .*sleep, 3[0-9]{3}\.[0-9] s left'
# The rows are by tid: MainThread, web-1, web-2, reader. The stack pane of web-1.
keys j
web1=$(tid_of web-1 || true)
wait_for "Waiting for: RLock 0x[0-9a-f]+ \\(other\\) held by web-2 \\([0-9]+\\)"
# Seen again at each refresh: the wait's age grows.
wait_for ' web-1 .*held by web-2, for [2-9]\.[0-9] s'
# Sorted by WAIT: the deadlocked threads come first, the sleeping main thread after the reader.
keys s s s s s s
wait_for ' WAIT[▲▼^v] '
rows=$(screen | grep -E '^[ *] *[0-9]{2,} ' | awk '{print $2}' | tr '\n' ' ')
case $rows in
    "web-1 web-2 reader MainThread "|"web-2 web-1 reader MainThread ") ;;
    *) fail "by WAIT the rows are '$rows', not the deadlocked web-1 and web-2 first" ;;
esac
dump_frozen
grep -q '^Deadlock: 2 threads wait for locks the next one holds:$' "$file" ||
    fail "$name has no Deadlock section"
grep -qE '^  Thread [0-9]+ "web-1" waits for 0x[0-9a-f]+ \(other\), held by Thread [0-9]+ "web-2"$' "$file" ||
    fail "$name's Deadlock section does not name web-1's wait"
grep -qE '^  Waiting for: recvfrom fd [0-9]+: socket TCP '"$endpoints"', for [0-9.]+ s$' "$file" ||
    fail "$name has no Waiting for: line for the reader"
[ -n "$web1" ] && { grep -qE "^Thread $web1 \"web-1\"" "$file" || fail "web-1 ($web1) is not in $name"; }
pass
