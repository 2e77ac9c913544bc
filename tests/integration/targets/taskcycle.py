"""Integration target `taskcycle`: asyncio tasks awaiting each other in a ring (Python 3.8+).

Usage: python taskcycle.py OUTFILE. Tasks ring-1 -> ring-2 -> ring-3 -> ring-1 each await the
next (a deadlock asyncio does not detect), beside a task `alone` that awaits a future. Writes
OUTFILE as tasks.py does, with "cycle": the ring's names, then stays parked.
"""
import asyncio
import json
import os
import sys
import threading

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
OUTFILE = sys.argv[1]
RING = ["ring-1", "ring-2", "ring-3"]
ring = {}


async def member(i):
    await asyncio.sleep(0)
    await ring[RING[(i + 1) % len(RING)]]


async def alone(forever):
    await forever


async def main():
    forever = asyncio.get_running_loop().create_future()
    for i, name in enumerate(RING):
        ring[name] = asyncio.create_task(member(i), name=name)
    asyncio.create_task(alone(forever), name="alone")
    for _ in range(20):
        await asyncio.sleep(0)
    tasks = asyncio.all_tasks()
    doc = {"loops": {"main": {"tid": threading.get_native_id(),
                              "tasks": [{"id": id(t), "name": t.get_name()} for t in tasks]}},
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
    asyncio.run(main())
