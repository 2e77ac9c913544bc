#!/bin/bash
# The source heat view: Enter on a function (Functions view) or on a frame (Threads view, Right
# then Enter) shows the function's source with each line's own and total share of the
# thread-samples. The sleeper's function has all its own samples on its sleeping line, which is
# selected (the hottest); the spinner's lines' own shares add up to its own share, only lines of
# its body are counted, and the hottest is selected; o unfolds each line into its instructions,
# Enter folds one; the filter keeps the lines whose text matches; freezing holds the counts; d
# writes the annotated source; Esc goes back. The same on one interpreter of each line-table
# format (3.12, 3.10, 3.8) where there is one: the sleeping line is found from the samples'
# instruction offsets as each version's line table says.
. "$(dirname "$0")/lib.sh"
start_watching

TARGET_PY=$TUI_DIR/target.py
line_of() { # the line number of the first line of target.py matching $1
    grep -nE -- "$1" "$TARGET_PY" | head -1 | cut -d: -f1
}
SLEEP_LINE=$(line_of 'beta sleeps here')
ALPHA_DEF=$(line_of '^def alpha_spin')
BETA_DEF=$(line_of '^def beta_wait')

# The heat view's rows: "MARK LINE OWN TOTAL" for each counted line ("-" mark: not selected).
heat_rows() {
    screen | sed -nE 's/^([> ]) *([0-9]+) +([0-9]+\.[0-9]) +([0-9]+\.[0-9]) .*/\1 \2 \3 \4/p' |
        sed 's/^ /-/'
}
summary_own() {
    screen | sed -nE 's/.* own ([0-9.]+)% total [0-9.]+% of [0-9]+ thread-samples.*/\1/p' | head -1
}

# Opens the source heat view of function $1 from the Functions view (the filter picks it).
open_function() {
    keys 2
    keys /
    type_text "$1"
    keys Enter
    wait_for "^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9-]+ +$1 "
    keys Enter
    wait_for "^$1  .*target.py:[0-9]+  own"
    keys c
}

# The sleeper: all its own samples on the sleeping line, which is the one selected.
check_sleeper() {
    open_function beta_wait
    wait_for "^> +$SLEEP_LINE +[0-9.]+ +[0-9.]+ .*beta sleeps here" 15
    wait_for "^ +$BETA_DEF +def beta_wait"
    sleep 1.2
    local own rows
    own=$(summary_own)
    rows=$(heat_rows)
    [ "$(printf '%s\n' "$rows" | awk -v l="$SLEEP_LINE" '$2 == l {print $3}')" = "$own" ] ||
        fail "the sleeping line's OWN% is not the function's own ($own): $rows"
    printf '%s\n' "$rows" | awk -v l="$SLEEP_LINE" '$2 != l && $3 > 0 {exit 1}' ||
        fail "another line of beta_wait has own samples: $rows"
}

check_sleeper
keys Escape
wait_for 'OWN%▼ +TOTAL%'

# The spinner: its lines' own shares add up to its own, all within its body, the hottest
# selected.
open_function alpha_spin
wait_for "^ +$ALPHA_DEF +def alpha_spin"
sleep 2.5
keys p
wait_for FROZEN
rows=$(heat_rows)
own=$(summary_own)
[ -n "$rows" ] || fail "no counted line of alpha_spin"
sum=$(printf '%s\n' "$rows" | awk '{s += $3} END {printf "%.1f", s}')
awk -v a="$sum" -v b="$own" 'BEGIN {d = a - b; exit !(d < 0.6 && d > -0.6)}' ||
    fail "alpha_spin's lines' OWN% add up to $sum, not its own $own"
printf '%s\n' "$rows" | awk -v lo="$ALPHA_DEF" -v hi="$BETA_DEF" '$2 <= lo || $2 >= hi {exit 1}' ||
    fail "a counted line lies outside alpha_spin ($ALPHA_DEF..$BETA_DEF): $rows"
hot=$(printf '%s\n' "$rows" | sort -k3,3nr -k4,4nr | head -1 | awk '{print $2}')
marked=$(printf '%s\n' "$rows" | awk '$1 == ">" {print $2}')
[ "$hot" = "$marked" ] || fail "the hottest line is $hot, the selected $marked: $rows"
# Frozen: the counts hold still.
sleep 2
[ "$(heat_rows)" = "$rows" ] || fail "the frozen counts changed"

# d: the annotated source, in a file of its own.
keys d
wait_for 'dumped the annotated source to pytop-[0-9]+-[0-9]+-[0-9]+-source.txt'
dump=$(ls "$WORK"/pytop-*-source.txt | head -1)
grep -q '^Source heat of alpha_spin ' "$dump" || fail "the dump does not name alpha_spin"
grep -qE "^ +$SLEEP_LINE +|^ +$ALPHA_DEF +.*def alpha_spin" "$dump" ||
    fail "the dump has not the function's lines: $(cat "$dump")"
grep -qE "^ +$hot +[0-9.]+ +[0-9.]+  " "$dump" || fail "the dump lacks the hot line $hot"
keys p
wait_gone FROZEN

# The filter keeps the lines whose text matches.
keys /
type_text 'range'
keys Enter
wait_for 'hides [0-9]+ of [0-9]+ lines'
screen | grep -E '^[> ] +[0-9]+ ' | grep -v 'range' && fail "a line without 'range' is shown"
keys c
wait_gone 'hides [0-9]+ of'

# o: each counted line's instructions under it; Enter folds the selected line's.
keys o
wait_for '^>? +[0-9.]+ +[0-9.]+ +@[0-9]+ +[A-Z_]+' 15
sleep 1.2
before=$(screen | grep -cE '@[0-9]+ +[A-Z_]+')
keys Enter
sleep 0.5
after=$(screen | grep -cE '@[0-9]+ +[A-Z_]+')
[ "$after" -lt "$before" ] || fail "Enter did not fold the line's instructions ($before, $after)"
keys o

# Esc: back to the Functions view; the Threads view's stack: Right, then Enter on a frame.
keys Escape
wait_for 'OWN%▼ +TOTAL%'
keys 1
wait_for 'TID▼ NAME'
keys Right
wait_for '^> main_idle '
keys Enter
wait_for '^main_idle  .*target.py:[0-9]+  own'
keys Escape
wait_for '^> main_idle '
keys Left
wait_gone '^> main_idle '

# One interpreter of each other line-table format.
stop_tui
kill "$TARGET_PID" 2>/dev/null
wait "$TARGET_PID" 2>/dev/null
TARGET_PID=
IFS=: read -r -a pythons <<<"${PYTOP_TEST_PYTHONS:-}"
for want in python3.12 python3.10 python3.8; do
    PY=
    for p in "${pythons[@]}"; do
        [ "$(basename "$p")" = "$want" ] && [ -x "$p" ] && PY=$p && break
    done
    [ -n "$PY" ] || continue
    start_target
    start_pytop -p "$TARGET_PID" --opcodes
    wait_for 'alpha-spinner'
    check_sleeper
    wait_for "^ +[0-9.]+ +[0-9.]+ +@[0-9]+ +[A-Z_]+" 10
    echo "$want: the sleeping line $SLEEP_LINE found"
    stop_tui
    kill "$TARGET_PID" 2>/dev/null
    wait "$TARGET_PID" 2>/dev/null
    TARGET_PID=
done
pass
