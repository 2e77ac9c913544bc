"""Integration target `latename`: a thread that threading learns of only after it started.

Usage: python latename.py OUTFILE. A thread started with _thread (so threading does not know
it) waits in wait_for_name(); OUTFILE gets {"pid", "tid"}. Once OUTFILE.go exists, the main
thread enters that thread into threading._active under the name "registered-late", as
Thread._bootstrap_inner() does for every thread some time after Thread.start() returned, and
writes the wall-clock time it did so to OUTFILE.named. Python 2.7, 3.6+ (2.7: module thread,
and Thread keeps its ident as _Thread__ident).
"""
import os
import sys
import threading
import time

try:
    import _thread
except ImportError:  # 2.7
    import thread as _thread

import _parking

tid = []
ready = threading.Event()


def wait_for_name():
    tid.append(_parking.native_id())
    ready.set()
    while True:
        time.sleep(3600)


def main():
    outfile = sys.argv[1]
    ident = _thread.start_new_thread(wait_for_name, ())
    ready.wait(60)
    write_atomically(outfile, {"pid": os.getpid(), "tid": tid[0]})
    deadline = _parking.monotonic() + _parking.LIFETIME
    while not os.path.exists(outfile + ".go"):
        if _parking.monotonic() > deadline:
            return
        time.sleep(0.005)
    late = threading.Thread(name="registered-late")
    if _parking.PY2:
        late._Thread__ident = ident
    else:
        late._ident = ident
    with threading._active_limbo_lock:
        threading._active[ident] = late
    write_atomically(outfile + ".named", {"named_at": time.time()})
    time.sleep(_parking.LIFETIME)


def write_atomically(path, obj):
    _parking.write_json(path, obj)


if __name__ == "__main__":
    main()
    os._exit(0)
