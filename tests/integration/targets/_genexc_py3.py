"""The threads of targets/genexc.py that Python 2.7 cannot parse: `yield from` and coroutines
(driven by send() and by asyncio). Imported by genexc.py on 3.x, which sets park and plain_gen."""
import asyncio

park = None       # genexc.py's park()
plain_gen = None  # genexc.py's generator that handles nothing


# An outer generator resumed inside its except, delegating to an inner one that handles
# nothing: the inner item is empty, the outer one holds the exception: has_exception.
def outer_in_except():
    try:
        raise LookupError("handled by the outer generator")
    except LookupError:
        yield 0
        yield from plain_gen()


def drive_nested():
    g = outer_in_except()
    next(g)
    next(g)
    next(g)


# A coroutine driven by send(), suspended inside its except and resumed there.
class Suspend:
    def __await__(self):
        yield


async def coro_in_except():
    try:
        raise RuntimeError("handled in a coroutine")
    except RuntimeError:
        await Suspend()
        park()


def drive_coro_in_except():
    c = coro_in_except()
    c.send(None)
    c.send(None)


# The same under asyncio: the task is resumed by the event loop inside its except.
async def aio_in_except():
    try:
        raise ZeroDivisionError("handled in a task")
    except ZeroDivisionError:
        await asyncio.sleep(0)
        park()


# ... and a task that left its except after resuming there: no exception.
async def aio_left_except():
    try:
        raise IndexError("handled in a task and done")
    except IndexError:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    park()


def run_asyncio(main):
    if hasattr(asyncio, "run"):
        asyncio.run(main())
    else:  # 3.6
        asyncio.new_event_loop().run_until_complete(main())


THREADS = [
    ("gen-nested-outer-except", drive_nested),
    ("coro-send-in-except", drive_coro_in_except),
    ("asyncio-in-except", lambda: run_asyncio(aio_in_except)),
    ("asyncio-left-except", lambda: run_asyncio(aio_left_except)),
]
