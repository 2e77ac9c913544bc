"""Integration target `subinterp`: threads parked in the main interpreter and in a subinterpreter.

Usage: python subinterp.py OUTFILE. Python 3.14+ (threads in an isolated subinterpreter).
A thread of the main interpreter runs code in a subinterpreter (so the same OS thread has a
thread state in each), and that code starts a second thread inside the subinterpreter;
_subinterp_part.py, running there, reports its interpreter's threads to OUTFILE.sub, which
the main interpreter's reporter merges into OUTFILE.
"""
import os
import sys
import threading

import _parking
from _parking import FOREVER, LIFETIME

OUTFILE = sys.argv[1]
SUBFILE = OUTFILE + ".sub"
TARGETS_DIR = os.path.dirname(os.path.abspath(__file__))
P = _parking.Parking(OUTFILE, merge=[SUBFILE])

SUB_CODE = """\
import sys
sys.path.insert(0, %r)
import _subinterp_part
_subinterp_part.main(%r)
""" % (TARGETS_DIR, SUBFILE)


def run_in_subinterpreter():
    try:
        from concurrent import interpreters
    except ImportError:
        interpreters = None
    if interpreters is not None:
        interp = interpreters.create()
        P.arrive()
        interp.exec(SUB_CODE)
    else:
        import _interpreters
        interp_id = _interpreters.create()
        P.arrive()
        _interpreters.exec(interp_id, SUB_CODE)


def main_inner():
    P.arrive()
    FOREVER.wait(LIFETIME)


def main():
    if sys.version_info < (3, 14):
        sys.exit("subinterp: needs Python 3.14+, this is %s" % sys.version.split()[0])
    threading.Thread(target=run_in_subinterpreter, name="sub-runner", daemon=True).start()
    P.start_reporter(2)
    main_inner()


if __name__ == "__main__":
    main()
    # Do not finalize: the subinterpreter is still running.
    os._exit(0)
