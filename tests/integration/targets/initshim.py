"""Integration target `initshim`: threads parked inside a class's Python __init__.

From 3.13 a call of a class whose __init__ is Python code, once specialised
(CALL_ALLOC_AND_ENTER_INIT), runs __init__ above a frame of the interpreter's own cleanup shim
(_Py_InitCleanup: function "__init__", file "__init__", no line). Python's own views of the
stack (sys._current_frames(), tracebacks) do not list it, and neither may pytop.

Usage: python initshim.py OUTFILE. Python 2.7, 3.6+ (the shim exists from 3.13; before, the
same stacks must read the same).
"""
import sys

import _parking
from _parking import FOREVER

P = _parking.Parking(sys.argv[1])

# Calls enough for the interpreter to specialise a call site (it does after a couple).
WARMUP = 20


def park_wait():
    P.arrive()
    FOREVER.wait()


# A class whose __init__ parks, called from one call site until it is specialised.
class Parker(object):
    def __init__(self, park):
        if park:
            park_wait()


def construct_direct():
    for i in range(WARMUP):
        Parker(i == WARMUP - 1)


# An __init__ that constructs another class: two shims in one stack.
class Outer(object):
    def __init__(self, park):
        self.inner = Inner(park)


class Inner(object):
    def __init__(self, park):
        if park:
            P.arrive()
            FOREVER.wait()


def construct_nested():
    for i in range(WARMUP):
        Outer(i == WARMUP - 1)


# A subclass whose __init__ parks inside super().__init__() (an ordinary call from __init__).
class Base(object):
    def __init__(self, park):
        if park:
            park_wait()


class Derived(Base):
    def __init__(self, park):
        if _parking.PY2:  # no super() without arguments
            super(Derived, self).__init__(park)
        else:
            super().__init__(park)


def construct_derived():
    for i in range(WARMUP):
        Derived(i == WARMUP - 1)


# The first call of a call site: not specialised, no shim (the control).
class Once(object):
    def __init__(self):
        park_wait()


def construct_once():
    Once()


THREADS = [
    ("init-direct", construct_direct),
    ("init-nested", construct_nested),
    ("init-derived", construct_derived),
    ("init-once", construct_once),
]


def main():
    for name, target in THREADS:
        _parking.new_thread(target, name).start()
    P.start_reporter(len(THREADS) + 1)
    for i in range(WARMUP):
        Parker(False)
    P.arrive()
    FOREVER.wait(_parking.LIFETIME)


if __name__ == "__main__":
    main()
    import os
    os._exit(0)  # LIFETIME is over: skip waiting for the parked threads
