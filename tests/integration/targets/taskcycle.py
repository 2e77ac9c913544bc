"""Integration target `taskcycle`: asyncio tasks awaiting each other in a ring (Python 3.6+).

Usage: python taskcycle.py OUTFILE. Tasks ring-1 -> ring-2 -> ring-3 -> ring-1 each await the
next (a deadlock asyncio does not detect), beside a task `alone` that awaits a future. Writes
OUTFILE as tasks.py does, with "cycle": the ring's labels, then stays parked. Each ring task
runs a coroutine function of its own, so that before 3.8, when tasks have no names and pytop
shows a task by its coroutine, the ring can still be told apart.
"""
import asyncio
import json
import os
import sys
import threading

import _aiocompat as aio

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
OUTFILE = sys.argv[1]
RING = ["ring-1", "ring-2", "ring-3"]
ring = {}


async def member(i):
    await asyncio.sleep(0)
    await ring[RING[(i + 1) % len(RING)]]


async def ring_1():
    await member(0)


async def ring_2():
    await member(1)


async def ring_3():
    await member(2)


MEMBERS = [ring_1, ring_2, ring_3]


async def alone(forever):
    await forever


async def main():
    forever = aio.get_running_loop().create_future()
    for i, name in enumerate(RING):
        ring[name] = aio.create_task(MEMBERS[i](), name)
    aio.create_task(alone(forever), "alone")
    for _ in range(20):
        await asyncio.sleep(0)
    tasks = aio.all_tasks()
    doc = {"loops": {"main": {"tid": aio.native_id(),
                              "tasks": [{"id": id(t), "name": aio.name(t),
                                         "label": aio.label(t), "coro": aio.coro_function(t)}
                                        for t in tasks]}},
           "edges": {RING[(i + 1) % len(RING)]: [name] for i, name in enumerate(RING)},
           "bulk": 0, "cycle": RING, "pid": os.getpid()}
    with open(OUTFILE + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.rename(OUTFILE + ".tmp", OUTFILE)
    await forever


if __name__ == "__main__":
    timer = threading.Timer(LIFETIME, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    aio.run(main())
