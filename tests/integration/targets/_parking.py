"""Parks a target's threads at known places and writes what the target says of its own stacks.

Shared by the integration targets (run-integration runs `python TARGET OUTFILE`). Every thread
the target wants inspected calls `Parking.arrive()` and blocks on the very next line; a reporter
thread waits until all of them have arrived and their stacks stopped moving, writes OUTFILE
(JSON, atomically) and exits. Runs on Python 2.7 and 3.6 and newer, stdlib only; so do the
targets, which take from here what 2.7 spells otherwise (get_ident, monotonic, new_thread,
write_json, ...). Code that 2.7 cannot even parse (async def, yield from, non-ASCII names) lives
in modules of its own (_*_py3.py), imported on 3.x only.
"""
import io
import json
import math
import os
import signal
import sys
import threading
import time

PY2 = sys.version_info[0] < 3

try:
    from threading import get_ident
except ImportError:  # 2.7
    from thread import get_ident

# 2.7 has no time.monotonic (nor os.replace: there os.rename replaces, atomically, on POSIX).
monotonic = getattr(time, "monotonic", time.time)
replace = getattr(os, "replace", os.rename)

# How long a parked target lives if nobody kills it: the main thread's wait ends after this, and
# with it the process (all other threads are daemons), so a crashed driver leaves nothing behind.
LIFETIME = float(os.environ.get("PYTOP_TARGET_LIFETIME", "300"))

# Never set: threads park in FOREVER.wait().
FOREVER = threading.Event()

if PY2:
    class _Forever(threading._Event):
        """2.7's Event.wait(timeout) polls: it sleeps up to 50 ms at a time and looks again, so
        a thread parked in it would run (and move its stack) 20 times a second. This one blocks
        on its lock whatever the timeout; the process still ends after LIFETIME (the alarm)."""

        def wait(self, timeout=None):
            return threading._Event.wait(self)

    FOREVER = _Forever()
    # SIGALRM's default action ends the process (2.7 installs no handler for it).
    signal.alarm(int(math.ceil(LIFETIME)))

# The reporter gives up (and writes an error) when threads have not parked by then.
SETTLE_TIMEOUT = float(os.environ.get("PYTOP_TARGET_SETTLE_TIMEOUT", "60"))

_SYS_GETTID = {"x86_64": 186, "aarch64": 178, "i686": 224, "i386": 224, "armv7l": 224}


def native_id():
    """The kernel thread id of the calling thread (threading.get_native_id() from 3.8)."""
    get = getattr(threading, "get_native_id", None)
    if get is not None:
        return get()
    import ctypes
    import platform
    return ctypes.CDLL(None, use_errno=True).syscall(_SYS_GETTID[platform.machine()])


def new_thread(target, name=None, args=(), daemon=True):
    """threading.Thread(target, name, args, daemon) (2.7's Thread() takes no daemon=)."""
    if PY2:
        t = threading.Thread(target=target, name=name, args=args)
        t.daemon = daemon
        return t
    # daemon given to the constructor: set afterwards, Thread() would first ask
    # threading.current_thread(), which in a subinterpreter registers a dummy thread.
    return threading.Thread(target=target, name=name, args=args, daemon=daemon)


def main_thread_ident():
    """The ident of the thread threading calls its main thread (threading.main_thread() from
    3.4; 2.7 knows it as the one instance of threading._MainThread)."""
    main = getattr(threading, "main_thread", None)
    if main is not None:
        return main().ident
    for thread in list(threading._active.values()):
        if isinstance(thread, threading._MainThread):
            return thread.ident
    return None


def json_text(doc, **kwargs):
    """json.dumps(DOC) as text (unicode on 2.7, whose json mixes str and unicode chunks unless
    it escapes everything non-ASCII: so it does there, which reads back the same)."""
    if PY2:
        kwargs["ensure_ascii"] = True
    text = json.dumps(doc, **kwargs)
    return text.decode("utf-8") if isinstance(text, bytes) else text


def write_json(path, doc, **kwargs):
    """Writes DOC (json.dumps(DOC, **KWARGS), UTF-8) to PATH atomically."""
    tmp = path + ".tmp"
    with io.open(tmp, "w", encoding="utf-8") as f:
        f.write(json_text(doc, **kwargs))
    replace(tmp, path)


def read_json(path):
    with io.open(path, encoding="utf-8") as f:
        return json.load(f)


def run_logging_thread(outfile, name, body):
    """Starts thread NAME running BODY(log_path, until, started, tid) (it logs to OUTFILE.log,
    appends its kernel id to TID and sets STARTED once it has logged), waits for it to start,
    writes OUTFILE ({"pid", "tid", "log"} or an error) atomically and waits for the thread."""
    started = threading.Event()
    tid = []
    until = monotonic() + LIFETIME
    t = new_thread(body, name, (outfile + ".log", until, started, tid))
    t.start()
    started.wait(60)
    write_json(outfile, {"pid": os.getpid(), "tid": tid[0] if tid else None,
                         "log": outfile + ".log"} if started.is_set()
               else {"error": "the %s did not start" % name})
    t.join()


def interpreter_id():
    """The id of the interpreter running the caller (0 where subinterpreters are not exposed)."""
    try:
        import _interpreters
    except ImportError:
        return 0
    current = _interpreters.get_current()
    # 3.13+: (id, whence) tuple; some versions return an InterpreterID object.
    if isinstance(current, tuple):
        current = current[0]
    return int(current)


_positions_cache = {}
_opnames_cache = {}


def _instruction_starts(code):
    """[(offset, name)] of CODE's instructions, as dis lists them (no CACHE entries)."""
    import dis
    if hasattr(dis, "get_instructions"):  # 3.4+
        return [(i.offset, i.opname) for i in dis.get_instructions(code)
                if i.opname != "CACHE"]
    # 2.7: no wordcode; an opcode byte, then two bytes of argument from HAVE_ARGUMENT on.
    # EXTENDED_ARG is an instruction of its own with its argument, as dis.dis lists it.
    raw = bytearray(code.co_code)
    starts = []
    i = 0
    while i < len(raw):
        op = raw[i]
        starts.append((i, dis.opname[op]))
        i += 3 if op >= dis.HAVE_ARGUMENT else 1
    return starts


def _instruction_at(code, offset):
    """[start, name] of the instruction of CODE whose code units hold byte OFFSET (its inline
    caches included: 3.11 and 3.12 frames point at the last unit they ran), as dis names it;
    None when there is none."""
    starts = _opnames_cache.get(code)
    if starts is None:
        starts = _instruction_starts(code)
        _opnames_cache[code] = starts
    found = None
    for start, name in starts:
        if start > offset:
            break
        found = [start, name]
    return found


def _positions(code):
    positions = _positions_cache.get(code)
    if positions is None:
        positions = list(code.co_positions())
        _positions_cache[code] = positions
    return positions


def describe_frame(frame):
    """One frame as the driver compares it (the same fields as pytop's JSON frames)."""
    code = frame.f_code
    out = {
        "function": getattr(code, "co_qualname", code.co_name),
        "name": code.co_name,
        "file": code.co_filename,
        "line": frame.f_lineno,
        "end_line": None,
        "col": None,
        "end_col": None,
        # [byte offset, instruction name]: what pytop --opcodes must say of the frame.
        "instr": _instruction_at(code, frame.f_lasti) if frame.f_lasti >= 0 else None,
    }
    if hasattr(code, "co_positions"):
        # 3.11+: one co_positions() entry per code unit; f_lasti is a byte offset of the
        # instruction the frame is executing (for a parked frame: the call that blocks).
        positions = _positions(code)
        index = frame.f_lasti // 2
        if 0 <= index < len(positions):
            line, end_line, col, end_col = positions[index]
            out.update(line=line, end_line=end_line, col=col, end_col=end_col)
    return out


def _thread_state(tid):
    """A thread's state letter (R running, S sleeping, ...) and its context switch counts.

    A thread that is woken (say, to take the GIL) shows as R, or has switched once more by
    the next look; one blocked for good stays S with the same counts.
    """
    fields = {}
    try:
        with open("/proc/self/task/%d/status" % tid) as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        return None, None
    return (fields.get("State", "?")[:1],
            (fields.get("voluntary_ctxt_switches"), fields.get("nonvoluntary_ctxt_switches")))


class Parking(object):
    """Collects the threads of one interpreter as they park, then reports them once.

    main_ident: the thread this interpreter calls its main thread (default:
    threading.main_thread(); a subinterpreter passes the thread running its code, which is
    what CPython's remote unwinder marks THREAD_STATUS_MAIN_THREAD).
    merge: files written by other interpreters' Parking (subinterpreters), waited for and
    appended to this report.
    daemon: whether the reporter is a daemon thread (isolated subinterpreters allow none).
    """

    def __init__(self, outfile, main_ident=None, merge=(), daemon=True):
        self.outfile = outfile
        self.main_ident = main_ident
        self.merge = list(merge)
        self.daemon = daemon
        self._lock = threading.Lock()
        self._arrived = {}
        self._reporter = None

    def arrive(self):
        """Called by a thread right before it blocks (on the next line of its caller)."""
        record = {
            "native_id": native_id(),
            # sys.exc_info() sees the exception the caller is handling, if any.
            "has_exception": sys.exc_info()[1] is not None,
        }
        with self._lock:
            self._arrived[get_ident()] = record

    def start_reporter(self, nthreads):
        """Starts the reporter; it reports once NTHREADS threads (not counting itself) parked."""
        self._reporter = new_thread(self._report, "reporter", (nthreads,), self.daemon)
        self._reporter.start()

    def _report(self, nthreads):
        try:
            doc = self._collect(nthreads)
            for path in self.merge:
                doc["interpreters"].extend(self._wait_for_file(path)["interpreters"])
        except Exception as e:  # reported to the driver, which fails the scenario with it
            doc = {"error": "%s: %s" % (type(e).__name__, e)}
        write_json(self.outfile, doc, ensure_ascii=False, indent=1)

    def _wait_for_file(self, path):
        deadline = monotonic() + SETTLE_TIMEOUT
        while not os.path.exists(path):
            if monotonic() > deadline:
                raise RuntimeError("no report from the other interpreter in %s" % path)
            time.sleep(0.005)
        doc = read_json(path)
        if "error" in doc:
            raise RuntimeError("other interpreter: " + doc["error"])
        return doc

    def _parked_stacks(self):
        """The other threads' frames if every one has parked, else None."""
        me = get_ident()
        stacks = {ident: f for ident, f in sys._current_frames().items() if ident != me}
        with self._lock:
            arrived = dict(self._arrived)
        arrive_code = Parking.arrive.__code__
        for ident, frame in stacks.items():
            if ident not in arrived:
                return None
            f = frame
            while f is not None:
                if f.f_code is arrive_code:
                    return None
                f = f.f_back
        return stacks, arrived

    @staticmethod
    def _fingerprint(stacks, arrived):
        """What must not change between two looks at parked threads; None if one is running."""
        out = {}
        for ident, f in stacks.items():
            state, switches = _thread_state(arrived[ident]["native_id"])
            if state not in ("S", "D"):
                return None
            chain = [switches]
            while f is not None:
                chain.append((id(f.f_code), f.f_lasti, f.f_lineno))
                f = f.f_back
            out[ident] = chain
        return out

    def _collect(self, nthreads):
        deadline = monotonic() + SETTLE_TIMEOUT
        previous = None
        while True:
            # Sleeping releases the GIL, so a thread that arrived but still wants the GIL gets
            # it and runs into its blocking call; two equal snapshots in a row mean all parked.
            time.sleep(0.01)
            with self._lock:
                narrived = len(self._arrived)
            got = self._parked_stacks() if narrived >= nthreads else None
            fingerprint = None
            if got is not None and len(got[0]) == nthreads:
                fingerprint = self._fingerprint(*got)
            if fingerprint is not None and fingerprint == previous:
                break
            previous = fingerprint
            if monotonic() > deadline:
                raise RuntimeError("threads did not park: %d of %d arrived" % (narrived, nthreads))
        stacks, arrived = got
        main_ident = self.main_ident
        if main_ident is None:
            main_ident = main_thread_ident()
        threads = []
        for ident, frame in stacks.items():
            # Look the name up without threading.current_thread(), which would invent one.
            thread = threading._active.get(ident)
            frames = []
            f = frame
            while f is not None:
                frames.append(describe_frame(f))
                f = f.f_back
            threads.append({
                "native_id": arrived[ident]["native_id"],
                "ident": ident,
                "name": thread.name if thread is not None else None,
                "is_main": ident == main_ident,
                "has_exception": arrived[ident]["has_exception"],
                "frames": frames,
            })
        threads.sort(key=lambda t: t["native_id"])
        return {
            "pid": os.getpid(),
            "version": list(sys.version_info[:3]),
            "hexversion": sys.hexversion,
            "debug_build": hasattr(sys, "gettotalrefcount"),
            "executable": sys.executable,
            "interpreters": [{"id": interpreter_id(), "threads": threads}],
        }
