"""Integration target `pulse`: a thread whose work keeps time with pytop's sampling.

Usage: python pulse.py OUTFILE. The `pulse` thread spins in `pulse` for the first BUSY of every
PERIOD seconds of the clock (PERIOD is the period of `pytop -r 100`) and sleeps the rest: on a
CPU about that share of the time, in the same phase every period. A sampler on a strict 100 Hz
grid sees it at one phase every time, always on a CPU or never; one that samples at a random
point of each period sees it on a CPU in about BUSY / PERIOD of its samples. Once it runs,
OUTFILE gets {"pid", "tids": {"pulse": tid}, "main", "period", "busy"}. Python 2.7, 3.6+.
"""
import os
import sys
import threading
import time

import _parking
from _parking import LIFETIME, FOREVER, monotonic

PERIOD = 0.010
BUSY = 0.003
started = threading.Event()
tids = {}


def pulse():
    tids["pulse"] = _parking.native_id()
    started.set()
    x = 1
    while True:
        now = monotonic()
        begun = now - now % PERIOD
        if now - begun < BUSY:
            while monotonic() < begun + BUSY:
                x = (x * 7 + 3) % 1000003
        else:
            time.sleep(max(0.0, begun + PERIOD - monotonic()))


def main():
    _parking.new_thread(pulse, "pulse").start()
    started.wait(60)
    doc = {"pid": os.getpid(), "tids": dict(tids), "main": _parking.native_id(),
           "period": PERIOD, "busy": BUSY, "file": os.path.abspath(__file__)}
    if "pulse" not in tids:
        doc = {"error": "the pulse thread did not start"}
    _parking.write_json(sys.argv[1], doc)
    FOREVER.wait(LIFETIME)


if __name__ == "__main__":
    main()
    os._exit(0)
