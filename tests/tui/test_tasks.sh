#!/bin/bash
# The Tasks view draws the target's asyncio awaited-by tree (3.14+), the filter narrows it, and
# d writes it into the dump.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 14) else 1)' ||
    skip "the asyncio task graph needs Python 3.14+ ($PY is older)"

cat >"$WORK/tree.py" <<'PY'
import asyncio, os, sys

async def leaf_a():
    await asyncio.sleep(3600)

async def leaf_b():
    await asyncio.sleep(3600)

async def root():
    a = asyncio.create_task(leaf_a(), name="child-a")
    b = asyncio.create_task(leaf_b(), name="child-b")
    await asyncio.sleep(0)
    print("pid %d" % os.getpid(), flush=True)
    await asyncio.gather(a, b)

asyncio.run(root())
PY
"$PY" "$WORK/tree.py" >"$WORK/target.out" 2>&1 </dev/null &
TARGET_PID=$!
for i in $(seq 150); do
    grep -q '^pid ' "$WORK/target.out" 2>/dev/null && break
    sleep 0.1
done
grep -q '^pid ' "$WORK/target.out" || fail "the asyncio target did not start"

start_pytop -p "$TARGET_PID"
wait_for 'MainThread'
keys 4
wait_for 'Interpreter 0: 3 tasks'
wait_for '\(T\) Task-1'
wait_for '\(T\) child-a'
wait_for '\(T\) child-b'
wait_for 'leaf_a .*tree\.py:[0-9]+'
keys /
type_text child-a
keys Enter
wait_for '\(T\) child-a'
wait_gone '\(T\) child-b'
keys c
wait_for '\(T\) child-b'
# d writes the task tree into the dump too.
keys d
wait_for 'dumped the current snapshot to pytop-'
file=$(ls "$WORK"/pytop-"$TARGET_PID"-*.txt 2>/dev/null | head -n 1)
[ -n "$file" ] || fail "no dump file in $WORK"
grep -q '(T) child-a' "$file" || fail "the dump has no task tree: $(cat "$file")"
grep -qE 'leaf_b .*tree\.py:[0-9]+' "$file" || fail "the dump has no stack of leaf_b"
pass
