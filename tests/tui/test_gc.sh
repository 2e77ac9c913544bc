#!/bin/bash
# The GC view: generations with the target's own thresholds, collections per second once a few
# frames are in, the thread that spends time collecting, and a collection running now.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python

cat >"$WORK/gc.py" <<'PY'
import gc, os, threading, time

class Node:
    def __init__(self):
        self.me = self

class Slow:
    """Finalized inside the collection: keeps the collector busy for a while."""
    def __init__(self):
        self.me = self
    def __del__(self):
        end = time.time() + 0.05
        while time.time() < end:
            pass

def collector():
    while True:
        Slow()
        gc.collect(1)
        time.sleep(0.02)

gc.set_threshold(777, 11, 13)
threading.Thread(target=collector, name="collector-thread", daemon=True).start()
print("pid %d" % os.getpid(), flush=True)
while True:
    for _ in range(2000):
        Node()
    time.sleep(0.01)
PY
start_script "$WORK/gc.py"

start_pytop -p "$TARGET_PID"
wait_for 'collector-thread'
keys 3
wait_for 'Samples with a thread in the GC: [0-9.]+ %'
wait_for 'GIL: .*  in GC: [0-9]+%'
wait_for 'automatic collection on'
wait_for '^ +0 +[0-9]+/777 +[0-9]+ '
wait_for '^ +1 +[0-9]+/11 +[0-9]+ '
wait_for '^ +2 +[0-9]+/13 +[0-9]+ '
# Collections per second need a few frames; generation 1 is collected ~14 times a second.
wait_for 'Interpreter 0: [0-9]+\.[0-9] collections/s over the last'
wait_for '^ +1 +[0-9]+/11 +[0-9]+ +[0-9]+ +[0-9]+ +([1-9][0-9]*|[0-9]+\.[1-9])'
wait_for '[0-9]+ +collector-thread +[0-9.]+%'
wait_for 'COLLECTING NOW in thread [0-9]+ "collector-thread"'
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 15) else 1)' &&
    { wait_for 'RECENT COLLECTIONS +GEN +TOOK +\+COLLECTED +\+CANDIDATES' &&
        wait_for '^ +[0-9.]+ m?s ago +[0-9] +[0-9.]+ ms +\+[0-9]+ +\+[0-9]+ +[0-9]+ *$'; }
pass
