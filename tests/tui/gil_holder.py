"""A Python process for pytop's TUI tests whose GIL holder does not change: a thread with a long
name (billing-reconciler-main) calls libc's sleep() through ctypes.PyDLL, which keeps the GIL,
so the main thread and billing-exporter-2 wait for the GIL for as long as it runs. No CPU is
spent. Prints "pid N" first. SIGTERM ends it (the default action: no Python handler could run).
Python 3.8+.
"""
import ctypes
import os
import sys
import threading
import time


def name_os_thread(name):
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except Exception:
        pass


def export_wait():
    name_os_thread("billing-export")
    while True:
        time.sleep(0.01)


def reconcile_hold():
    name_os_thread("billing-reconc")
    ctypes.PyDLL(None).sleep(3600)


def main():
    threading.Thread(name="billing-exporter-2", target=export_wait, daemon=True).start()
    time.sleep(0.1)
    print("pid %d" % os.getpid(), flush=True)
    threading.Thread(name="billing-reconciler-main", target=reconcile_hold, daemon=True).start()
    while True:
        time.sleep(0.01)


if __name__ == "__main__":
    main()
