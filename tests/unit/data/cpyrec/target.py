# A target for tests/unit/data/cpyrec: three named threads in different recursive or busy
# functions, so a recording holds distinct stacks per thread. Run by make-recordings.
import threading
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def recurse(depth):
    if depth == 0:
        return spin(2000)
    return recurse(depth - 1)


def worker_recursive():
    while True:
        recurse(5)


def worker_busy():
    while True:
        spin(5000)


def worker_sleepy():
    while True:
        time.sleep(0.01)
        spin(500)


for name, fn in (("recursive", worker_recursive), ("busy", worker_busy),
                 ("sleepy", worker_sleepy)):
    threading.Thread(target=fn, name=name, daemon=True).start()
print("ready", flush=True)
time.sleep(600)
