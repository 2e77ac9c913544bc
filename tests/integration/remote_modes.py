"""Prints, as one JSON document, which threads CPython's own remote unwinder counts in a mode.

Usage: python3.15+ remote_modes.py PID MODE SAMPLES. MODE is "cpu", "gil" or "exception"; the
unwinder is made with all_threads=True, that mode and skip_non_matching_threads=True (what
`python -m profiling.sampling --mode MODE` uses) and asked SAMPLES times, 5 ms apart. Output:
{"mode": MODE, "samples": N, "tids": {tid: samples in which it was listed}}, or {"error": why}
when this Python's unwinder has no modes.
"""
import json
import sys
import time

import _remote_debugging

MODES = {"wall": 0, "cpu": 1, "gil": 2, "exception": 4}


def main():
    pid, mode, samples = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    try:
        unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True, mode=MODES[mode],
                                                    skip_non_matching_threads=True)
    except TypeError as e:
        print(json.dumps({"error": "this unwinder takes no mode: %s" % e}))
        return
    seen = {}
    taken = 0
    for _ in range(samples):
        try:
            trace = unwinder.get_stack_trace()
        except RuntimeError:
            continue  # a read torn by the running target: CPython's tools skip it too
        taken += 1
        for interp in trace:
            for thread in getattr(interp, "threads", [interp]):
                seen[thread.thread_id] = seen.get(thread.thread_id, 0) + 1
        time.sleep(0.005)
    print(json.dumps({"mode": mode, "samples": taken, "tids": seen}))


if __name__ == "__main__":
    main()
