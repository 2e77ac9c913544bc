"""Integration target `forkname`: children of fork(), one forked by the main thread and one by
another thread, each with a thread of its own started after the fork.

Usage: python forkname.py OUTFILE. OUTFILE gets {"children": [{"pid", "threads": [{"tid",
"name"}, ...]}, ...]} once both children have started their thread; each child's list is what
its own threading says of its threads (current_thread().name, get_native_id()). A child's
forking thread keeps its Thread object, whose native_id before 3.13 is still the parent's
thread's: pytop must still name it. Children end when the parent does. Python 3.8+.
"""
import json
import os
import sys
import threading
import time

import _parking


def child(report):
    parent = os.getppid()
    me = {"tid": threading.get_native_id(), "name": threading.current_thread().name,
          "stale_native_id": threading.current_thread().native_id != threading.get_native_id()}
    started = threading.Event()
    extra = {}

    def run():
        extra.update(tid=threading.get_native_id(), name=threading.current_thread().name)
        started.set()
        while True:
            time.sleep(3600)

    threading.Thread(target=run, name="child-extra", daemon=True).start()
    started.wait(60)
    with open(report + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"pid": os.getpid(), "threads": [me, extra]}, f)
    os.rename(report + ".tmp", report)
    deadline = time.monotonic() + _parking.LIFETIME
    while os.getppid() == parent and time.monotonic() < deadline:
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
    forker = threading.Thread(target=fork_into, args=(reports[1],), name="forker")
    forker.start()
    forker.join()
    deadline = time.monotonic() + 60
    while not all(os.path.exists(r) for r in reports) and time.monotonic() < deadline:
        time.sleep(0.05)
    children = []
    for r in reports:
        with open(r, encoding="utf-8") as f:
            children.append(json.load(f))
    write(outfile, {"children": children})
    time.sleep(_parking.LIFETIME)


def write(path, obj):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads, 3.12+
    main()
