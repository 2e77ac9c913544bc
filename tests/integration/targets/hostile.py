"""Integration target `hostile`: a process that corrupts, through ctypes, the structures pytop
reads of it, then keeps itself alive without touching them again (Python 3.6+).

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
  threads    a thread whose threading name is the dressed-up bytes object, and one whose
             name str claims 2**40 characters
  exc-chain-loop  a thread parked inside a generator (handling nothing) whose exception state's
             previous_item, the link of the chain sys.exc_info() reads, points back at itself
             (3.7+: generators keep no exception state of their own before)
  gc         the collector's `collecting` flag (found by comparing the memory around the
             youngest generation's list head, or before 3.7 the interpreter's data, inside and
             outside a collection) set to 5
registry:
  3.6-3.13   asyncio's task registry (the WeakSet's data set) claims 2**40 slots, 2**40 used
             (3.6: the C tasks' one, which only the _asyncio module holds, found through the
             canary's weak references)
  3.14+      a thread's task list whose second task's next link points back to the first;
             a second loop's tasks stay readable (canaries)

OUTFILE (JSON): pid, mode, main_tid, main_function, threads {tid: expected name or null},
tasks {id: {"name": expected name or null, "case": ...}}, loop_tasks (tasks whose coroutine
chain loops), functions (every coroutine function name of the target), cases, skipped, absent
(cases this version has nothing to corrupt for, with why), gc ("corrupted" or why not), fake
(the text of the dressed-up str). Then the main thread parks in park_main() until killed (or
PYTOP_TARGET_LIFETIME ends).
"""
import asyncio
import ctypes
import gc
import json
import os
import sys
import threading
import time
import weakref

import _aiocompat as aio

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
OUTFILE = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "objects"
UNMAPPED = 0x10
HUGE = 1 << 40
FAKE_TEXT = b"INVENTED-NAME"

KEEP = []          # everything the corrupted objects refer to, alive for good
SKIPPED = []
ABSENT = []
CASES = []
TASKS = {}         # id -> {"name": expected, "case": ...}
THREADS = {}       # native id -> expected name
LOOP_TASKS = []


# ---------------------------------------------------------------- memory

def _mappings():
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1].startswith("r"):
                maps.append((lo, hi))
    return maps


def readable_len(addr, n, maps=None):
    """How many of the N bytes at ADDR lie in readable mappings (from ADDR on)."""
    got = 0
    maps = maps or _mappings()
    while got < n:
        m = next(((lo, hi) for lo, hi in maps if lo <= addr + got < hi), None)
        if m is None:
            break
        got = min(n, m[1] - addr)
    return got


def word(addr):
    return ctypes.c_uint64.from_address(addr).value


def put(addr, value):
    ctypes.c_uint64.from_address(addr).value = value


def find_word(start, nbytes, value):
    """Offsets (from START, 8-aligned) of the words equal to VALUE in NBYTES readable bytes."""
    nbytes = readable_len(start, nbytes) & ~7
    raw = ctypes.string_at(start, nbytes)
    want = value.to_bytes(8, sys.byteorder)
    return [off for off in range(0, nbytes, 8) if raw[off:off + 8] == want]


def basicsize(obj):
    return type(obj).__basicsize__


def field_offset(obj, referent, what):
    """The offset of the one pointer field of OBJ's struct that holds REFERENT."""
    offs = find_word(id(obj), basicsize(obj), id(referent))
    if len(offs) != 1:
        raise LookupError("%s: %d candidate fields" % (what, len(offs)))
    return offs[0]


def instance_dict(obj, name):
    """OBJ's instance dict: its __dict__, or where the type does not show one (3.6's pure-Python
    Task, a subclass of the C Future) the dict among the objects it refers to that holds NAME."""
    d = getattr(obj, "__dict__", None)
    if d is not None:
        return d
    found = [r for r in gc.get_referents(obj) if type(r) is dict and name in r]
    if len(found) != 1:
        raise LookupError("%d instance dicts with %s" % (len(found), name))
    return found[0]


def attr_slot(obj, name, what):
    """The address of the word that holds OBJ's instance attribute NAME: in its dict's entries,
    in a split dict's values or in the values inline after the object (found by swapping in a
    probe object and reading the attribute back)."""
    d = instance_dict(obj, name)
    value = d[name]
    regions = [(id(obj), basicsize(obj) + 512)]
    for off in range(16, basicsize(d), 8):
        p = word(id(d) + off)
        if p > 1 << 32 and p % 8 == 0 and p != id(type(d)):
            regions.append((p, 4096))
    probe = object()
    KEEP.append(probe)
    for start, n in regions:
        for off in find_word(start, n, id(value)):
            put(start + off, id(probe))
            if d.get(name) is probe:
                # The slot now holds the probe without its reference: keep both for good.
                KEEP.append(value)
                return start + off
            put(start + off, id(value))
    raise LookupError("%s: attribute %s not found in memory" % (what, name))


def str_header():
    """The header bytes a real ASCII str has before its characters (state word and all)."""
    s = "".join(["Q", "WERTYUIOPASDFGHJ"])
    raw = ctypes.string_at(id(s), 128)
    data_off = raw.find(s.encode())
    if data_off < 0 or sys.getsizeof(s) != data_off + len(s) + 1:
        raise LookupError("str layout not understood")
    return raw[:data_off]


def dressed_bytes():
    """A bytes object whose memory reads as the ASCII str FAKE_TEXT: a str's header copied over
    the bytes' own from the length on (its size field set to the text's length)."""
    header = str_header()
    b = bytes(len(header) + len(FAKE_TEXT) + 8)
    base = bytes.__basicsize__ - 1
    if base > 16 + 8 + 4 + 8 or len(header) <= base:
        raise LookupError("bytes layout not understood")
    # Words 0 and 1 (refcount, type) stay the bytes'; the length is ours, the rest a str's.
    tail = header[base:] + FAKE_TEXT + b"\0" * 8
    ctypes.memmove(id(b) + base, tail, len(tail))
    put(id(b) + 16, len(FAKE_TEXT))
    ctypes.memmove(id(b) + 24, header[24:base], base - 24)
    KEEP.append(b)
    return b


def skip(case, why):
    SKIPPED.append("%s: %s" % (case, why))


def absent(case, why):
    """CASE does not exist in this version: nothing to corrupt, not a failure to."""
    ABSENT.append("%s: %s" % (case, why))


def attempt(case, fn):
    try:
        fn()
        CASES.append(case)
    except (LookupError, AttributeError, ValueError) as e:
        skip(case, str(e))


# ---------------------------------------------------------------- coroutines

async def park_future(fut):
    await fut


async def inner(fut):
    await fut


async def middle(fut):
    await inner(fut)


async def outer(fut):
    await middle(fut)


async def awaits_self(fut):
    await inner(fut)


async def await_task(task):
    await task


async def gather_two(a, b):
    await asyncio.gather(a, b)


FUNCTIONS = ["park_future", "inner", "middle", "outer", "awaits_self", "await_task",
             "gather_two", "LoopThread.main", "main"]


def pure_factory(loop, coro, **kwargs):
    return asyncio.tasks._PyTask(coro, loop=loop, **kwargs)


class LoopThread:
    """An event loop in a thread of its own; BUILD(loop, forever) makes its tasks."""

    def __init__(self, label, build, pure=False):
        self.label = label
        self.build = build
        self.pure = pure
        self.ready = threading.Event()
        self.tid = None
        self.tasks = None
        self.main_task = None
        self.error = None
        self.thread = threading.Thread(target=self.run, name="loop-" + label, daemon=True)
        self.thread.start()

    def run(self):
        self.tid = aio.native_id()
        try:
            aio.run(self.main())
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            self.error = e
            self.ready.set()

    async def main(self):
        loop = aio.get_running_loop()
        if self.pure:
            loop.set_task_factory(pure_factory)
        forever = loop.create_future()
        KEEP.append(forever)
        self.main_task = aio.current_task()
        self.tasks = self.build(loop, forever)
        for _ in range(20):
            await asyncio.sleep(0)
        KEEP.append(self.tasks)
        KEEP.append(list(aio.all_tasks()))
        self.ready.set()
        await forever


def record(task, case, name="same", required=False):
    """What pytop may say of TASK: its name (None: it has none pytop can know) and whether
    pytop must list it (the untouched canaries)."""
    TASKS[id(task)] = {"name": aio.name(task) if name == "same" else name, "case": case,
                       "required": required}


# ---------------------------------------------------------------- objects mode

def build_canary(loop, forever):
    return {"canary": aio.create_task(park_future(forever), "canary-clean", loop)}


def build_fw(loop, forever):
    t = {}
    for case in ("fw-c-garbage", "fw-c-int", "canary-fw"):
        f = loop.create_future()
        KEEP.append(f)
        t[case] = (aio.create_task(park_future(f), case, loop), f)
    if sys.version_info >= (3, 14):
        child = aio.create_task(park_future(forever), "awaited-by-garbage", loop)
        t["awaited-by"] = (child, aio.create_task(await_task(child), "awaiter", loop))
    return t


def build_fw_pure(loop, forever):
    f = loop.create_future()
    KEEP.append(f)
    return {"fw-py-garbage": (aio.create_task(park_future(f), "fw-py-garbage", loop), f),
            "canary-fw-py": (aio.create_task(park_future(forever), "canary-fw-py", loop),
                             forever)}


def build_loops(loop, forever):
    return {"loop-self": aio.create_task(awaits_self(forever), "loop-self", loop),
            "loop-caller": aio.create_task(outer(forever), "loop-caller", loop)}


def build_gather(loop, forever):
    a = aio.create_task(park_future(forever), "gather-child-1", loop)
    b = aio.create_task(park_future(forever), "gather-child-2", loop)
    return {"gather": aio.create_task(gather_two(a, b), "gather-parent", loop),
            "children": (a, b)}


def build_names(loop, forever):
    return {"name-c-bytes": aio.create_task(park_future(forever), "name-c-bytes", loop),
            "name-c-float": aio.create_task(park_future(forever), "name-c-float", loop)}


def build_names_pure(loop, forever):
    return {"name-py-int": aio.create_task(park_future(forever), "name-py-int", loop),
            "name-py-bytes": aio.create_task(park_future(forever), "name-py-bytes", loop)}


def frame_region(coro):
    """Where a suspended coroutine's value stack lies: inside the coroutine object (3.11+)
    or inside its frame object."""
    if sys.version_info >= (3, 11):
        return id(coro), coro.__sizeof__()
    return id(coro.cr_frame), coro.cr_frame.__sizeof__()


def redirect_await(coro, target, what):
    """Makes suspended CORO await TARGET: the awaited object on its value stack replaced."""
    awaited = coro.cr_await
    start, n = frame_region(coro)
    offs = find_word(start, n, id(awaited))
    if not offs:
        raise LookupError("%s: awaited object not on the frame's stack" % what)
    put(start + offs[-1], id(target))
    if coro.cr_await is not target:
        raise LookupError("%s: the stack slot found is not the awaited one" % what)
    KEEP.append(awaited)


def corrupt_fw(lt, lt_pure):
    big_int = int("123456789123")
    KEEP.append(big_int)
    for case, value in (("fw-c-garbage", UNMAPPED), ("fw-c-int", id(big_int))):
        task, fut = lt.tasks[case]
        record(task, case)

        def c(task=task, fut=fut, value=value, case=case):
            put(id(task) + field_offset(task, fut, case), value)
        attempt(case, c)
    task, _ = lt.tasks["canary-fw"]
    record(task, "canary-fw", required=True)
    if "awaited-by" in lt.tasks:
        child, parent = lt.tasks["awaited-by"]
        record(child, "awaited-by-garbage")
        record(parent, "awaiter")
        attempt("awaited-by-garbage",
                lambda: put(id(child) + field_offset(child, parent, "awaited_by"), UNMAPPED))
    task, _ = lt_pure.tasks["canary-fw-py"]
    record(task, "canary-fw-py", required=True)
    task, _ = lt_pure.tasks["fw-py-garbage"]
    record(task, "fw-py-garbage")
    attempt("fw-py-garbage", lambda: put(attr_slot(task, "_fut_waiter", "fw-py"), UNMAPPED))


def corrupt_loops(lt):
    t_self = lt.tasks["loop-self"]
    t_caller = lt.tasks["loop-caller"]
    record(t_self, "loop-self")
    record(t_caller, "loop-caller")

    def c_self():
        coro = t_self._coro
        redirect_await(coro, coro, "loop-self")
        LOOP_TASKS.append(id(t_self))

    def c_caller():
        top = t_caller._coro
        innermost = top.cr_await.cr_await
        redirect_await(innermost, top, "loop-caller")
        LOOP_TASKS.append(id(t_caller))
    attempt("loop-self", c_self)
    attempt("loop-caller", c_caller)


def corrupt_gather(lt):
    parent = lt.tasks["gather"]
    record(parent, "gather-parent")
    for child in lt.tasks["children"]:
        record(child, "gather-child")

    def c():
        fut = parent._fut_waiter
        children = fut._children
        KEEP.extend([fut, children])
        if word(id(children) + 16) != len(children):
            raise LookupError("gather: list size field not at 16")
        put(id(children) + 16, HUGE)
    attempt("gather-children-huge", c)


def corrupt_names(lt, lt_pure, fake):
    flt = float("2.5")
    big_int = int("7777777")
    KEEP.extend([flt, big_int])
    for case, value in (("name-c-bytes", fake), ("name-c-float", flt)):
        task = lt.tasks[case]
        record(task, case, None)

        def c(task=task, value=value, case=case):
            put(id(task) + field_offset(task, task.get_name(), case), id(value))
        attempt(case, c)
    for case, value in (("name-py-int", big_int), ("name-py-bytes", fake)):
        task = lt_pure.tasks[case]
        record(task, case, None)
        attempt(case, lambda task=task, value=value, case=case:
                put(attr_slot(task, "_name", case), id(value)))


def start_named_threads():
    ready = []
    threads = []
    for name in ("t-nonstr", "t-longlen"):
        ev = threading.Event()
        box = {}

        def park(ev=ev, box=box):
            box["tid"] = aio.native_id()
            ev.set()
            threading.Event().wait()
        th = threading.Thread(target=park, name="".join(list(name)), daemon=True)
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
            lambda: put(attr_slot(t_fake, "_name", "thread-name"), id(fake)))

    def c_long():
        name = t_long._name
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
            box["tid"] = aio.native_id()
            ev.set()
            threading.Event().wait()
            yield
        return parked_gen()

    def run():
        box["gen"] = make()
        next(box["gen"])
    th = threading.Thread(target=run, name="exc-loop", daemon=True)
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


def collecting_candidates(regions):
    """The ints of REGIONS that are 1 inside a collection (seen from a gc callback) and 0 outside
    it, before and after."""
    def take():
        return [ctypes.string_at(lo, n) for lo, n in regions]
    outside = [take()]
    inside = []

    def callback(phase, info):
        if phase == "start" and not inside:
            inside.append(take())
    gc.callbacks.append(callback)
    gc.collect(0)
    gc.callbacks.remove(callback)
    outside.append(take())
    if not inside:
        raise LookupError("gc: the callback did not run")
    found = []
    for r, (lo, n) in enumerate(regions):
        n &= ~3
        ins = memoryview(inside[0][r][:n]).cast("i")
        out0 = memoryview(outside[0][r][:n]).cast("i")
        out1 = memoryview(outside[1][r][:n]).cast("i")
        found += [lo + 4 * i for i in range(n // 4)
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


# ---------------------------------------------------------------- registry mode

def build_list_loop(loop, forever):
    return {"a": aio.create_task(park_future(forever), "list-a", loop),
            "b": aio.create_task(park_future(forever), "list-b", loop)}


def c_task_registry(task):
    """The data set of the WeakSet holding the C task TASK where no module names it (3.6: a
    static of the _asyncio module): the set among the referrers of TASK's weak references."""
    sets = [s for r in weakref.getweakrefs(task) for s in gc.get_referrers(r)
            if type(s) is set]
    if len(sets) != 1:
        raise LookupError("registry: %d sets hold a weak reference to the task" % len(sets))
    return sets[0]


def corrupt_registry(canary):
    tasks_mod = asyncio.tasks
    name = "_scheduled_tasks" if hasattr(tasks_mod, "_scheduled_tasks") else "_all_tasks"
    data = getattr(tasks_mod, name).data if hasattr(tasks_mod, name) else c_task_registry(canary)
    KEEP.append(data)
    # A set's used count and mask sit where a known set has them (Objects/setobject.c).
    probe = {object(), object(), object()}
    used = [off for off in range(16, basicsize(probe), 8) if word(id(probe) + off) == 3]
    mask = [off for off in range(16, basicsize(probe), 8) if word(id(probe) + off) == 7]
    if len(used) != 2 or len(mask) != 1:
        raise LookupError("registry: set layout not understood")
    put(id(data) + mask[0], HUGE - 1)
    put(id(data) + used[1], HUGE)


def corrupt_task_list(lt):
    a, b = lt.tasks["a"], lt.tasks["b"]
    record(a, "list-a")
    record(b, "list-b")

    def c():
        # The node's next link: the field of A that holds the address of B's node.
        for off in range(16, basicsize(a), 8):
            if word(id(a) + off) == id(b) + off:
                put(id(b) + off, id(a) + off)
                return
        raise LookupError("task list: no next link from one task to the other")
    attempt("task-list-loop", c)


# ---------------------------------------------------------------- main

def wait_loops(loops):
    for lt in loops:
        lt.ready.wait(60)
        if lt.error is not None or lt.tasks is None:
            raise RuntimeError("loop %s: %r" % (lt.label, lt.error))
        record(lt.main_task, "loop-main")


def park_main():
    deadline = time.monotonic() + LIFETIME
    while time.monotonic() < deadline:
        time.sleep(1)
    os._exit(0)


def main():
    gc.disable()
    report = {"pid": os.getpid(), "mode": MODE, "main_tid": aio.native_id(),
              "main_function": "park_main", "fake": FAKE_TEXT.decode()}
    THREADS[aio.native_id()] = threading.current_thread().name
    canary = LoopThread("canary", build_canary)
    if MODE == "registry":
        loops = [canary]
        if sys.version_info >= (3, 14):
            loops.append(LoopThread("list", build_list_loop))
        wait_loops(loops)
        if sys.version_info >= (3, 14):
            record(canary.tasks["canary"], "canary", required=True)
            corrupt_task_list(loops[1])
        else:
            # The registry is shared by all loops: the canary is lost with it.
            record(canary.tasks["canary"], "canary")
            attempt("registry-huge", lambda: corrupt_registry(canary.tasks["canary"]))
        report["gc"] = "not corrupted in this mode"
    else:
        fw = LoopThread("fw", build_fw)
        fw_pure = LoopThread("fw-pure", build_fw_pure, pure=True)
        loops = LoopThread("loops", build_loops)
        gather = LoopThread("gather", build_gather)
        named = [LoopThread("names", build_names),
                 LoopThread("names-pure", build_names_pure, pure=True)] if aio.NAMED else []
        threads = start_named_threads()
        gen_thread = start_generator_thread()
        every = [canary, fw, fw_pure, loops, gather] + named
        wait_loops(every)
        for lt in every:
            THREADS[lt.tid] = lt.thread.name
        record(canary.tasks["canary"], "canary", required=True)
        # Found while nothing is corrupted yet: finding it takes a collection.
        collecting = None
        try:
            collecting = find_gc_collecting()
        except LookupError as e:
            report["gc"] = str(e)
        fake = None
        try:
            fake = dressed_bytes()
        except LookupError as e:
            skip("dressed-up str", str(e))
        corrupt_fw(fw, fw_pure)
        corrupt_loops(loops)
        corrupt_gather(gather)
        if sys.version_info >= (3, 7):
            attempt("exc-chain-loop", lambda: corrupt_exc_chain(*gen_thread))
        else:
            absent("exc-chain-loop", "generators keep no exception state before 3.7")
            THREADS[gen_thread[1]["tid"]] = gen_thread[0].name
        report["exc_loop_tid"] = gen_thread[1]["tid"]
        if not named:
            absent("name-*", "tasks have no names before 3.8")
        if fake is not None:
            if named:
                corrupt_names(*named, fake)
            corrupt_threads(threads, fake)
        if collecting is not None:
            ctypes.c_int32.from_address(collecting).value = 5
            report["gc"] = "corrupted"
    report.update(threads={str(k): v for k, v in THREADS.items()},
                  tasks={str(k): v for k, v in TASKS.items()}, loop_tasks=LOOP_TASKS,
                  functions=FUNCTIONS, cases=CASES, skipped=SKIPPED, absent=ABSENT)
    with open(OUTFILE + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report, f)
    os.rename(OUTFILE + ".tmp", OUTFILE)
    park_main()


if __name__ == "__main__":
    main()
