"""Integration target `modes`: one thread for each answer the sampling modes ask about.

Usage: python modes.py OUTFILE. Threads:
  spinner  runs `spin` in pure Python: on a CPU, holding the GIL most of the time
  waiter   runs `spin_too` likewise: the two take the GIL from each other, so each of them also
           waits for it
  hasher   runs `hash_loop`: zlib.compress() of 32 MiB at a time, which zlib computes with the
           GIL released: on a CPU without the GIL (hashlib's sha256 would not do: without
           OpenSSL, as pyenv builds 2.7 and 3.6, its fallback hashes with the GIL held)
  sleeper  parked in `nap` (an Event wait that never ends): off CPU, no GIL
  handler  parked in `handle`, inside an `except` block: handling an exception, off CPU
The main thread waits for them, then parks too. Once all run, OUTFILE gets {"pid", "tids":
{role: tid}, "file": this file}. Python 2.7, 3.6+.
"""
import os
import sys
import threading
import time
import zlib

import _parking
from _parking import LIFETIME, FOREVER, monotonic

started = {}
lock = threading.Lock()


def checked_in(role):
    with lock:
        started[role] = _parking.native_id()


def spin():
    checked_in("spinner")
    x = 1
    while True:
        x = (x * 7 + 3) % 1000003


def spin_too():
    checked_in("waiter")
    x = 1
    while True:
        x = (x * 5 + 1) % 1000033


def hash_loop():
    checked_in("hasher")
    data = b"\x5a" * (32 << 20)
    while True:
        zlib.compress(data, 1)


def nap():
    checked_in("sleeper")
    FOREVER.wait(LIFETIME)


def handle():
    try:
        raise ValueError("handled while parked")
    except ValueError:
        checked_in("handler")
        FOREVER.wait(LIFETIME)


ROLES = {"spinner": spin, "waiter": spin_too, "hasher": hash_loop, "sleeper": nap,
         "handler": handle}


def main():
    for role, body in sorted(ROLES.items()):
        _parking.new_thread(body, role).start()
    deadline = monotonic() + 60
    while monotonic() < deadline:
        with lock:
            if len(started) == len(ROLES):
                break
        time.sleep(0.01)
    with lock:
        doc = {"pid": os.getpid(), "tids": dict(started), "main": _parking.native_id(),
               "file": os.path.abspath(__file__)}
    if len(doc["tids"]) != len(ROLES):
        doc = {"error": "threads did not start: %r" % started}
    _parking.write_json(sys.argv[1], doc)
    FOREVER.wait(LIFETIME)


if __name__ == "__main__":
    main()
    os._exit(0)
