"""The small target the walker fuzzer's seed images are taken from (tests/fuzz/capture-seeds).

Three threads a few frames deep, each kind of frame pytop decodes: plain calls, a method, a
generator resumed inside its `except`, a coroutine, and an asyncio loop whose tasks await each
other; GC thresholds set. Writes its pid to the file named by argv[1] once parked, and parks
until killed (or 60 s). Runs on Python 3.8 and newer, stdlib only.
"""
import asyncio
import gc
import sys
import threading

parked = threading.Barrier(4)
forever = threading.Event()


def park():
    parked.wait()
    forever.wait(60)


class Worker:
    def method(self, depth):
        if depth:
            return self.method(depth - 1)
        park()


def generator():
    try:
        raise ValueError("handled")
    except ValueError:
        yield park()


def calls():
    Worker().method(3)


def in_generator():
    for _ in generator():
        pass


async def leaf():
    await asyncio.sleep(0)
    await asyncio.get_running_loop().run_in_executor(None, park)


async def middle():
    await asyncio.gather(leaf(), asyncio.sleep(60))


async def root():
    await asyncio.create_task(middle(), name="middle")


def tasks():
    asyncio.run(root())


gc.set_threshold(1234, 17, 9)
for target in (calls, in_generator, tasks):
    threading.Thread(target=target, daemon=True).start()
parked.wait()
with open(sys.argv[1], "w") as f:
    f.write("ready\n")
forever.wait(60)
