#!/bin/bash
# h and ? show every key; any key closes the help.
. "$(dirname "$0")/lib.sh"
start_watching

keys h
wait_for 'pytop keys'
for k in 'q, Ctrl-C' 'h, \?' 'Tab, 1-4' 'arrows, j/k' 'PgUp/PgDn' 'Home/End' 'Enter' 's / S' \
    '  I  ' '  t  ' 'p, Space, Z' '  /  ' 'Esc cancels; c clears' '  d  ' '  r  ' '  w  ' '\+ / -' \
    'Ctrl-L' 'Tasks: fold / unfold' 'Left / Right' 'even into folded tasks'; do
    shows "$k" || fail "the help does not list: $k"
done
keys x
wait_for 'STATE'
keys '?'
wait_for 'pytop keys'
keys q
wait_for 'STATE'
shows 'PYTOP-EXIT' && fail "q in the help should close the help, not pytop"
pass
