"""The threads of targets/stacks.py that Python 2.7 cannot parse: coroutines (async def), an
asyncio loop and a non-ASCII function name. Imported by stacks.py on 3.x, which sets P."""
import asyncio
import time

from _parking import FOREVER, LIFETIME

P = None  # stacks.py's Parking


# A coroutine driven by hand: the second send() resumes it and it blocks synchronously.
async def hand_inner():
    P.arrive()
    time.sleep(LIFETIME)


async def hand_outer():
    await asyncio.sleep(0)
    await hand_inner()


def drive_by_hand():
    coro = hand_outer()
    coro.send(None)
    coro.send(None)


# asyncio.run() in a thread whose coroutine blocks the event loop synchronously.
async def aio_leaf():
    P.arrive()
    FOREVER.wait()


async def aio_middle():
    await asyncio.sleep(0)
    await aio_leaf()


async def aio_main():
    await aio_middle()


def run_asyncio():
    if hasattr(asyncio, "run"):
        asyncio.run(aio_main())
    else:  # 3.6
        asyncio.new_event_loop().run_until_complete(aio_main())


# Non-ASCII function and thread names.
def grüße():
    P.arrive()
    FOREVER.wait()


THREADS = [
    ("coroutine-by-hand", drive_by_hand),
    ("asyncio-run", run_asyncio),
    ("wörker-ß", grüße),
]
