"""An asyncio program for pytop's TUI tests of the Tasks view (Python 3.14+ for the graph).

main() gathers two process_batch() coroutines, each a TaskGroup of three fetch() tasks, and
a task named slow-report; every task sleeps for an hour. Prints "pid N" once all tasks run.
The tree that `python -m asyncio pstree` draws of it:

  └── (T) Task-1
      └──  main
          ├── (T) Task-2 (process_batch 0)  ── three (T) fetch-0-K
          ├── (T) Task-3 (process_batch 1)  ── three (T) fetch-1-K
          └── (T) slow-report
"""
import asyncio
import os
import signal


async def fetch(batch, k):
    await asyncio.sleep(3600 + k)


async def process_batch(batch):
    async with asyncio.TaskGroup() as tg:
        for k in range(3):
            tg.create_task(fetch(batch, k), name="fetch-%d-%d" % (batch, k))


async def slow_report():
    await asyncio.sleep(3600)


async def main():
    report = asyncio.create_task(slow_report(), name="slow-report")

    async def announce():
        await asyncio.sleep(0.2)
        print("pid %d" % os.getpid(), flush=True)

    asyncio.create_task(announce(), name="announce")
    await asyncio.gather(process_batch(0), process_batch(1), report)


signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
asyncio.run(main())
