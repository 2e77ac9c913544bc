#!/bin/bash
# A filter found in thread names limits the Functions view to those threads' samples (all
# their functions, whatever their names), and the view and the status line say so.
. "$(dirname "$0")/lib.sh"
start_watching
tid=$(tid_of gamma-waiter) || fail "no thread gamma-waiter in /proc/$TARGET_PID/task"

keys /
type_text gamma-waiter
keys Enter
wait_for "^ +$tid +gamma-waiter "
keys 2
wait_for "^ Thread $tid gamma-waiter \(the filter names it\): [0-9]+ thread-samples"
wait_for ' gamma_block +.*target\.py:[0-9]+$'
wait_for ' Thread\.run +.*threading\.py:[0-9]+$'
shows 'no function matches the filter' && fail "the Functions view is empty"
shows ' alpha_spin ' && fail "alpha-spinner's functions are counted"
shows ' main_idle ' && fail "the main thread's functions are counted"
wait_for '^Filter: gamma-waiter  names a thread: its functions alone'

# A filter found in several names counts those threads together.
keys /
keys C-u
type_text a-s
keys Enter
wait_for '^ The 2 threads the filter names: [0-9]+ thread-samples'
wait_for ' alpha_spin +.*target\.py:[0-9]+$'
wait_for ' beta_wait +.*target\.py:[0-9]+$'
shows ' gamma_block ' && fail "gamma-waiter's functions are counted"
wait_for '^Filter: a-s  names 2 threads: their functions alone'

# A filter that names no thread still picks functions by their names.
keys /
keys C-u
type_text beta_w
keys Enter
wait_for '^ All threads: '
wait_for ' beta_wait +.*target\.py:[0-9]+$'
shows ' alpha_spin ' && fail "the function filter should leave out alpha_spin"
wait_for '^Filter: beta_w  hides [0-9]+ of [0-9]+ functions'
keys c
wait_for ' alpha_spin '
pass
