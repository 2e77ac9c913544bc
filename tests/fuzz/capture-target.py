"""The small target the walker fuzzer's seed images are taken from (tests/fuzz/capture-seeds).

Three threads a few frames deep, each kind of frame pytop decodes: plain calls, a method, a
generator resumed inside its `except`, and (3.8+) a coroutine and an asyncio loop whose tasks
await each other (capture_tasks.py, which older Pythons cannot even parse); GC thresholds set.
Writes its pid to the file named by argv[1] once parked, and parks until killed (or 60 s). Runs
on Python 2.7 and 3.6+, stdlib only.
"""
import gc
import sys
import threading

forever = threading.Event()
arrived = threading.Condition()
count = [0]


def park():
    with arrived:
        count[0] += 1
        arrived.notify_all()
    forever.wait(60)


class Worker(object):
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


targets = [calls, in_generator]
if sys.version_info >= (3, 8):
    import capture_tasks
    targets.append(lambda: capture_tasks.run(park))

gc.set_threshold(1234, 17, 9)
for target in targets:
    t = threading.Thread(target=target)
    t.daemon = True
    t.start()
with arrived:
    while count[0] < len(targets):
        arrived.wait(1)
with open(sys.argv[1], "w") as f:
    f.write("ready\n")
forever.wait(60)
