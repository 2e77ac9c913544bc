"""Integration target `gcwait`: a collection whose finalizer waits while other threads run Python
(Python 2.7, 3.6+).

Usage: python gcwait.py OUTFILE. Starts a thread "collector" and two threads "worker-1" and
"worker-2", all parked (blocked, not asking for the GIL), turns automatic collection off and
writes OUTFILE ({"pid", "collector", "workers": [kernel tids]}); then waits for SIGUSR1. Then:
the collector spins for QUIET seconds holding the GIL (nobody else wants it), calls
gc.collect() on a cycle whose finalizer writes OUTFILE.phase2 ({"time"}), spins QUIET seconds
more, lets the workers loose (they spin in Python, taking the GIL in turns), writes
OUTFILE.waiting ({"time"}) and then waits, with the GIL released, for ever: on a lock the main
thread holds, in time.sleep, and in a blocking read of a pipe that worker-1 writes a byte to
when asked, in turn. The collection never ends (until the process is killed or LIFETIME ends).

2.7's Lock.acquire() takes no timeout: there the wait for the held lock is tries 10 ms apart
(time.sleep between them). Before 3.4 a cycle with a __del__ is never collected: the finalizer
is an object the GC does not track, held by a cycle (as in gcstate.py).
"""
import gc
import os
import signal
import sys
import threading
import time

import _parking
from _parking import LIFETIME

QUIET = 1.0
OUTFILE = sys.argv[1]
go = threading.Event()
work = threading.Event()
held = threading.Lock()  # the main thread holds it for good
want_byte = threading.Event()
read_fd, write_fd = os.pipe()
tids = {}


def wait_for_held(seconds):
    """Waits SECONDS for `held`, which the main thread never releases, with the GIL released."""
    if not _parking.PY2:
        held.acquire(timeout=seconds)
        return
    deadline = time.time() + seconds
    while time.time() < deadline and not held.acquire(False):
        time.sleep(0.01)


class Node(object):
    def __init__(self):
        self.me = self


def spin(seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        pass


class Waiter(object):
    """Finalized inside the collection: reports, keeps the GIL a while, then waits for ever."""

    __slots__ = ()  # no __dict__: not tracked by 2.7's GC (see gcstate.py)

    def __del__(self):
        _parking.write_json(OUTFILE + ".phase2", {"time": time.time()})
        spin(QUIET)
        work.set()
        _parking.write_json(OUTFILE + ".waiting", {"time": time.time()})
        deadline = time.time() + LIFETIME
        while time.time() < deadline:
            wait_for_held(0.7)
            time.sleep(0.7)
            want_byte.set()
            os.read(read_fd, 1)


def collector():
    tids["collector"] = _parking.native_id()
    go.wait()
    spin(QUIET)
    holder = Node()
    holder.waiter = Waiter()
    del holder
    gc.collect()


def worker(name):
    tids[name] = _parking.native_id()
    work.wait()
    n = 0
    while True:
        n += 1
        if name == "worker-1" and want_byte.is_set():
            want_byte.clear()
            os.write(write_fd, b"x")


def main():
    held.acquire()
    gc.disable()
    signal.signal(signal.SIGUSR1, lambda signum, frame: go.set())
    threads = [_parking.new_thread(collector, "collector")]
    threads += [_parking.new_thread(worker, name, (name,)) for name in ("worker-1", "worker-2")]
    for t in threads:
        t.start()
    while len(tids) < len(threads):
        time.sleep(0.01)
    time.sleep(0.2)  # every thread parked in its wait
    _parking.write_json(OUTFILE, {"pid": os.getpid(), "collector": tids["collector"],
                                  "workers": [tids["worker-1"], tids["worker-2"]]})
    while not go.is_set():
        signal.pause()
    time.sleep(LIFETIME)


main()
