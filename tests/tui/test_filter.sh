#!/bin/bash
# / filters as you type (thread name, function, file); Esc cancels, Enter keeps, c clears.
. "$(dirname "$0")/lib.sh"
start_watching

keys /
wait_for 'Filter: .*Enter keeps, Esc cancels'
type_text 'bet'
wait_gone 'alpha-spinner'
wait_for 'beta-sleeper'
shows 'gamma-waiter' && fail "the filter should leave out gamma-waiter"
keys Escape
wait_for 'alpha-spinner'
wait_for 'gamma-waiter'

# By function name, kept with Enter; the Functions view is narrowed too.
keys /
type_text 'gamma_bl'
wait_gone 'beta-sleeper'
keys Enter
wait_for 'Filter: gamma_bl'
wait_for 'gamma-waiter'
# A row of the Threads view (TID, then name): the header names the GIL holder whatever the
# filter, and alpha-spinner holds it much of the time.
shows '^ *[0-9]+ +alpha-spinner' && fail "the kept filter should leave out alpha-spinner"
keys 2
wait_for 'gamma_block '
shows 'alpha_spin ' && fail "the Functions view should be filtered too"
keys 1
# Backspace while typing widens it again.
keys /
keys BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace
wait_for 'alpha-spinner'
keys Escape
wait_gone 'alpha-spinner'
keys c
wait_for 'alpha-spinner'
wait_for 'beta-sleeper'
pass
