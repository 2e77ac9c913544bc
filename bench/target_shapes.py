"""Benchmark targets: the four shapes of `make bench`, named by the first argument.

T1  one thread, 30 frames deep, busy (a CPU-bound loop at the innermost frame)
T2  11 threads, 530 frames in all (the main thread 30 deep, ten threads 50 deep, parked)
T3  one thread, 500 frames of recursion, busy
T4  asyncio: 1000 pending tasks parked on an event, the main task busy (11 frames: 3 of
    them the task's coroutines, the rest asyncio's event loop)
The target prints "ready" once its stacks stand as described.
"""
import sys
import threading
import time


def busy_forever():
    x = 0
    while True:
        for i in range(1000):
            x += i * i
        x &= 0xFFFF


def descend(n, at_bottom):
    if n > 1:
        return descend(n - 1, at_bottom)
    return at_bottom()


def ready():
    print("ready", flush=True)


def t1(depth=30):
    # <module>, t1, the lambda and busy_forever make up the rest of the depth.
    descend(depth - 4, lambda: (ready(), busy_forever()))


def t2():
    parked = threading.Barrier(11)

    def sleep_forever():
        while True:
            time.sleep(3600)

    def park():
        parked.wait()
        sleep_forever()

    for i in range(10):
        # the lambda, park, sleep_forever, Thread.run, _bootstrap_inner and _bootstrap make the other 6 frames.
        threading.Thread(target=lambda: descend(44, park), name="bench-%d" % i,
                         daemon=True).start()
    descend(26, lambda: (parked.wait(), ready(), sleep_forever()))


def t3():
    sys.setrecursionlimit(10000)
    t1(499)  # t3 is one more frame


def t4():
    import asyncio

    async def pending(ev):
        await ev.wait()

    async def spin(n):
        if n > 0:
            return await spin(n - 1)
        ready()
        busy_forever()

    async def main():
        ev = asyncio.Event()
        tasks = [asyncio.create_task(pending(ev), name="pending-%d" % i) for i in range(1000)]
        await asyncio.sleep(0.1)  # every task starts and parks on the event
        await spin(0)
        del tasks

    asyncio.run(main())


{"T1": t1, "T2": t2, "T3": t3, "T4": t4}[sys.argv[1]]()
