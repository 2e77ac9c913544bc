"""Integration target `gc`: known garbage-collector activity (Python 3.6+).

Usage: python gcstate.py OUTFILE. Phase 1: sets the thresholds to (1234, 17, 9), makes reference
cycles and forces collections of every generation, turns automatic collection off (so that
nothing changes the numbers while pytop looks), writes OUTFILE with what the gc module says of
itself (get_threshold, get_count, get_stats, isenabled) and OUTFILE.count with get_count() taken
again after that write, then waits for SIGUSR1. Phase 2: a thread named "collector" calls
gc.collect() on a cycle whose finalizer writes OUTFILE.phase2 ({"collector": its kernel tid})
and then spins, so the collection never ends, until the process is killed (or LIFETIME ends).
"""
import gc
import json
import os
import signal
import sys
import threading
import time

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
OUTFILE = sys.argv[1]
go = threading.Event()


class Node:
    def __init__(self):
        self.me = self


def make_cycles(n):
    for _ in range(n):
        Node()


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


class Spinner:
    """Finalized inside the collection: reports, then keeps the collector busy."""

    def __init__(self):
        self.me = self

    def __del__(self):
        write_json(OUTFILE + ".phase2", {"collector": threading.get_native_id()
                                         if hasattr(threading, "get_native_id") else None})
        deadline = time.time() + LIFETIME
        while time.time() < deadline:
            pass


def collect_now():
    Spinner()
    gc.collect()


def phase1():
    gc.set_threshold(1234, 17, 9)
    for generation in (0, 1, 2, 0, 0, 1):
        make_cycles(50)
        gc.collect(generation)
    gc.disable()
    write_json(OUTFILE, {"pid": os.getpid(), "threshold": list(gc.get_threshold()),
                         "count": list(gc.get_count()), "stats": gc.get_stats(),
                         "enabled": gc.isenabled()})
    # The write above allocated and freed objects: the count as it stands now, written without
    # making a new container (a bytes object is not tracked by the GC).
    count = gc.get_count()
    fd = os.open(OUTFILE + ".count.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"%d %d %d" % count)
    os.close(fd)
    os.rename(OUTFILE + ".count.tmp", OUTFILE + ".count")


def main():
    signal.signal(signal.SIGUSR1, lambda signum, frame: go.set())
    phase1()
    while not go.is_set():
        signal.pause()
    collector = threading.Thread(target=collect_now, name="collector", daemon=True)
    collector.start()
    time.sleep(LIFETIME)


main()
