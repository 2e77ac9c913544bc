"""Integration target `waits`: one thread for each kind of wait pytop's per-thread "wait" names.

Usage: python waits.py OUTFILE. Threads (their names):
  rl-a, rl-b  an RLock deadlock: rl-a holds rlock_a, rl-b holds rlock_b (a Barrier makes sure
              both do), then each acquires the other's, in grab(mine, other, barrier), where the
              lock waited for is the argument `other` (the locks are no module globals, so no
              other variable of the waiting thread names it)
  l-a, l-b    the same with threading.Lock (which has no owner: no deadlock pytop can prove)
  recv        sock.recv() on the accepted end of a connected TCP pair on 127.0.0.1 that nobody
              writes to
  sleeper     time.sleep(3600)
  queue       queue.Queue().get() on an empty queue
  select      select.select([r], [], []) on the read end of a pipe nobody writes to
  busy-1/-2   spin in pure Python: they pass the GIL to each other (one waits for it while the
              other runs; on a free-threaded build both run)
The main thread starts them, waits until the blocked ones sit in the kernel for good (state S and
no context switch between looks at /proc/self/task/TID/status), writes OUTFILE (JSON,
atomically) and then sleeps in time.sleep() until LIFETIME ends:
  {"pid", "version": [3, X, Y], "gil_disabled": bool, "main": tid,
   "tids": {name: tid}, "locks": {"rlock_a"|"rlock_b"|"lock_a"|"lock_b": id(lock)},
   "recv": {"fd", "local": [host, port], "remote": [host, port]},
   "select": {"r", "w"},
   "syscalls": {name: the first line of /proc/self/task/TID/syscall when it reported}}
or {"error": ...}. Python 2.7, 3.6+ (3.8+ for threading.get_native_id; before, _parking's
gettid; 2.7's RLock is threading.py's _RLock around a lock, its Queue in module Queue, and a
Barrier made here).
"""
import os
try:
    import queue
except ImportError:  # 2.7
    import Queue as queue
import select
import socket
import sys
import sysconfig
import threading
import time

import _parking
from _parking import LIFETIME, monotonic

SETTLE_TIMEOUT = 60.0
SLEEP_SECONDS = 3600
BLOCKED = ("rl-a", "rl-b", "l-a", "l-b", "recv", "sleeper", "queue", "select", "attr")
BUSY = ("busy-1", "busy-2")

tids = {}
tids_lock = threading.Lock()
keep = []  # the other ends (socket, pipe write end), kept open for ever


def checked_in(name):
    with tids_lock:
        tids[name] = _parking.native_id()


def grab(mine, other, barrier, name):
    with mine:
        barrier.wait()
        checked_in(name)
        with other:
            pass


def receive(sock):
    checked_in("recv")
    sock.recv(1)


def sleep():
    checked_in("sleeper")
    time.sleep(SLEEP_SECONDS)


def get(q):
    checked_in("queue")
    q.get()


class Guarded:
    """A lock held as an attribute (`with self.guard:`), the way most servers hold theirs; the
    main thread holds it for ever. On 2.7 an old-style class: its instances keep attributes in
    their in_dict, not where a type's tp_dictoffset says."""

    def __init__(self):
        self.guard = threading.Lock()

    def enter(self):
        checked_in("attr")
        with self.guard:
            pass


def wait_readable(r):
    checked_in("select")
    select.select([r], [], [])


def spin(name):
    checked_in(name)
    x = 1
    while True:
        x = (x * 7 + 3) % 1000003


class OneBarrier(object):
    """threading.Barrier(parties).wait(), once (2.7 has no Barrier)."""

    def __init__(self, parties):
        self.parties = parties
        self.arrived = 0
        self.cond = threading.Condition()

    def wait(self):
        with self.cond:
            self.arrived += 1
            self.cond.notify_all()
            while self.arrived < self.parties:
                self.cond.wait()


Barrier = getattr(threading, "Barrier", OneBarrier)


def task_state(tid):
    """(state letter, context switch counts) of one of our threads; None when unreadable."""
    state, switches = _parking._thread_state(tid)
    return None if state is None else (state, switches)


def task_syscall(tid):
    try:
        with open("/proc/self/task/%d/syscall" % tid) as f:
            return f.read().strip()
    except OSError as e:
        return "unreadable: %s" % e


def gil_disabled():
    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return not is_enabled() if is_enabled is not None else True


def settle(threads):
    """Waits until every thread checked in and the blocked ones stay blocked; None or why not."""
    deadline = monotonic() + SETTLE_TIMEOUT
    previous = None
    while monotonic() < deadline:
        time.sleep(0.1)
        with tids_lock:
            known = dict(tids)
        if any(t.ident is not None and not t.is_alive() for t in threads):
            return "a thread ended: %s" % [t.name for t in threads if not t.is_alive()]
        if len(known) < len(BLOCKED) + len(BUSY):
            previous = None
            continue
        states = {name: task_state(known[name]) for name in BLOCKED}
        if any(s is None or s[0] not in ("S", "D") for s in states.values()):
            previous = None
            continue
        # Three looks 0.1 s apart with no context switch: each sits in its blocking call.
        if previous is not None and states == previous[0] and states == previous[1]:
            return None
        previous = (states, previous[0] if previous is not None else None)
    with tids_lock:
        known = dict(tids)
    return "threads did not settle within %.0f s: checked in %s, states %s" % (
        SETTLE_TIMEOUT, sorted(known),
        {name: task_state(tid) for name, tid in sorted(known.items())})


def main():
    rlock_a, rlock_b = threading.RLock(), threading.RLock()
    lock_a, lock_b = threading.Lock(), threading.Lock()
    rl_barrier, l_barrier = Barrier(2), Barrier(2)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    listener.close()
    keep.append(client)

    r, w = os.pipe()
    keep.append(w)
    q = queue.Queue()
    guarded = Guarded()
    guarded.guard.acquire()

    specs = [("rl-a", grab, (rlock_a, rlock_b, rl_barrier, "rl-a")),
             ("rl-b", grab, (rlock_b, rlock_a, rl_barrier, "rl-b")),
             ("l-a", grab, (lock_a, lock_b, l_barrier, "l-a")),
             ("l-b", grab, (lock_b, lock_a, l_barrier, "l-b")),
             ("recv", receive, (conn,)),
             ("sleeper", sleep, ()),
             ("queue", get, (q,)),
             ("select", wait_readable, (r,)),
             ("attr", guarded.enter, ()),
             ("busy-1", spin, ("busy-1",)),
             ("busy-2", spin, ("busy-2",))]
    threads = [_parking.new_thread(body, name, args) for name, body, args in specs]
    for t in threads:
        t.start()
    why = settle(threads)
    if why is not None:
        doc = {"error": why}
    else:
        with tids_lock:
            known = dict(tids)
        doc = {
            "pid": os.getpid(),
            "version": list(sys.version_info[:3]),
            "gil_disabled": gil_disabled(),
            "main": _parking.native_id(),
            "tids": known,
            "locks": {"rlock_a": id(rlock_a), "rlock_b": id(rlock_b),
                      "lock_a": id(lock_a), "lock_b": id(lock_b),
                      "guard": id(guarded.guard)},
            "recv": {"fd": conn.fileno(), "local": list(conn.getsockname()[:2]),
                     "remote": list(conn.getpeername()[:2])},
            "select": {"r": r, "w": w},
            "syscalls": {name: task_syscall(tid) for name, tid in sorted(known.items())},
            "file": os.path.abspath(__file__),
        }
    _parking.write_json(sys.argv[1], doc)
    # 2.7's GIL is a plain lock its holder gives up every sys.getcheckinterval() instructions
    # and, as a rule, takes back at once: a spinner waiting for it wakes at each release and is
    # on a CPU more often than asleep on it. Handed over a thousand times less often from now
    # on (once all have reported), the waiter sleeps on it, as a thread waiting for the GIL of
    # a busy 2.7 server does.
    if sys.version_info < (3, 0):
        sys.setcheckinterval(100000)
    time.sleep(LIFETIME)


if __name__ == "__main__":
    main()
    os._exit(0)
