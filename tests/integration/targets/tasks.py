"""Integration target `tasks`: asyncio task trees parked at known places (Python 3.6+).

Usage: python tasks.py OUTFILE. The main thread's event loop runs a gather, a TaskGroup (3.11+),
a chain of tasks awaiting tasks three levels deep and PYTOP_TARGET_BULK_TASKS (default 10 000)
pending tasks; a second thread runs its own loop with a parent awaiting a child, both
pure-Python tasks (asyncio.tasks._PyTask, made by the loop's task factory; their names are
listed under "pure"), and a parent gathering pure-Python children. Once every task is
suspended the target writes OUTFILE: per loop, its tasks (asyncio.all_tasks(), and from 3.14,
whose C all_tasks() no longer sees them, the pure-Python tasks of asyncio.tasks' own registries:
id, name, label, the function of its coroutine, the kernel tid of the loop's thread) and the
awaited-by edges by label that the program's structure implies. A task's label is its name;
before 3.8, when tasks had no names (name null), the label the target made it with
(_aiocompat). Then every task stays suspended until the process is killed (or LIFETIME ends).
"""
import asyncio
import json
import os
import sys
import threading

import _aiocompat as aio

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
BULK = int(os.environ.get("PYTOP_TARGET_BULK_TASKS", "10000"))

OUTFILE = sys.argv[1]
reports = {}
reports_lock = threading.Lock()
all_reported = threading.Event()
NLOOPS = 2


async def park(forever):
    await forever


async def leaf(forever):
    await park(forever)


async def gather_parent(forever):
    a = aio.create_task(leaf(forever), "g-child-1")
    b = aio.create_task(leaf(forever), "g-child-2")
    await asyncio.gather(a, b)


async def taskgroup_parent(forever):
    async with asyncio.TaskGroup() as tg:
        tg.create_task(leaf(forever), name="tg-child-1")
        tg.create_task(leaf(forever), name="tg-child-2")


async def level(n, forever):
    if n == 3:
        await leaf(forever)
    else:
        await aio.create_task(level(n + 1, forever), "level-%d" % (n + 1))


async def bulk(forever):
    await forever


HAS_TASKGROUP = hasattr(asyncio, "TaskGroup")
PURE = ["t2-root", "t2-child", "t2-gather", "t2-g-child-1", "t2-g-child-2"]


def expected_edges(bulk_count):
    """Child label -> awaiting task labels, as the program builds them."""
    edges = {"g-child-1": ["gather-parent"], "g-child-2": ["gather-parent"],
             "level-2": ["level-1"], "level-3": ["level-2"], "t2-child": ["t2-root"],
             "t2-g-child-1": ["t2-gather"], "t2-g-child-2": ["t2-gather"]}
    if HAS_TASKGROUP:
        edges.update({"tg-child-1": ["tg-parent"], "tg-child-2": ["tg-parent"]})
    return edges


def report(loop_name, tasks):
    with reports_lock:
        reports[loop_name] = {
            "tid": aio.native_id(),
            "tasks": [{"id": id(t), "name": aio.name(t), "label": aio.label(t),
                       "coro": aio.coro_function(t)} for t in tasks],
        }
        if len(reports) == NLOOPS:
            doc = {"loops": reports, "edges": expected_edges(BULK), "bulk": BULK,
                   "pure": PURE, "pid": os.getpid()}
            tmp = OUTFILE + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            os.rename(tmp, OUTFILE)
            all_reported.set()


async def settle():
    """Lets every task run to its first suspension."""
    for _ in range(20):
        await asyncio.sleep(0)


async def main_loop():
    forever = aio.get_running_loop().create_future()
    aio.create_task(gather_parent(forever), "gather-parent")
    if HAS_TASKGROUP:
        aio.create_task(taskgroup_parent(forever), "tg-parent")
    aio.create_task(level(1, forever), "level-1")
    for i in range(BULK):
        aio.create_task(bulk(forever), "bulk-%d" % i)
    await settle()
    report("main", aio.all_tasks())
    await forever


async def t2_child(forever):
    await leaf(forever)


async def t2_root(forever):
    await aio.create_task(t2_child(forever), "t2-child")


async def t2_gather(forever):
    a = aio.create_task(leaf(forever), "t2-g-child-1")
    b = aio.create_task(leaf(forever), "t2-g-child-2")
    await asyncio.gather(a, b)


def pure_task_factory(loop, coro, **kwargs):
    """Tasks of the pure-Python implementation, whatever the C module offers."""
    return asyncio.tasks._PyTask(coro, loop=loop, **kwargs)


async def second_loop():
    loop = aio.get_running_loop()
    forever = loop.create_future()
    loop.set_task_factory(pure_task_factory)
    aio.create_task(t2_root(forever), "t2-root")
    aio.create_task(t2_gather(forever), "t2-gather")
    await settle()
    report("second", aio.all_tasks())
    await forever


def second_thread():
    aio.run(second_loop())


def main():
    threading.Thread(target=second_thread, name="second-loop", daemon=True).start()
    timer = threading.Timer(LIFETIME, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    aio.run(main_loop())


if __name__ == "__main__":
    main()
