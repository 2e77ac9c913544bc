"""Integration target `genexc`: threads parked in generators and coroutines resumed inside an
`except` block, and controls that left theirs.

The exception a generator handles lives in its own exception state (gi_exc_state), which the
thread's chain (tstate->exc_info -> previous_item ...) holds while the generator runs:
sys.exc_info() answers from the newest item of it that holds an exception, so each of these
threads reports has_exception as the target's own sys.exc_info() says at the parking place.

Usage: python genexc.py OUTFILE. Python 2.7, 3.6+. 2.7 has no exception state per generator
(the thread state's exc_* is all sys.exc_info() reads), no `yield from` (there the outer
generator iterates the inner one) and no coroutines: the coroutine and asyncio threads are
3.x's (_genexc_py3.py).
"""
import sys

import _parking
from _parking import FOREVER

P = _parking.Parking(sys.argv[1])


def park():
    P.arrive()
    FOREVER.wait()


# A generator that yields while handling, then is resumed there: has_exception.
def gen_in_except():
    try:
        raise ValueError("handled in a generator")
    except ValueError:
        yield 1
        park()


def drive_gen_in_except():
    g = gen_in_except()
    next(g)
    next(g)


# A generator that yielded inside its except, was resumed and left it: no exception.
def gen_left_except():
    try:
        raise KeyError("handled and done")
    except KeyError:
        yield 1
    yield 2
    park()


def drive_gen_left_except():
    g = gen_left_except()
    next(g)
    next(g)
    next(g)


# A generator that handles nothing.
def plain_gen():
    yield 1
    park()


# An outer generator resumed inside its except, delegating to an inner one that handles
# nothing: the inner item is empty, the outer one holds the exception: has_exception. (3.x
# delegates with `yield from`, in _genexc_py3.py; 2.7 iterates.)
def outer_in_except():
    try:
        raise LookupError("handled by the outer generator")
    except LookupError:
        yield 0
        for x in plain_gen():
            yield x


def drive_nested():
    g = outer_in_except()
    next(g)
    next(g)
    next(g)


# A thread handling an exception in a plain function, running a generator that handles
# nothing: the generator's item is empty, the thread's own holds it: has_exception.
def except_then_gen():
    try:
        raise OSError("handled by the thread")
    except OSError:
        g = plain_gen()
        next(g)
        next(g)


# The cases without generators, which must stay right: parked in a `finally` the exception
# runs through, in an `__exit__` called for it, and in an outer `except` after an inner
# handler ended (all has_exception); a handler that ended before parking (none).
def in_finally():
    try:
        raise ValueError("running through finally")
    finally:
        park()


class Exits(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        park()


def in_exit():
    with Exits():
        raise TypeError("passed to __exit__")


def nested_handler():
    try:
        raise ValueError("the outer one")
    except ValueError:
        try:
            raise KeyError("the inner one")
        except KeyError:
            pass
        park()


def handler_ended():
    try:
        raise ValueError("handled and done")
    except ValueError:
        pass
    park()


THREADS = [
    ("gen-in-except", drive_gen_in_except),
    ("gen-left-except", drive_gen_left_except),
    ("except-then-gen", except_then_gen),
    ("in-finally", in_finally),
    ("in-exit", in_exit),
    ("nested-handler", nested_handler),
    ("handler-ended", handler_ended),
]
if _parking.PY2:
    THREADS.append(("gen-nested-outer-except", drive_nested))
else:
    import _genexc_py3
    _genexc_py3.park = park
    _genexc_py3.plain_gen = plain_gen
    THREADS += _genexc_py3.THREADS


def main():
    for name, target in THREADS:
        _parking.new_thread(target, name).start()
    P.start_reporter(len(THREADS) + 1)
    P.arrive()
    FOREVER.wait(_parking.LIFETIME)


if __name__ == "__main__":
    main()
    import os
    os._exit(0)  # LIFETIME is over: skip waiting for the parked threads
