"""Integration target `hostile`: a process that corrupts, through ctypes, the structures pytop
reads of it, then keeps itself alive without touching them again (Python 2.7 and 3.6+; the
asyncio cases, in _hostile_tasks.py, 3.6+; the memory helpers in _hostile_mem.py).

Usage: python hostile.py OUTFILE [objects|registry]. Automatic garbage collection is turned off
first and for good (a collection would traverse the corrupted objects); every object stays
referenced, nothing is restored, and no task ever runs again. Each case has its own event loop
(its own thread), so that one case cannot hide another. Field offsets are found at run time by
scanning an object's bytes for the address of a known referent, never assumed; a case whose
field is not found is listed under "skipped" with the reason.

objects (the default):
  fw-*       tasks whose awaited future pointer is an unmapped address or an int, for a C task
             (its fut_waiter field) and a pure-Python task (its instance dict's _fut_waiter);
             3.14+: a task's awaited_by pointer set to an unmapped address
  loop-*     coroutine await chains that loop: a coroutine awaiting itself, and a three-deep
             chain whose innermost coroutine awaits the outermost (the awaited object on the
             suspended frame's value stack replaced)
  gather     a gather future whose _children list claims 2**40 items
  name-*     task names that are not str: a bytes object dressed as an ASCII str (its first
             bytes copied from a real str's header), a float, and (pure-Python task) an int
             (3.8+: tasks have no names before; listed under "absent")
  canary-*   untouched tasks in a loop of their own and beside the corrupted ones (C tasks, and
             a pure-Python one, which 3.14+ lists from asyncio's registries too)
  threads    a thread whose threading name is the dressed-up bytes object (2.7, where names
             are byte strings: a tuple dressed up as one), and one whose name str claims 2**40
             characters
  exc-chain-loop  a thread parked inside a generator (handling nothing) whose exception state's
             previous_item, the link of the chain sys.exc_info() reads, points back at itself
             (3.7+: generators keep no exception state of their own before)
  gc         the collector's `collecting` flag (found by comparing the memory around the
             youngest generation's list head, or before 3.7 the interpreter's data, inside and
             outside a collection: seen from a gc callback, on 2.7 from a weak reference's
             callback run by the collection) set to 5
registry:
  3.6-3.13   asyncio's task registry (the WeakSet's data set) claims 2**40 slots, 2**40 used
             (3.6: the C tasks' one, which only the _asyncio module holds, found through the
             canary's weak references)
  3.14+      a thread's task list whose second task's next link points back to the first;
             a second loop's tasks stay readable (canaries)
  2.7        nothing (no asyncio): listed under "absent"

OUTFILE (JSON): pid, mode, main_tid, main_function, threads {tid: expected name or null},
tasks {id: {"name": expected name or null, "case": ...}}, loop_tasks (tasks whose coroutine
chain loops), functions (every coroutine function name of the target), cases, skipped, absent
(cases this version has nothing to corrupt for, with why), gc ("corrupted" or why not), fake
(the text of the dressed-up str). Then the main thread parks in park_main() until killed (or
PYTOP_TARGET_LIFETIME ends).
"""
import ctypes
import gc
import os
import struct
import sys
import threading
import time
import weakref

from _hostile_mem import (ABSENT, CASES, FAKE_TEXT, HUGE, KEEP, LOOP_TASKS, SKIPPED, TASKS,
                          THREADS, absent, attempt, attr_slot, dressed_object, field_offset,
                          put, readable_len, skip, word, _mappings)
from _parking import FOREVER, monotonic, native_id, new_thread, write_json

if sys.version_info >= (3, 5):
    import _hostile_tasks as tasks
else:
    tasks = None  # no asyncio

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
OUTFILE = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "objects"
# The attribute holding a threading.Thread's name.
NAME_ATTR = "_Thread__name" if sys.version_info < (3,) else "_name"
NO_ASYNCIO = "asyncio came in 3.4 (pytop reads its tasks from 3.6)"


# ---------------------------------------------------------------- threads

def start_named_threads():
    ready = []
    threads = []
    for name in ("t-nonstr", "t-longlen"):
        ev = threading.Event()
        box = {}

        def park(ev=ev, box=box):
            box["tid"] = native_id()
            ev.set()
            FOREVER.wait()
        th = new_thread(park, name="".join(list(name)))
        th.start()
        ready.append(ev)
        threads.append((th, box))
    for ev in ready:
        ev.wait()
    return threads


def corrupt_threads(threads, fake):
    (t_fake, box_fake), (t_long, box_long) = threads
    THREADS[box_fake["tid"]] = None
    THREADS[box_long["tid"]] = None
    attempt("thread-name-not-str",
            lambda: put(attr_slot(t_fake, NAME_ATTR, "thread-name"), id(fake)))

    def c_long():
        name = t_long.name
        KEEP.append(name)
        if word(id(name) + 16) != len(name):
            raise LookupError("thread-name-long: str length field not at 16")
        put(id(name) + 16, HUGE)
    attempt("thread-name-length-2**40", c_long)


def start_generator_thread():
    """A thread parked inside a running generator; returns (thread, {"gen", "tid"})."""
    ev = threading.Event()
    box = {}

    def make():
        # Nested, so that its qualname is a str of its own (not its name's).
        def parked_gen():
            box["tid"] = native_id()
            ev.set()
            FOREVER.wait()
            yield
        return parked_gen()

    def run():
        box["gen"] = make()
        next(box["gen"])
    th = new_thread(run, name="exc-loop")
    th.start()
    ev.wait()
    return th, box


def corrupt_exc_chain(th, box):
    """The running generator's gi_exc_state (right after gi_qualname in PyGenObject, 3.7-3.15)
    gets a previous_item pointing at itself."""
    gen = box["gen"]
    item = id(gen) + field_offset(gen, gen.__qualname__, "exc-chain") + 8
    value = item if sys.version_info >= (3, 11) else item + 8   # 3.7-3.10: type, value, tb
    previous = item + (8 if sys.version_info >= (3, 11) else 24)
    # Running and handling nothing: no exception (NULL or None), linked to the thread's item.
    if word(value) not in (0, id(None)) or word(previous) == 0:
        raise LookupError("exc-chain: gi_exc_state not where expected")
    THREADS[box["tid"]] = th.name
    put(previous, item)


def find_gc_head():
    """The address of the youngest generation's list head, walked to from a new object along
    the gc_prev links (towards older objects, none of which the walk frees), recognised by
    the unusual threshold set just before (right after the head: struct gc_generation)."""
    gc.set_threshold(54321, 4321, 321)
    obj = [[]]
    KEEP.append(obj)
    # sys.getsizeof() counts the GC header in front of the object: 16 bytes from 3.8, 32 before.
    head_size = sys.getsizeof(obj) - obj.__sizeof__()
    node = id(obj) - head_size
    maps = _mappings()
    for _ in range(1 << 20):
        # The low bits of _gc_prev are flags (Include/internal/pycore_gc.h, 3.8+).
        node = word(node + 8) & ~0x3
        if node == 0 or readable_len(node, head_size + 8, maps) < head_size + 8:
            break
        if ctypes.c_int32.from_address(node + head_size).value == 54321:
            return node
    raise LookupError("gc: no list head with the threshold set")


def interpreter_data():
    """The writable regions of the interpreter's own binary (libpython, or the executable):
    its data, and the zeroed data right after it. Before 3.7 the collector's state is statics
    there, not one struct."""
    with open("/proc/self/maps") as f:
        lines = [line.split() for line in f]
    paths = [p[5] for p in lines if len(p) > 5 and "libpython" in os.path.basename(p[5])]
    binary = paths[0] if paths else os.path.realpath(sys.executable)
    regions = []
    for i, p in enumerate(lines):
        lo, hi = (int(x, 16) for x in p[0].split("-"))
        if len(p) > 5 and p[5] == binary and p[1].startswith("rw"):
            regions.append((lo, hi - lo))
            nxt = lines[i + 1] if i + 1 < len(lines) else []
            if len(nxt) == 5 and nxt[1].startswith("rw") and int(nxt[0].split("-")[0], 16) == hi:
                lo2, hi2 = (int(x, 16) for x in nxt[0].split("-"))
                regions.append((lo2, hi2 - lo2))
    return regions


class Cycle(object):
    """An object that can be in a reference cycle and have weak references."""


def collecting_candidates(regions):
    """The ints of REGIONS that are 1 inside a collection (seen from a gc callback) and 0 outside
    it, before and after."""
    def take():
        return [ctypes.string_at(lo, n) for lo, n in regions]
    outside = [take()]
    inside = []

    def look(*args):
        if not inside:
            inside.append(take())
    if hasattr(gc, "callbacks"):
        gc.callbacks.append(lambda phase, info: phase == "start" and look())
        gc.collect(0)
        gc.callbacks.pop()
    else:
        # 2.7: a weak reference's callback to an object of cyclic garbage runs inside the
        # collection that frees it.
        junk = Cycle()
        junk.me = junk
        ref = weakref.ref(junk, look)
        del junk
        gc.collect(0)
        KEEP.append(ref)
    outside.append(take())
    if not inside:
        raise LookupError("gc: the callback did not run")
    found = []
    for r, (lo, n) in enumerate(regions):
        n //= 4
        ins = struct.unpack("=%di" % n, inside[0][r][:4 * n])
        out0 = struct.unpack("=%di" % n, outside[0][r][:4 * n])
        out1 = struct.unpack("=%di" % n, outside[1][r][:4 * n])
        found += [lo + 4 * i for i in range(n)
                  if ins[i] == 1 and out0[i] == 0 and out1[i] == 0]
    return found


def find_gc_collecting():
    """The address of the collector's `collecting` flag: the int near the generations' list
    heads (3.7+: one struct), else in the interpreter's data (3.6: statics), that is 0 outside
    a collection and 1 inside one."""
    head = find_gc_head()
    lo = head - 1024
    found = collecting_candidates([(lo, readable_len(lo, 4096))])
    if not found and sys.version_info < (3, 7):
        found = collecting_candidates(interpreter_data())
    if len(found) != 1:
        raise LookupError("gc: %d candidates for the collecting flag" % len(found))
    return found[0]


# ---------------------------------------------------------------- main

def park_main():
    deadline = monotonic() + LIFETIME
    while monotonic() < deadline:
        time.sleep(1)
    os._exit(0)


def main():
    gc.disable()
    report = {"pid": os.getpid(), "mode": MODE, "main_tid": native_id(),
              "main_function": "park_main", "fake": FAKE_TEXT.decode()}
    THREADS[native_id()] = threading.current_thread().name
    if MODE == "registry":
        if tasks is not None:
            tasks.registry_mode()
        else:
            absent("registry-*", NO_ASYNCIO)
        report["gc"] = "not corrupted in this mode"
    else:
        loops = tasks.start_object_loops() if tasks is not None else None
        threads = start_named_threads()
        gen_thread = start_generator_thread()
        if loops is not None:
            tasks.wait_object_loops(loops)
        else:
            absent("fw-*, loop-*, gather, name-*, canary-*", NO_ASYNCIO)
        # Found while nothing is corrupted yet: finding it takes a collection.
        collecting = None
        try:
            collecting = find_gc_collecting()
        except LookupError as e:
            report["gc"] = str(e)
        fake = None
        try:
            fake = dressed_object()
        except LookupError as e:
            skip("dressed-up str", str(e))
        if loops is not None:
            tasks.corrupt_objects(loops, fake)
        if sys.version_info >= (3, 7):
            attempt("exc-chain-loop", lambda: corrupt_exc_chain(*gen_thread))
        else:
            absent("exc-chain-loop", "generators keep no exception state before 3.7")
            THREADS[gen_thread[1]["tid"]] = gen_thread[0].name
        report["exc_loop_tid"] = gen_thread[1]["tid"]
        if fake is not None:
            corrupt_threads(threads, fake)
        if collecting is not None:
            ctypes.c_int32.from_address(collecting).value = 5
            report["gc"] = "corrupted"
    report.update(threads=dict((str(k), v) for k, v in THREADS.items()),
                  tasks=dict((str(k), v) for k, v in TASKS.items()), loop_tasks=LOOP_TASKS,
                  functions=tasks.FUNCTIONS if tasks is not None else [], cases=CASES,
                  skipped=SKIPPED, absent=ABSENT)
    write_json(OUTFILE, report)
    park_main()


if __name__ == "__main__":
    main()
