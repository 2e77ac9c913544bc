"""Integration target `gc`: known garbage-collector activity (Python 2.7, 3.6+).

Usage: python gcstate.py OUTFILE. Phase 1: sets the thresholds to (1234, 17, 9), makes reference
cycles and forces collections of every generation, turns automatic collection off (so that
nothing changes the numbers while pytop looks), writes OUTFILE with what the gc module says of
itself (get_threshold, get_count, get_stats, isenabled) and OUTFILE.count with get_count() taken
again after that write, then waits for SIGUSR1. Phase 2: a thread named "collector" calls
gc.collect() on a cycle whose finalizer writes OUTFILE.phase2 ({"collector": its kernel tid})
and then spins, so the collection never ends, until the process is killed (or LIFETIME ends).

2.7 keeps no statistics (no gc.get_stats()): its "stats" give each generation's collections,
collected and uncollectable as null, which is what pytop must say of them. Before 3.4 a cycle
with a __del__ is never collected (it goes to gc.garbage), so the finalizer is an object the GC
does not track (no __dict__), held by a cycle: freed, and finalized, as the collection clears
that cycle.
"""
import gc
import os
import signal
import sys
import threading
import time

import _parking
from _parking import LIFETIME

OUTFILE = sys.argv[1]
go = threading.Event()
collector_tid = []


class Node(object):
    def __init__(self):
        self.me = self


def make_cycles(n):
    for _ in range(n):
        Node()


class Spinner(object):
    """Finalized inside the collection: reports, then keeps the collector busy."""

    # No __dict__: 2.7 (and up to 3.11) does not track it. 3.12+ does; PEP 442 (3.4+)
    # finalizes it inside the collection all the same.
    __slots__ = ()

    def __del__(self):
        _parking.write_json(OUTFILE + ".phase2", {"collector": collector_tid[0]})
        deadline = time.time() + LIFETIME
        while time.time() < deadline:
            pass


def collect_now():
    collector_tid.append(_parking.native_id())
    holder = Node()
    holder.spinner = Spinner()
    del holder
    gc.collect()


def phase1():
    gc.set_threshold(1234, 17, 9)
    for generation in (0, 1, 2, 0, 0, 1):
        make_cycles(50)
        gc.collect(generation)
    gc.disable()
    if hasattr(gc, "get_stats"):
        stats = gc.get_stats()
    else:  # 2.7
        stats = [{"collections": None, "collected": None, "uncollectable": None}
                 for _ in gc.get_threshold()]
    _parking.write_json(OUTFILE, {"pid": os.getpid(), "threshold": list(gc.get_threshold()),
                                  "count": list(gc.get_count()), "stats": stats,
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
    collector = _parking.new_thread(collect_now, "collector")
    collector.start()
    time.sleep(LIFETIME)


main()
