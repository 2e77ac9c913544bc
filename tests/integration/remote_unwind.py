"""Prints, as one JSON document, what CPython's own remote unwinder sees in a process.

Usage: python3.14+ remote_unwind.py PID [--opcodes] [--native]. Run with the target's own interpreter: it is the oracle
run-integration compares pytop with. The result's shape differs between versions and is
detected here, not assumed:
  3.14: a flat list of ThreadInfo(thread_id, frame_info=[FrameInfo(filename, lineno,
        funcname)]), one interpreter only, no thread status;
  3.15: a list of InterpreterInfo(interpreter_id, threads=[ThreadInfo(thread_id, status,
        frame_info=[FrameInfo(filename, location=LocationInfo(lineno, end_lineno, col_offset,
        end_col_offset), funcname, opcode)])]).
Output: {"grouped": bool, "status_bits": {"THREAD_STATUS_...": int}, "interpreters":
[{"id": int or null, "threads": [{"tid", "status", "frames": [{"funcname", "filename",
"lineno", "end_lineno", "col_offset", "end_col_offset"}]}]}]}; unknown values are null.
"""
import json
import sys
import time

import _remote_debugging


def _field(obj, name, index):
    if obj is None:
        return None
    value = getattr(obj, name, None)
    if value is None and isinstance(obj, tuple) and len(obj) > index:
        value = obj[index]
    if isinstance(value, int) and value < 0:  # "no column" as -1
        return None
    return value


def convert_frame(frame):
    out = {"funcname": frame.funcname, "filename": frame.filename}
    location = getattr(frame, "location", None)
    if location is None and hasattr(frame, "lineno"):
        out["lineno"] = frame.lineno
        location = ()
    elif isinstance(location, int):
        out["lineno"] = location
        location = ()
    else:
        out["lineno"] = _field(location, "lineno", 0)
    out["end_lineno"] = _field(location, "end_lineno", 1)
    out["col_offset"] = _field(location, "col_offset", 2)
    out["end_col_offset"] = _field(location, "end_col_offset", 3)
    if getattr(frame, "opcode", None) is not None:
        out["opcode"] = frame.opcode  # with --opcodes (3.15+): the code unit's opcode
    return out


def convert_thread(thread):
    return {
        "tid": thread.thread_id,
        "status": getattr(thread, "status", None),
        "frames": [convert_frame(f) for f in thread.frame_info],
    }


def stack_trace(pid, opcodes=False, native=False):
    kwargs = {"opcodes": True} if opcodes else {}
    if native:
        kwargs["native"] = True
    unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True, **kwargs)
    # A read can race with the target; it is parked, so a retry settles it.
    for attempt in range(5):
        try:
            return unwinder.get_stack_trace()
        except (RuntimeError, OSError):
            if attempt == 4:
                raise
            time.sleep(0.05)


def main():
    result = stack_trace(int(sys.argv[1]), "--opcodes" in sys.argv[2:], "--native" in sys.argv[2:])
    grouped = bool(result) and hasattr(result[0], "interpreter_id")
    if grouped:
        interpreters = [{"id": i.interpreter_id, "threads": [convert_thread(t) for t in i.threads]}
                        for i in result]
    else:
        interpreters = [{"id": None, "threads": [convert_thread(t) for t in result]}]
    bits = {name: getattr(_remote_debugging, name)
            for name in dir(_remote_debugging) if name.startswith("THREAD_STATUS_")}
    json.dump({"grouped": grouped, "status_bits": bits, "interpreters": interpreters},
              sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
