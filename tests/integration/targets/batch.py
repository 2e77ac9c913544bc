"""Integration target `batch`: one thread spinning in pure Python, the others mostly asleep.

Usage: python batch.py OUTFILE. The thread "spinner" runs `spin` without end (on a CPU, holding
the GIL nearly all the time). Two threads "sleeper-1", "sleeper-2" and the main thread nap in
short sleeps, each alternating between two functions of its own, so that no function of theirs
is innermost in more than about half of their samples while `spin` is innermost in all of the
spinner's. Once all run, OUTFILE gets {"pid", "spinner": tid, "sleepers": [tid, ...],
"function": "spin", "file": this file}. Python 2.7, 3.6+.
"""
import os
import sys
import threading
import time

import _parking
from _parking import LIFETIME, monotonic

NAP = 0.25
started = {}
lock = threading.Lock()


def checked_in(role):
    with lock:
        started.setdefault(role, []).append(_parking.native_id())


def spin():
    checked_in("spinner")
    x = 1
    while True:
        x = (x * 7 + 3) % 1000003


def nap_1a():
    time.sleep(NAP)


def nap_1b():
    time.sleep(NAP)


def nap_2a():
    time.sleep(NAP)


def nap_2b():
    time.sleep(NAP)


def nap_0a():
    time.sleep(NAP)


def nap_0b():
    time.sleep(NAP)


def sleeper(first, second, until, offset=0.0):
    checked_in("sleepers")
    time.sleep(offset)  # the sleepers wake one at a time, not all together
    while monotonic() < until:
        first()
        second()


def report(outfile):
    deadline = monotonic() + 60
    while True:
        with lock:
            ready = "spinner" in started and len(started.get("sleepers", [])) == 3
        if ready or monotonic() > deadline:
            break
        time.sleep(0.01)
    doc = {"pid": os.getpid(), "spinner": started.get("spinner", [None])[0],
           "sleepers": sorted(started.get("sleepers", [])), "function": "spin",
           "file": os.path.abspath(__file__)}
    if not ready:
        doc = {"error": "threads did not start: %r" % started}
    _parking.write_json(outfile, doc)


def main():
    until = monotonic() + LIFETIME
    _parking.new_thread(spin, "spinner").start()
    _parking.new_thread(sleeper, "sleeper-1", (nap_1a, nap_1b, until, NAP / 3)).start()
    _parking.new_thread(sleeper, "sleeper-2", (nap_2a, nap_2b, until, 2 * NAP / 3)).start()
    reporter = _parking.new_thread(report, "reporter", (sys.argv[1],), daemon=False)
    reporter.start()
    checked_in("sleepers")
    reporter.join()
    while monotonic() < until:
        nap_0a()
        nap_0b()


if __name__ == "__main__":
    main()
    os._exit(0)
