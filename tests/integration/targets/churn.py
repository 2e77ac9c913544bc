"""Integration target `churn`: threads whose stacks change as fast as Python can call.

Usage: python churn.py OUTFILE. Two "churner" threads call, one after another and as fast as
they can, functions whose frames differ in size and hold object pointers in their locals
(range iterators, floats, lists), generators (3.11+ keeps their frames in the generator object,
freed when it ends) and functions compiled from fresh source and freed right after (new code
objects at reused addresses). A reader that takes a thread's newest-frame pointer and then its
stack memory a few microseconds later often finds at that address what the next call left there,
not a frame: the churners are how pytop meets frames it cannot read, by chance. A third
thread, "corrupt", makes one for sure: it runs a generator that parks inside its own frame, and
the main thread then points that frame's code pointer at a float (through ctypes; the field
found by scanning the generator's, or before 3.11 its frame object's, bytes for its code's
address), as a torn read would see it. Automatic GC is off. Every function the churners run is
named churn_*. OUTFILE gets {"pid", "tids" (the churners), "corrupt_tid", "corrupted" (false
when the field was not found), "functions"} once all run. Python 2.7, 3.6+ (before 3.11 every
frame is an object of its own, f_code among its first fields, generators' included).
"""
import ctypes
import gc
import os
import sys
import threading
import time

import _parking
from _parking import FOREVER, LIFETIME, monotonic

started = []
parked = []
lock = threading.Lock()
KEEP = []  # the parked generator and what its frame points at, alive for good


def churn_leaf(x):
    return x + 1


def churn_narrow(n):
    return churn_leaf(n)


def churn_wide(n):
    a, b, c, d = range(n), 1.5 * n, [n], iter(range(3))
    e, f, g, h = float(n), (n,), {n: n}, range(n, n + 2)
    return churn_leaf(len(c)) + len(a) + int(b) + next(d) + int(e) + len(f) + len(g) + len(h)


def churn_w2(n):
    a, b = range(n), 0.5 * n
    return churn_leaf(len(a)) + int(b)


def churn_w5(n):
    a, b, c, d, e = range(n), 0.5 * n, [n], (n,), {n: n}
    return churn_leaf(len(a)) + int(b) + len(c) + len(d) + len(e)


def churn_w9(n):
    a, b, c, d, e, f, g, h, k = range(n), 0.5 * n, [n], (n,), {n: n}, [n, n], 1.5, 2.5, 3.5
    return churn_leaf(len(a)) + int(b + g + h + k) + len(c) + len(d) + len(e) + len(f)


def churn_gen(n):
    for i in range(n):
        yield churn_leaf(i)


def churn_deep(k):
    return churn_leaf(k) if k == 0 else churn_deep(k - 1)


def churn_fresh(i):
    """A function compiled from new source, run once and dropped: a new code object."""
    src = "def churn_made_%d(x):\n    return x * 2\n" % (i % 50)
    ns = {}
    exec(compile(src, "<churn>", "exec"), ns)
    r = ns["churn_made_%d" % (i % 50)](i)
    ns.clear()
    return r


def churner(until):
    with lock:
        started.append(_parking.native_id())
    i = 0
    while monotonic() < until:
        churn_narrow(i)
        churn_w5(3)
        churn_wide(i % 7 + 1)
        churn_w2(2)
        churn_w9(4)
        sum(churn_gen(3))
        churn_deep(i % 5)
        sum(x for x in range(2))
        if i % 64 == 0:
            churn_fresh(i)
        i += 1


def churn_parked_gen(running):
    running.set()
    yield FOREVER.wait()


def frame_code_slot(gen):
    """The address of the f_code (3.13+: f_executable) slot of GEN's frame: the last word of the
    generator object (3.11+ holds its frame) or of its frame object (before) that names
    the generator's code, tag bits aside. Only the object's own bytes are read."""
    holder = gen if sys.version_info >= (3, 11) else gen.gi_frame
    base, size = id(holder), holder.__sizeof__()
    code = id(gen.gi_code)
    found = None
    for off in range(0, size - 7, 8):
        if ctypes.c_uint64.from_address(base + off).value & ~7 == code:
            found = base + off
    return found


def corrupt_parked(running):
    """Runs a generator that parks inside its own frame; main() then points that frame's code
    pointer at a float. The frame never runs again."""
    gen = churn_parked_gen(running)
    KEEP.append(gen)
    with lock:
        parked.append(_parking.native_id())
    next(gen)


def main():
    outfile = sys.argv[1]
    # A collection would visit the corrupted frame's code pointer (a float: harmless), but
    # nothing must look at it more than pytop does.
    gc.disable()
    until = monotonic() + LIFETIME
    threads = [_parking.new_thread(churner, "churner-%d" % k, (until,)) for k in range(2)]
    running = threading.Event()
    threads.append(_parking.new_thread(corrupt_parked, "corrupt", (running,)))
    for t in threads:
        t.start()
    while len(started) < 2 and monotonic() < until:
        time.sleep(0.01)
    running.wait(60)
    time.sleep(0.2)  # the generator is blocked in FOREVER.wait() by now
    slot = frame_code_slot(KEEP[0])
    if slot is not None:
        not_code = 12345.5
        KEEP.append(not_code)
        word = ctypes.c_uint64.from_address(slot)
        word.value = id(not_code) | (word.value & 7)
    names = sorted(n for n in globals() if n.startswith("churn")) + ["<genexpr>"]
    _parking.write_json(outfile, {"pid": os.getpid(), "tids": started,
                                  "corrupt_tid": parked[0],
                                  "corrupted": slot is not None, "functions": names})
    while monotonic() < until:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
    os._exit(0)
