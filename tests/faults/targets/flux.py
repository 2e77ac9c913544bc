"""Fault-trial target: threads whose stacks change as fast as they can.

`python flux.py READYFILE [COUNTERFILE]`. Four workers recurse up and down through ping, pong
and deep (frames of three sizes), each to another depth every time; one more thread writes a
counter (8 bytes, little-endian) to COUNTERFILE every millisecond. READYFILE gets the pid
once all threads run. run-faults reads this file's call graph (which line calls which function)
to judge the frames pytop reports, so every call of a target function stands on a line of its
own. Lives PYTOP_TARGET_LIFETIME seconds (default 300) unless killed. Python 3.8+, stdlib only.
"""
import json
import os
import struct
import sys
import threading
import time

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
WORKERS = 4


def leaf(n):
    return n * 2 + 1


def ping(n, k):
    if n <= 0:
        return leaf(k)
    if k % 3 == 0:
        return pong(n - 1, k + 1)
    return ping(n - 1, k + 1)


def pong(n, k):
    a = b = c = n
    if n <= 0:
        return leaf(a + b + c)
    if k % 2:
        return ping(n - 1, k + 1)
    return deep(n - 1, k + a)


def deep(n, k):
    u = v = w = x = y = z = k
    if n <= 0:
        return leaf(u)
    return pong(n - 1, k + u + v + w + x + y + z + 1)


def worker(seed):
    depth = seed
    while True:
        depth = (depth * 7 + 3) % 61
        ping(depth, seed)


def count(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    n = 0
    while True:
        n += 1
        os.pwrite(fd, struct.pack("<Q", n), 0)
        time.sleep(0.001)


def main():
    for i in range(WORKERS):
        threading.Thread(target=worker, args=(i + 1,), name="flux-%d" % i, daemon=True).start()
    if len(sys.argv) > 2:
        threading.Thread(target=count, args=(sys.argv[2],), name="counter", daemon=True).start()
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.rename(tmp, sys.argv[1])
    deadline = time.monotonic() + LIFETIME
    while time.monotonic() < deadline:
        time.sleep(0.5)


main()
