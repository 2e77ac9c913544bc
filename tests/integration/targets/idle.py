"""Integration target `idle`: threads that sleep, and one that sleeps somewhere else in turn.

Usage: python idle.py OUTFILE. Twenty "sleeper" threads sleep in one place for good. The
"hopper" thread sleeps HOP_S in hop_0(), then in hop_1(), hop_2(), hop_3(), hop_0() and so on,
each call under a fresh frame, with the GIL released all the while (time.sleep): between two
hops nothing but the hopper runs, so a reader that keeps the stacks of threads that cannot have
run (pytop's kept stacks) keeps every stack, the hopper's included, until the hopper moves.
Every hop is logged to OUTFILE.log, one JSON line {"name", "start", "end"} (wall-clock seconds)
after it returns. Once the first hop ended, OUTFILE gets {"pid", "tid", "log"}. Python 2.7, 3.6+.
"""
import io
import os
import sys
import time

import _parking
from _parking import monotonic

HOP_S = 0.2
SLEEPERS = 20


def sleep_in(depth):
    if depth > 0:
        return sleep_in(depth - 1)
    while True:
        time.sleep(3600)


def hop_0(s):
    time.sleep(s)


def hop_1(s):
    time.sleep(s)


def hop_2(s):
    time.sleep(s)


def hop_3(s):
    time.sleep(s)


def hopper(log_path, until, started, tid):
    tid.append(_parking.native_id())
    hops = (hop_0, hop_1, hop_2, hop_3)
    i = 0
    with io.open(log_path, "w", encoding="utf-8") as log:
        while monotonic() < until:
            fn = hops[i % len(hops)]
            start = time.time()
            fn(HOP_S)
            end = time.time()
            log.write(_parking.json_text({"name": fn.__name__, "start": start, "end": end})
                      + u"\n")
            log.flush()
            started.set()
            i += 1


def main():
    for k in range(SLEEPERS):
        _parking.new_thread(sleep_in, "sleeper-%d" % k, (k % 5,)).start()
    _parking.run_logging_thread(sys.argv[1], "hopper", hopper)


if __name__ == "__main__":
    main()
    os._exit(0)
