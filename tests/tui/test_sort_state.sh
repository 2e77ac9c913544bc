#!/bin/bash
# s reaches every column of the Threads view, STATE included: by state the GIL holder comes
# first, then the threads waiting for the GIL; I turns it round. In the Functions view the
# times carry the sort marker with their shares.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
start_script "$TUI_DIR/gil_holder.py"
start_pytop -p "$TARGET_PID"
wait_for 'billing-recon[^ ]* +GIL '
wait_for 'TID[▼v] NAME'
keys s
wait_for ' NAME[▼v] '
keys s
wait_for ' STATE[▼v] '
first=$(screen | grep -E '^[ *] *[0-9]{2,} ' | head -1)
case $first in
    *billing-recon*GIL*) ;;
    *) fail "by state the GIL holder should come first, not: $first" ;;
esac
keys I
wait_for ' STATE[▲^] '
last=$(screen | grep -E '^[ *] *[0-9]{2,} ' | tail -1)
case $last in
    *billing-recon*GIL*) ;;
    *) fail "inverted, the GIL holder should come last, not: $last" ;;
esac
keys s
wait_for '%GIL[▲^] '
keys s s s
wait_for ' WAIT[▲▼^v] '
# By wait: the longest waits of each kind first, a deadlocked thread before all.
keys s
wait_for ' FUNCTION[▲^]'
keys s
wait_for ' TID[▲^] '
# The Functions view: own % and own s sort together.
keys 2
wait_for 'OWN%[▼v] +TOTAL% +OWN s[▼v] +TOTAL s '
keys s
wait_for 'OWN% +TOTAL%[▼v] +OWN s +TOTAL s[▼v] '
pass
