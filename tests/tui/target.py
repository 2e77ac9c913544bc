"""A Python process for pytop's TUI tests: threads parked at known places.

Usage: target.py [--idle N] [--exit-after SECS] [--status CODE] [--hostile]

Threads (named, and with the same name for the OS where Linux allows):
  alpha-spinner  busy in alpha_spin() (on a CPU, holding the GIL much of the time)
  beta-sleeper   asleep in beta_wait()
  gamma-waiter   blocked in gamma_block() on a lock
  idle-K         N more threads asleep in idle_forever() (--idle N, for load tests)
  --hostile      one more thread whose name, and whose function's name, hold terminal
                 escape sequences, control characters and bytes that are not UTF-8
The main thread sleeps in main_idle(). Prints "pid N" once all threads run. Exits with CODE
after SECS (--exit-after), or quietly on SIGTERM. Python 3.8+.
"""
import argparse
import os
import signal
import sys
import threading
import time


def name_os_thread(name):
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except Exception:
        pass


def alpha_spin():
    n = 0
    while True:
        for i in range(10000):
            n += i * i
        time.sleep(0.001)


def beta_wait():
    while True:
        time.sleep(0.5)  # beta sleeps here


def gamma_block(lock):
    lock.acquire()  # gamma blocks here


# What a hostile target could put where pytop prints names: a title change, a screen clear, a
# bell, a right-to-left override, and a lone surrogate (not UTF-8 once encoded).
HOSTILE = "evil\x1b]2;pwned\x07\x1b[2J\x1b[31mred\u202e\udcff"


def hostile_wait():
    while True:
        time.sleep(0.5)


def hostile_function():
    """hostile_wait under a name that is all trouble."""
    f = hostile_wait
    f.__code__ = f.__code__.replace(co_name=HOSTILE, co_qualname=HOSTILE)
    return f


def idle_forever():
    while True:
        time.sleep(1.0)


def main_idle(deadline):
    while deadline is None or time.monotonic() < deadline:
        time.sleep(0.05)


def start(name, target, *args):
    def run():
        name_os_thread(name)
        target(*args)

    t = threading.Thread(name=name, target=run, daemon=True)
    t.start()
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--exit-after", type=float, default=None)
    p.add_argument("--status", type=int, default=0)
    p.add_argument("--hostile", action="store_true")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    start("alpha-spinner", alpha_spin)
    start("beta-sleeper", beta_wait)
    held = threading.Lock()
    held.acquire()
    start("gamma-waiter", gamma_block, held)
    if args.hostile:
        t = threading.Thread(name=HOSTILE, target=hostile_function(), daemon=True)
        t.start()
    for k in range(args.idle):
        start("idle-%d" % k, idle_forever)
    print("pid %d" % os.getpid())
    print("tui target on Python %s" % sys.version.split()[0])
    sys.stdout.flush()
    deadline = None if args.exit_after is None else time.monotonic() + args.exit_after
    main_idle(deadline)
    sys.exit(args.status)


if __name__ == "__main__":
    main()
