"""Integration target `forkname`: children of fork(), one forked by the main thread and one by
another thread, each with a thread of its own started after the fork.

Usage: python forkname.py OUTFILE. OUTFILE gets {"children": [{"pid", "threads": [{"tid",
"name"}, ...]}, ...]} once both children have started their thread; each child's list is what
its own threading says of its threads (current_thread().name, the kernel's tid). A child's
forking thread keeps its Thread object, whose native_id (3.8+) before 3.13 is still the parent's
thread's: pytop must still name it. Children end when the parent does. Python 2.7, 3.6+ (before
3.8 the tid is _parking's gettid, and a Thread has no native_id to go stale).
"""
import os
import sys
import threading
import time

import _parking


def child(report):
    parent = os.getppid()
    tid = _parking.native_id()
    me = {"tid": tid, "name": threading.current_thread().name,
          "stale_native_id": getattr(threading.current_thread(), "native_id", tid) != tid}
    started = threading.Event()
    extra = {}

    def run():
        extra.update(tid=_parking.native_id(), name=threading.current_thread().name)
        started.set()
        while True:
            time.sleep(3600)

    _parking.new_thread(run, "child-extra").start()
    started.wait(60)
    _parking.write_json(report, {"pid": os.getpid(), "threads": [me, extra]})
    deadline = _parking.monotonic() + _parking.LIFETIME
    while os.getppid() == parent and _parking.monotonic() < deadline:
        time.sleep(0.2)
    os._exit(0)


def fork_into(report):
    if os.fork() == 0:
        try:
            child(report)
        finally:
            os._exit(1)


def main():
    outfile = sys.argv[1]
    reports = [outfile + ".main", outfile + ".thread"]
    fork_into(reports[0])
    forker = _parking.new_thread(fork_into, "forker", (reports[1],), daemon=False)
    forker.start()
    forker.join()
    deadline = _parking.monotonic() + 60
    while not all(os.path.exists(r) for r in reports) and _parking.monotonic() < deadline:
        time.sleep(0.05)
    children = [_parking.read_json(r) for r in reports]
    _parking.write_json(outfile, {"children": children})
    time.sleep(_parking.LIFETIME)


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads, 3.12+
    main()
