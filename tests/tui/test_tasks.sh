#!/bin/bash
# The Tasks view draws the target's asyncio awaited-by tree (3.14+): Enter folds a task and
# unfolds it, the folding outlives refreshes, the selected task's coroutine stack is shown below
# it (most recent call first, with its awaiter), the filter narrows the tree even into folded
# tasks, and d writes the tree into the dump, frozen or not, and after the target has exited.
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
# The row order of two patterns on the screen: succeeds when $1 is above $2.
above() {
    local a b
    a=$(screen | grep -nE -- "$1" | head -n 1 | cut -d: -f1)
    b=$(screen | grep -nE -- "$2" | head -n 1 | cut -d: -f1)
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]
}

# The cursor starts on the first task; its stack is below the tree.
wait_for '── Task "Task-1" 0x[0-9a-f]+ \(pending; thread [0-9]+ "MainThread"; most recent call first\)'
wait_for '^  awaited by: no task'
wait_for '^  root  .*/tree\.py:[0-9]+$'
# Enter folds it: its children go, and stay gone over refreshes; Enter again brings them back.
keys Enter
wait_for '▸ \(T\) Task-1  \(folded: 2 tasks\)'
wait_gone '\(T\) child-a'
shows '\(T\) child-b' && fail "folding Task-1 should hide child-b"
shows 'leaf_a' && fail "folding Task-1 should hide its frames"
sleep 2.5
shows '\(T\) child-a' && fail "Task-1 unfolded itself on a refresh"
wait_for '▸ \(T\) Task-1'
keys Enter
wait_for '▾ \(T\) Task-1'
wait_for '├── ▾ \(T\) child-a'
wait_for '└── ▾ \(T\) child-b'
# Down to child-a: its coroutine stack, innermost first, and who awaits it.
keys j j
wait_for '── Task "child-a" 0x[0-9a-f]+ \(pending; thread [0-9]+ "MainThread"; most recent call first\)'
wait_for '^  awaited by: Task-1 0x[0-9a-f]+ in root .*tree\.py:[0-9]+'
wait_for '^  leaf_a  .*/tree\.py:4$'
wait_for '^  sleep  .*/asyncio/tasks\.py:[0-9]+$'
above '^  sleep  ' '^  leaf_a  ' || fail "the stack should list the innermost frame (sleep) first"
# Left folds the task under the cursor; on a folded task it goes up to the awaiting one.
keys Left
wait_for '├── ▸ \(T\) child-a  \(folded\)'
wait_gone '^ +│ +└── +leaf_a'
keys Left
wait_for '── Task "Task-1"'
keys Right
wait_for '── Task "Task-1"'
keys j j Right
wait_for '├── ▾ \(T\) child-a'
wait_for '│   └──   leaf_a tree\.py:4'
# A match inside a folded task is still found: the filter opens the way to it.
keys k k Enter
wait_gone '\(T\) child-a'
keys /
type_text child-a
keys Enter
wait_for '\(T\) child-a'
wait_gone '\(T\) child-b'
keys c
wait_for '▸ \(T\) Task-1  \(folded: 2 tasks\)'
wait_gone '\(T\) child-b'
keys Enter
wait_for '\(T\) child-b'
keys /
type_text no-such-task
wait_for 'no task matches the filter'
wait_gone '\(T\) Task-1'
keys Escape
wait_for '\(T\) Task-1'

# A frozen picture keeps its tree (and d writes it) however many refreshes go by.
check_dump() {
    local file
    file=$(ls -t "$WORK"/pytop-"$TARGET_PID"-*.txt 2>/dev/null | head -n 1)
    [ -n "$file" ] || fail "no dump file in $WORK"
    grep -q '└── (T) Task-1' "$file" || fail "the dump has no task tree: $(cat "$file")"
    grep -q '(T) child-a' "$file" || fail "the dump has no child-a: $(cat "$file")"
    grep -qE 'leaf_b .*tree\.py:[0-9]+' "$file" || fail "the dump has no stack of leaf_b"
    rm -f "$file"
}
keys d
wait_for 'dumped the current snapshot to pytop-'
check_dump
keys p
wait_for 'FROZEN'
sleep 2.5
wait_for '\(T\) child-b'
keys d
wait_for 'dumped the frozen snapshot to pytop-'
check_dump
keys p
wait_gone 'FROZEN'
# Once the target has exited, the last tree stays, and can still be dumped.
kill "$TARGET_PID"
wait "$TARGET_PID" 2>/dev/null
wait_for 'EXITED'
sleep 1.5
wait_for '\(T\) child-a'
wait_for '── Task "Task-1"'
keys d
wait_for 'dumped the current snapshot to pytop-'
check_dump
TARGET_PID=
pass
