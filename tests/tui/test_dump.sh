#!/bin/bash
# d writes the frozen snapshot to pytop-PID-TIME.txt in the current directory, mode 0600, never
# over an existing file, and says its name; what the screen shows is in the file.
. "$(dirname "$0")/lib.sh"
start_watching

keys p
wait_for 'FROZEN'
keys d
wait_for 'dumped the frozen snapshot to pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt'
name=$(screen | grep -oE 'pytop-[0-9]+-[0-9]{8}-[0-9]{6}\.txt' | head -1)
file=$WORK/$name
[ -f "$file" ] || fail "no file $file"
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

# A second dump of the same frozen snapshot: a new file, the first left as it was.
sum=$(md5sum <"$file")
keys d
wait_for 'dumped the frozen snapshot to pytop-[0-9]+-[0-9]{8}-[0-9]{6}-2\.txt'
[ "$(md5sum <"$file")" = "$sum" ] || fail "the first dump was overwritten"
cmp -s "$file" "${file%.txt}-2.txt" || fail "two dumps of one frozen snapshot differ"
# Unfrozen, d dumps the current picture.
keys p
wait_gone 'FROZEN'
keys d
wait_for 'dumped the current snapshot to pytop-'
[ "$(ls "$WORK"/pytop-*.txt | wc -l)" -ge 3 ] || fail "the third dump is missing"
pass
