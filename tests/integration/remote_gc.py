"""Prints, as one JSON document, CPython's own remote view of a process's garbage collector.

Usage: python3.15+ remote_gc.py stats PID | stacks PID. Run with the target's own interpreter:
it is the oracle run-integration's `gc` scenario compares pytop with.
  stats:  _remote_debugging.get_gc_stats(PID): every record slot of the main interpreter, as
          {"gen", "ts_start", "ts_stop", "collections", "collected", "uncollectable",
          "candidates", "heap_size", "duration"}.
  stacks: RemoteUnwinder(PID, all_threads=True, gc=True).get_stack_trace(): per thread
          {"thread": tid, "frames": [function, ...]} innermost first, "<GC>" where the
          collector runs.
"""
import json
import sys

import _remote_debugging

FIELDS = ("gen", "ts_start", "ts_stop", "collections", "collected", "uncollectable",
          "candidates", "heap_size", "duration")


def main():
    what, pid = sys.argv[1], int(sys.argv[2])
    if what == "stats":
        doc = [{k: getattr(r, k) for k in FIELDS} for r in _remote_debugging.get_gc_stats(pid)]
    else:
        unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True, gc=True)
        doc = [{"thread": t.thread_id, "frames": [f.funcname for f in t.frame_info]}
               for interp in unwinder.get_stack_trace() for t in interp.threads]
    json.dump(doc, sys.stdout)


main()
