#!/bin/bash
# At 80x24 what matters stays whole: the header's thread count, GIL holder and share in GC,
# FROZEN, the state words, thread names (the name column grows to the longest that fits), and
# an active filter; nothing is drawn past the 80th column.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
start_script "$TUI_DIR/gil_holder.py"
COLS=80 ROWS=24 start_pytop -p "$TARGET_PID"
holder=$(tid_of billing-reconc) || fail "no thread billing-reconc in /proc/$TARGET_PID/task"
exporter=$(tid_of billing-export) || fail "no thread billing-export in /proc/$TARGET_PID/task"

wait_for "threads 3  GIL: billing-reconciler-main \($holder\)  in GC: [0-9]+%$"
# The longest name may be cut at 80 columns (the function keeps its share), but well past the
# 13 characters the name column used to hold.
wait_for "^ +$holder billing-reconciler-?[a-z]*(…)? +GIL +[0-9.]+ "
wait_for "^ +$exporter billing-exporter-2 +wait GIL +[0-9.]+ "
wait_for "^ +$TARGET_PID MainThread +(CPU )?wait GIL +[0-9.]+ "
wait_for 'rate [0-9]+/100 Hz  mode wall  failed [0-9.]+%'
keys p
wait_for "^pytop  PID $TARGET_PID .* FROZEN$"
wait_for "GIL: billing-reconciler-main \($holder\)  in GC: [0-9]+%$"
keys /
type_text reconciler
keys Enter
wait_for '^Filter: reconciler  hides 2 of 3 threads  \(c clears it\)$'
wait_gone 'billing-exporter-2'
lines=$(screen | wc -l)
[ "$lines" -le 24 ] || fail "drew $lines lines in a 24-line terminal"
while IFS= read -r line; do
    [ "$(LC_ALL=C.UTF-8 bash -c 'printf %s "${#1}"' _ "$line")" -le 80 ] ||
        fail "a line is wider than 80: $line"
done < <(screen)
# The stack's title row ends at the edge: its rule does not run on into the next row.
screen | grep -qE '^  [A-Za-z_]+  .*─+$' && fail "a title's rule ran on into the frame below"
keys c p
# Wider, the header has room for everything again.
tmux -L "$SOCK" resize-window -t t -x 120 -y 30
wait_for "^Python 3\.[0-9]+\.[0-9]+ \(release, GIL\)  up [0-9:]+  threads 3  GIL: billing-reconciler-main \($holder\)  in GC: [0-9]+%$"
wait_for 'refresh 1s  window 1s$'
wait_for "^ +$holder billing-reconciler-main +GIL +[0-9.]+ "
pass
