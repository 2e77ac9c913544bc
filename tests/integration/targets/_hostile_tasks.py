"""The asyncio cases of the hostile target (targets/hostile.py), 3.6+ only: tasks whose
awaited future, name, await chain or gather children are corrupted, each in an event loop of its
own (its own thread), and the registry mode's task registry or task list.
"""
import asyncio
import gc
import sys
import threading
import weakref

import _aiocompat as aio
from _hostile_mem import (HUGE, KEEP, LOOP_TASKS, TASKS, THREADS, UNMAPPED, absent, attempt,
                          attr_slot, basicsize, field_offset, find_word, put, word)


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


def wait_loops(loops):
    for lt in loops:
        lt.ready.wait(60)
        if lt.error is not None or lt.tasks is None:
            raise RuntimeError("loop %s: %r" % (lt.label, lt.error))
        record(lt.main_task, "loop-main")


# ---------------------------------------------------------------- what hostile.py runs

def start_object_loops():
    """The objects mode's loops, started (each builds its tasks in its own thread)."""
    loops = {"canary": LoopThread("canary", build_canary),
             "fw": LoopThread("fw", build_fw),
             "fw_pure": LoopThread("fw-pure", build_fw_pure, pure=True),
             "loops": LoopThread("loops", build_loops),
             "gather": LoopThread("gather", build_gather)}
    if aio.NAMED:
        loops["names"] = LoopThread("names", build_names)
        loops["names_pure"] = LoopThread("names-pure", build_names_pure, pure=True)
    return loops


def wait_object_loops(loops):
    """Waits until every loop has made its tasks; their threads and the canary recorded."""
    every = list(loops.values())
    wait_loops(every)
    for lt in every:
        THREADS[lt.tid] = lt.thread.name
    record(loops["canary"].tasks["canary"], "canary", required=True)


def corrupt_objects(loops, fake):
    """The objects mode's task cases (FAKE: the dressed-up str, or None)."""
    corrupt_fw(loops["fw"], loops["fw_pure"])
    corrupt_loops(loops["loops"])
    corrupt_gather(loops["gather"])
    if not aio.NAMED:
        absent("name-*", "tasks have no names before 3.8")
    elif fake is not None:
        corrupt_names(loops["names"], loops["names_pure"], fake)


def registry_mode():
    """The registry mode: the task registry (before 3.14) or a task list (3.14+) corrupted."""
    canary = LoopThread("canary", build_canary)
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
