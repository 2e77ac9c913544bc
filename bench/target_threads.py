"""Benchmark target: THREADS threads (main included), each parked DEPTH frames deep; BUSY of
the worker threads spin at the bottom instead of sleeping (default 0)."""
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 50
BUSY = int(sys.argv[3]) if len(sys.argv) > 3 else 0
parked = threading.Barrier(THREADS + 1)


def spin():
    x = 0
    while True:
        for i in range(1000):
            x += i * i
        x &= 0xFFFF
        time.sleep(0)


def descend(n, busy=False):
    if n > 1:
        return descend(n - 1, busy)
    parked.wait()
    if busy:
        spin()
    while True:
        time.sleep(3600)


def worker(busy):
    descend(DEPTH - 3, busy)  # worker, Thread.run and the bootstrap frames make up the rest


for i in range(THREADS - 1):
    threading.Thread(target=worker, args=(i < BUSY,), name="bench-%d" % i, daemon=True).start()
threading.Thread(target=lambda: (parked.wait(), print("ready", flush=True)), daemon=True).start()
descend(DEPTH)
