#!/bin/bash
# Folding a task in the middle of the Tasks tree (tasks_batches.py: main gathers two TaskGroup
# batches of three tasks and a slow-report task) hides that task's rows alone: the tasks after
# it keep their rows and tree lines, the cursor's rows all belong to a task, and unfolding
# brings the rows back.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 14) else 1)' ||
    skip "the asyncio task graph needs Python 3.14+ ($PY is older)"
start_script "$TUI_DIR/tasks_batches.py"
start_pytop -p "$TARGET_PID"
wait_for 'MainThread'
keys 4
wait_for 'Interpreter 0: 1[01] tasks'
wait_for '└── ▾ \(T\) Task-3'
wait_for '\(T\) fetch-0-2'

# Down to Task-2 (the stack pane names the task under the cursor).
for i in $(seq 30); do
    shows '── Task "Task-2"' && break
    keys j
    sleep 0.1
done
wait_for '── Task "Task-2"'
keys Enter
wait_for '├── ▸ \(T\) Task-2  \(folded: 3 tasks\)'
# What comes after Task-2 is still there, drawn as a tree; Task-2's own rows are gone.
wait_for '^ +└── ▾ \(T\) Task-3$'
wait_for '└── ▾ \(T\) fetch-1-2'
shows '\(T\) fetch-0-' && fail "folding Task-2 should hide its fetch tasks"
screen | grep -qE '^ {1,4}[A-Za-z_.]+ [a-z_]+\.py:[0-9]+$' &&
    fail "rows of Task-2's children were left behind without tree lines"
# Every row below the fold belongs to a task: the cursor there shows that task's stack.
keys j
wait_for '── Task "Task-3"'
shows 'select a task to see its coroutine stack' && fail "the row under Task-2 belongs to no task"
keys j j j
wait_for '── Task "Task-3"'
# A redraw, and later pictures, keep it so.
keys C-l
sleep 2.5
wait_for '├── ▸ \(T\) Task-2  \(folded: 3 tasks\)'
wait_for '└── ▾ \(T\) fetch-1-2'
# Unfolding brings Task-2's tasks back.
for i in $(seq 30); do
    shows '── Task "Task-2"' && break
    keys k
    sleep 0.1
done
keys Enter
wait_for '├── ▾ \(T\) Task-2'
wait_for '\(T\) fetch-0-0'
wait_for '└── ▾ \(T\) Task-3'
pass
