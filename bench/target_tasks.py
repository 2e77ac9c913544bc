"""Benchmark target: an asyncio program with N pending tasks (and its main task), parked."""
import asyncio
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


async def leaf(ev):
    await ev.wait()


async def middle(ev):
    await leaf(ev)


async def main():
    ev = asyncio.Event()
    tasks = [asyncio.create_task(middle(ev), name="t-%d" % i) for i in range(N)]
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    await ev.wait()
    del tasks


asyncio.run(main())
