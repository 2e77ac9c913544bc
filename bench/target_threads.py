"""Benchmark target: THREADS threads (main included), each parked DEPTH frames deep."""
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 50
parked = threading.Barrier(THREADS + 1)


def descend(n):
    if n > 1:
        return descend(n - 1)
    parked.wait()
    while True:
        time.sleep(3600)


def worker():
    descend(DEPTH - 3)  # worker, Thread.run and the bootstrap frames make up the rest


for i in range(THREADS - 1):
    threading.Thread(target=worker, name="bench-%d" % i, daemon=True).start()
threading.Thread(target=lambda: (parked.wait(), print("ready", flush=True)), daemon=True).start()
descend(DEPTH)
