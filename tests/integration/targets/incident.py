"""A command for the `incident` scenario to start under pytop (-b / --dump -- CMD).

Usage: python incident.py OUTFILE [--exit-after SECS] [--status N] [--linger SECS]. Writes
OUTFILE at once: {"pid", "argv": the command line as started, "file": this file}. The main
thread spins in phase_one() for PHASE_ONE_S seconds, then naps in phase_two() until SECS
(default 60) after its start, then exits with status N (default 0). --linger: the interpreter
then sleeps that long while it shuts down, running no Python code (time.sleep called by atexit
from C; on 2.7, whose atexit runs its handlers from Python code, by sys.exitfunc, which
Py_Finalize calls from C). Python 2.7, 3.6+.
"""
import atexit
import functools
import json
import os
import sys
import time

monotonic = getattr(time, "monotonic", time.time)  # 2.7 has none

PHASE_ONE_S = 0.5


def phase_one(until):
    x = 1
    while monotonic() < until:
        x = (x * 7 + 3) % 1000003


def phase_two(until):
    while monotonic() < until:
        time.sleep(0.02)


def main():
    start = monotonic()
    outfile = sys.argv[1]
    exit_after = 60.0
    status = 0
    args = sys.argv[2:]
    while args:
        if args[0] == "--exit-after":
            exit_after = float(args[1])
        elif args[0] == "--status":
            status = int(args[1])
        elif args[0] == "--linger" and sys.version_info[0] < 3:
            sys.exitfunc = functools.partial(time.sleep, float(args[1]))
        elif args[0] == "--linger":
            atexit.register(time.sleep, float(args[1]))
        args = args[2:]
    argv = getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv
    tmp = outfile + ".tmp"
    with open(tmp, "wb") as f:
        f.write(json.dumps({"pid": os.getpid(), "argv": argv,
                            "file": os.path.abspath(__file__)}).encode("utf-8"))
    os.rename(tmp, outfile)  # replaces atomically (POSIX), as os.replace does from 3.3
    phase_one(start + PHASE_ONE_S)
    phase_two(start + exit_after)
    sys.exit(status)


if __name__ == "__main__":
    main()
