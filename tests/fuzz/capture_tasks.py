"""capture-target.py's asyncio thread (3.8+): a loop whose tasks await each other, one parked in
an executor."""
import asyncio

_park = None


async def leaf():
    await asyncio.sleep(0)
    await asyncio.get_running_loop().run_in_executor(None, _park)


async def middle():
    await asyncio.gather(leaf(), asyncio.sleep(60))


async def root():
    await asyncio.create_task(middle(), name="middle")


def run(park):
    global _park
    _park = park
    asyncio.run(root())
