"""Integration target `gcwait`: a collection whose finalizer waits while other threads run Python
(Python 3.8+).

Usage: python gcwait.py OUTFILE. Starts a thread "collector" and two threads "worker-1" and
"worker-2", all parked (blocked, not asking for the GIL), turns automatic collection off and
writes OUTFILE ({"pid", "collector", "workers": [kernel tids]}); then waits for SIGUSR1. Then:
the collector spins for QUIET seconds holding the GIL (nobody else wants it), calls
gc.collect() on a cycle whose finalizer writes OUTFILE.phase2 ({"time"}), spins QUIET seconds
more, lets the workers loose (they spin in Python, taking the GIL in turns), writes
OUTFILE.waiting ({"time"}) and then waits, with the GIL released, for ever: on a lock the main
thread holds, in time.sleep, and in a blocking read of a pipe that worker-1 writes a byte to
when asked, in turn. The collection never ends (until the process is killed or LIFETIME ends).
"""
import gc
import json
import os
import signal
import sys
import threading
import time

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
QUIET = 1.0
OUTFILE = sys.argv[1]
go = threading.Event()
work = threading.Event()
held = threading.Lock()  # the main thread holds it for good
want_byte = threading.Event()
read_fd, write_fd = os.pipe()
tids = {}


def native_id():
    return threading.get_native_id() if hasattr(threading, "get_native_id") else None


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def spin(seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        pass


class Waiter:
    """Finalized inside the collection: reports, keeps the GIL a while, then waits for ever."""

    def __init__(self):
        self.me = self

    def __del__(self):
        write_json(OUTFILE + ".phase2", {"time": time.time()})
        spin(QUIET)
        work.set()
        write_json(OUTFILE + ".waiting", {"time": time.time()})
        deadline = time.time() + LIFETIME
        while time.time() < deadline:
            held.acquire(timeout=0.7)
            time.sleep(0.7)
            want_byte.set()
            os.read(read_fd, 1)


def collector():
    tids["collector"] = native_id()
    go.wait()
    spin(QUIET)
    Waiter()
    gc.collect()


def worker(name):
    tids[name] = native_id()
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
    threads = [threading.Thread(target=collector, name="collector", daemon=True)]
    threads += [threading.Thread(target=worker, args=(name,), name=name, daemon=True)
                for name in ("worker-1", "worker-2")]
    for t in threads:
        t.start()
    while len(tids) < len(threads):
        time.sleep(0.01)
    time.sleep(0.2)  # every thread parked in its wait
    write_json(OUTFILE, {"pid": os.getpid(), "collector": tids["collector"],
                         "workers": [tids["worker-1"], tids["worker-2"]]})
    while not go.is_set():
        signal.pause()
    time.sleep(LIFETIME)


main()
