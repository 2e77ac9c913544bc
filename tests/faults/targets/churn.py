"""Fault-trial target: thousands of short threads a second, each logging who it was.

`python churn.py READYFILE LOGFILE STOPFILE`. Two spawner threads start threads in batches of
20 (each names itself churn-S-I, logs its ident, kernel tid and name, and ends) and join them,
until STOPFILE exists (or 60 s passed); READYFILE gets the pid once they run. Then LOGFILE gets every thread the process
had ({"threads": [[ident, tid, name], ...], "seconds": ..., "started": N}) and the process
exits. Python 3.8+ (threading.get_native_id), stdlib only.
"""
import json
import os
import sys
import threading
import time

SPAWNERS = 2
BATCH = 20

log = []


def me():
    log.append((threading.get_ident(), threading.get_native_id(),
                threading.current_thread().name))


def spawn(stop, idx):
    me()
    i = 0
    while not stop.is_set():
        batch = []
        for _ in range(BATCH):
            t = threading.Thread(target=me, name="churn-%d-%d" % (idx, i))
            i += 1
            t.start()
            batch.append(t)
        for t in batch:
            t.join()


def write(path, doc):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(path + ".tmp", path)


def main():
    ready, logfile, stopfile = sys.argv[1], sys.argv[2], sys.argv[3]
    me()
    stop = threading.Event()
    spawners = [threading.Thread(target=spawn, args=(stop, i), name="spawner-%d" % i)
                for i in range(SPAWNERS)]
    started = time.monotonic()
    for t in spawners:
        t.start()
    write(ready, {"pid": os.getpid()})
    deadline = started + 60
    while not os.path.exists(stopfile) and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for t in spawners:
        t.join()
    elapsed = time.monotonic() - started
    write(logfile, {"threads": log, "seconds": elapsed, "started": len(log)})


main()
