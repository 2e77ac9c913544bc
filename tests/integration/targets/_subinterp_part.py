"""The subinterpreter's half of the `subinterp` target: parks two threads and reports them.

Imported inside the subinterpreter by the code subinterp.py runs there.
"""
import threading
import time

import _parking
from _parking import FOREVER, LIFETIME


def sub_worker_inner(parking):
    parking.arrive()
    time.sleep(LIFETIME)


def sub_worker(parking):
    sub_worker_inner(parking)


def sub_main_inner(parking):
    parking.arrive()
    FOREVER.wait(LIFETIME)


def main(subfile):
    # The thread running this code is the subinterpreter's main thread (what CPython's
    # remote unwinder marks THREAD_STATUS_MAIN_THREAD); threading.main_thread() there names
    # the process's main thread instead. Isolated subinterpreters allow no daemon threads.
    parking = _parking.Parking(subfile, main_ident=threading.get_ident(), daemon=False)
    threading.Thread(target=sub_worker, args=(parking,), name="sub-wörker", daemon=False).start()
    parking.start_reporter(2)
    sub_main_inner(parking)
