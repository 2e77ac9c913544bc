"""Integration target `codereuse`: code objects made, run and freed one after another.

Usage: python codereuse.py OUTFILE. The thread "reuser" compiles a new function f_NNNNN from
generated source (its `def` on line NNNNN % 200 + 1 of "<codereuse>"), runs it for about 0.15 s
(a busy loop: it is the innermost frame all that time), drops it and makes the next. Such code
objects (and their name and line-table objects) are freed and made again at the same size, so
the allocator hands their addresses out again: a reader that caches code objects by address
must see each new one for what it is. Every function run is logged to OUTFILE.log, one JSON
line {"name", "first_line", "code_id", "start", "end"} (wall-clock seconds) after it returns.
Once the first has run, OUTFILE gets {"pid", "tid", "log"}. Python 2.7, 3.6+.
"""
import io
import os
import sys
import time

import _parking
from _parking import monotonic

RUN_S = 0.15


def reuser(log_path, until, started, tid):
    tid.append(_parking.native_id())
    i = 0
    with io.open(log_path, "w", encoding="utf-8") as log:
        while monotonic() < until:
            name = "f_%05d" % i
            first = i % 200 + 1
            src = "\n" * (first - 1) + (
                "def %s(end):\n"
                "    x = 0\n"
                "    while clock() < end:\n"
                "        x += 1\n"
                "    return x\n" % name)
            ns = {"clock": monotonic}
            exec(compile(src, "<codereuse>", "exec"), ns)
            fn = ns[name]
            code_id = id(fn.__code__)
            start = time.time()
            fn(monotonic() + RUN_S)
            end = time.time()
            ns.clear()  # the function and its globals refer to each other: break the cycle
            del fn, ns
            log.write(_parking.json_text({"name": name, "first_line": first,
                                          "code_id": code_id, "start": start, "end": end})
                      + u"\n")
            log.flush()
            started.set()
            i += 1


def main():
    _parking.run_logging_thread(sys.argv[1], "reuser", reuser)


if __name__ == "__main__":
    main()
    os._exit(0)
