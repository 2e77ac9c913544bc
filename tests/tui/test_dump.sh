#!/bin/bash
# d writes the frozen snapshot to pytop-PID-TIME.txt in the current directory, mode 0600, never
# over an existing file, and says its name; what the screen shows is in the file, below what an
# incident report needs: the command line and start of the target, pytop's settings, and the
# statistics of the window (per thread %GIL %CPU %GC, functions by own and total samples).
. "$(dirname "$0")/lib.sh"
start_watching

dump_frozen
mode=$(stat -c %a "$file")
[ "$mode" = 600 ] || fail "$name has mode $mode, not 600"
case $name in
    pytop-$TARGET_PID-*) ;;
    *) fail "$name does not name the PID $TARGET_PID" ;;
esac
# Every thread id and current function on the screen is in the file.
screen | grep -E '^[ *] *[0-9]{2,} ' >"$WORK/rows"
[ -s "$WORK/rows" ] || fail "no thread rows on the screen"
while read -r tid thread rest; do
    grep -q "^Thread $tid \"$thread\"" "$file" || fail "thread $tid $thread is not in $name"
done < <(sed 's/^[ *]*//' "$WORK/rows")
for fn in $(screen | grep -E '^[ *] *[0-9]{2,} ' | grep -oE '(alpha_spin|beta_wait|gamma_block|main_idle) '); do
    grep -q "in $fn\$" "$file" || fail "function $fn is not in the dump"
done
grep -q "^Process $TARGET_PID: Python 3\." "$file" || fail "the dump has no header"

# The report's head, in this order, before the first thread.
line_of() {
    grep -nE -m1 -- "$1" "$file" | cut -d: -f1
}
prev=0
for pattern in "^Process $TARGET_PID: " "^Command: .*$PY .*/target\.py\$" \
    '^Started: [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC \(up [0-9]+:[0-9]{2}:[0-9]{2}\)$' \
    '^Taken at ' \
    '^Dumped by: pytop [^ ]+ --rate 100 --window 1 --delay 1 \(live view, d on the frozen picture\)$' \
    '^Statistics over the window \(1 s\):$' '^Samples: [1-9][0-9]* in ' \
    '^ +TID +%GIL +%CPU +%GC +SAMPLES +NAME$' '^Functions: [0-9]+ of [0-9]+, by own samples' \
    '^ +OWN% +TOTAL% +OWN +TOTAL +CPU% +FUNCTION$' '^Thread [0-9]+ '; do
    at=$(line_of "$pattern")
    [ -n "$at" ] || fail "the dump has no line like: $pattern"
    [ "$at" -gt "$prev" ] || fail "'$pattern' (line $at) comes before what should precede it"
    prev=$at
done
# The started time is the target's, to the second (ps's view of it).
want=$(date -u -d "@$(($(date +%s) - $(ps -o etimes= -p "$TARGET_PID")))" '+%Y-%m-%d %H:%M:%S')
got=$(grep -m1 '^Started: ' "$file" | cut -c10-28)
diff_s=$(($(date -u -d "$got" +%s) - $(date -u -d "$want" +%s)))
[ "${diff_s#-}" -le 2 ] || fail "Started: $got, but ps says $want"
# Every thread on the screen has its statistics row, and the spinner's function is counted.
for tid in $(sed 's/^[ *]*//' "$WORK/rows" | cut -d' ' -f1); do
    grep -qE "^ +$tid +[0-9.?]+ +[0-9.?]+ +[0-9.?]+ +[0-9]+ " "$file" ||
        fail "thread $tid has no statistics row in $name"
done
grep -qE '^ +[0-9.]+ +[0-9.]+ +[1-9][0-9]* +[0-9]+ +([0-9]+|-)  alpha_spin \(.*target\.py:[0-9]+\)$' \
    "$file" ||
    fail "alpha_spin is not in the dump's functions table"

# A second dump of the same frozen snapshot: a new file, the first left as it was.
sum=$(md5sum <"$file")
keys d
wait_for 'dumped the frozen snapshot to pytop-[0-9]+-[0-9]{8}-[0-9]{6}-2\.txt'
[ "$(md5sum <"$file")" = "$sum" ] || fail "the first dump was overwritten"
cmp -s "$file" "${file%.txt}-2.txt" || fail "two dumps of one frozen snapshot differ"
# Unfrozen, d dumps the current picture; over the window w chose, which it names.
keys p
wait_gone 'FROZEN'
keys w
wait_for 'window 10s'
sleep 2
keys d
wait_for 'dumped the current snapshot to pytop-'
[ "$(ls "$WORK"/pytop-*.txt | wc -l)" -ge 3 ] || fail "the third dump is missing"
third=$(ls -t "$WORK"/pytop-*.txt | head -1)
grep -qE '^Dumped by: pytop [^ ]+ --rate 100 --window 10 --delay 1 \(live view, d\)$' "$third" ||
    fail "the third dump does not name the 10 s window: $(grep '^Dumped by' "$third")"
grep -q '^Statistics over the window (10 s):$' "$third" || fail "the third dump's window is not 10 s"
# What the 1 s window held stayed, and 2 s more came: the statistics reach back beyond 1 s.
grep -qE '^Samples: [0-9]+ in ([2-9]|10)\.[0-9]+ s, ' "$third" ||
    fail "the 10 s window covers no more than a second: $(grep '^Samples' "$third")"
pass
