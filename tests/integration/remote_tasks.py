"""Prints, as one JSON document, CPython's own view of a process's asyncio tasks.

Usage: python3.14+ remote_tasks.py PID. Run with the target's own interpreter: it is the oracle
run-integration's `tasks` scenario compares pytop with. Output: a list, one entry per task list
_remote_debugging.RemoteUnwinder(PID).get_all_awaited_by() read (each thread's, then the
interpreter's with thread 0): {"thread": int, "tasks": [{"id", "name", "coroutine_stack":
[frame], "awaited_by": [{"task": int, "coroutine_stack": [frame]}]}]}, frames innermost first
as {"function", "file", "line"}.
"""
import json
import sys

import _remote_debugging


def frame(f):
    location = getattr(f, "location", None)
    line = getattr(location, "lineno", None) if location is not None else None
    if line is None:
        line = getattr(f, "lineno", None)
    if line is None and isinstance(location, int):
        line = location
    return {"function": f.funcname, "file": f.filename, "line": line}


def coro(c):
    return {"task": c.task_name, "coroutine_stack": [frame(f) for f in c.call_stack]}


def main():
    unwinder = _remote_debugging.RemoteUnwinder(int(sys.argv[1]))
    out = []
    for info in unwinder.get_all_awaited_by():
        tasks = []
        for t in info.awaited_by:
            stack = []
            for c in t.coroutine_stack:
                stack += [frame(f) for f in c.call_stack]
            tasks.append({"id": t.task_id, "name": t.task_name, "coroutine_stack": stack,
                          "awaited_by": [coro(c) for c in t.awaited_by]})
        out.append({"thread": info.thread_id, "tasks": tasks})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
