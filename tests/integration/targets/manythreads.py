"""Integration target `manythreads`: 50 threads, each parked 10 frames deep below 15 more of
`below` (1 250 frames and more in all: before 3.11, more frame objects than one read takes).

Usage: python manythreads.py OUTFILE. Even-numbered threads park in Event.wait(), odd ones in
time.sleep(). Python 2.7, 3.6+.
"""
import os
import sys
import time

import _parking
from _parking import FOREVER, LIFETIME

P = _parking.Parking(sys.argv[1])
NTHREADS = 50
BELOW = 15


def below(n, i):
    if n > 0:
        return below(n - 1, i)
    return depth1(i)


def depth1(i):
    depth2(i)


def depth2(i):
    depth3(i)


def depth3(i):
    depth4(i)


def depth4(i):
    depth5(i)


def depth5(i):
    depth6(i)


def depth6(i):
    depth7(i)


def depth7(i):
    depth8(i)


def depth8(i):
    depth9(i)


def depth9(i):
    depth10(i)


def depth10(i):
    P.arrive()
    if i % 2:
        time.sleep(LIFETIME)
    else:
        FOREVER.wait()


def main():
    for i in range(NTHREADS):
        _parking.new_thread(below, "many-%02d" % i, (BELOW, i)).start()
    P.start_reporter(NTHREADS + 1)
    P.arrive()
    FOREVER.wait(LIFETIME)


if __name__ == "__main__":
    main()
    os._exit(0)  # LIFETIME is over: skip waiting for the parked threads
