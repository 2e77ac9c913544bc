"""Integration target `exec`: a Python program that exec()s, when told, into another program.

Usage: python execer.py OUTFILE [NEXT]. The main thread waits in `before_exec` and
a thread "before-exec-worker" in `before_exec_worker`; OUTFILE gets {"pid", "version",
"executable"} once both run. When OUTFILE.go appears, the main thread exec()s:
  NEXT "sleep" (the default): /bin/sleep (PYTOP_TARGET_LIFETIME seconds), no Python any more;
  NEXT a path: that interpreter running this file again as `execer.py OUTFILE.after --after`,
  whose main thread waits in `after_exec_main` and a thread "after-exec-worker" in
  `after_exec_worker`; OUTFILE.after gets {"pid", "version", "executable", "time"} once both
  run. Python 2.7, 3.6+, stdlib only, on its own (_parking would arm an alarm on 2.7, and an
  exec keeps alarms).
"""
import json
import os
import platform
import sys
import threading
import time

LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))
NAP = 0.05
monotonic = getattr(time, "monotonic", time.time)  # 2.7 has none


def write_report(outfile, extra=None):
    doc = {"pid": os.getpid(), "version": platform.python_version(),
           "executable": os.path.realpath(sys.executable), "time": time.time()}
    doc.update(extra or {})
    tmp = outfile + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, outfile)


def before_exec_worker():
    while True:
        time.sleep(NAP)


def after_exec_worker():
    while True:
        time.sleep(NAP)


def before_exec(outfile, nxt):
    go = outfile + ".go"
    deadline = monotonic() + LIFETIME
    while not os.path.exists(go):
        if monotonic() > deadline:
            sys.exit(0)
        time.sleep(NAP)
    if nxt == "sleep":
        os.execv("/bin/sleep", ["sleep", "%d" % LIFETIME])
    os.execv(nxt, [nxt, os.path.abspath(__file__), outfile + ".after", "--after"])


def after_exec_main():
    time.sleep(LIFETIME)


def main():
    outfile = sys.argv[1]
    nxt = sys.argv[2] if len(sys.argv) > 2 else "sleep"
    after = nxt == "--after"
    worker = threading.Thread(target=after_exec_worker if after else before_exec_worker,
                              name="after-exec-worker" if after else "before-exec-worker")
    worker.daemon = True
    worker.start()
    write_report(outfile)
    sys.stdout.write("pid %d\n" % os.getpid())  # what the TUI tests wait for
    sys.stdout.flush()
    if after:
        after_exec_main()
    else:
        before_exec(outfile, nxt)


main()
