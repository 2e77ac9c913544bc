"""TUI target: a server whose two workers deadlock on two RLocks (each holds one, waits for the
other), a reader blocked in recv on a local TCP connection, and the main thread asleep. Prints
"pid N" once every worker is blocked."""
import os
import socket
import threading
import time

db_lock = threading.RLock()
cache_lock = threading.RLock()
both = threading.Barrier(2)


def web(mine, other):
    with mine:
        both.wait()
        time.sleep(0.1)
        with other:
            pass


threading.Thread(target=web, args=(db_lock, cache_lock), name="web-1", daemon=True).start()
threading.Thread(target=web, args=(cache_lock, db_lock), name="web-2", daemon=True).start()
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.create_connection(server.getsockname())
conn, _ = server.accept()
threading.Thread(target=lambda: conn.recv(16), name="reader", daemon=True).start()


def blocked(name):
    for t in threading.enumerate():
        if t.name == name:
            with open("/proc/self/task/%d/stat" % t.native_id) as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "S"
    return False


while not all(blocked(n) for n in ("web-1", "web-2", "reader")):
    time.sleep(0.05)
time.sleep(0.3)
print("pid", os.getpid(), flush=True)
print("endpoints", "%s:%d->%s:%d" % (conn.getsockname() + conn.getpeername()), flush=True)
time.sleep(3600)
