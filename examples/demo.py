"""A busy Python process to point pytop at: `pytop -p PID`.

Runs until killed. It starts named threads that each keep one kind of activity
going, so every part of pytop's screen has something to show:

  web-1, web-2   request handlers (classes, closures) blocked in socket reads,
                 waiting on the DB pool, then rendering
  load-gen       feeds the web threads requests over socket pairs
  db-pool        takes queries from a queue; "I/O" waits, sometimes a timeout
                 handled by sleeping inside an `except` block
  cpu-burner     pure-Python arithmetic in nested functions, in bursts: often
                 on a CPU and holding the GIL
  pipeline       a chain of generators (source -> parse -> filter -> window)
  gc-churn       builds and drops reference cycles, so the cyclic GC runs
  asyncio-loop   an event loop with a tree of tasks (gather, tasks awaiting
                 tasks, asyncio.sleep, a TaskGroup where Python has one)
  MainThread     a supervisor, asleep most of the time

Works on Python 3.8 and later: keep the syntax to what 3.8 accepts.
"""

import asyncio
import gc
import os
import queue
import random
import signal
import socket
import sys
import threading
import time

# Seeded, so that runs look alike.
RNG = random.Random(1234)


def set_os_thread_name(name):
    """Name the OS thread too (what `top -H` and /proc/PID/task/TID/comm show).

    Python 3.14 does this itself in threading; older versions do not, so do it
    here where we can, and ignore failure (not Linux, no ctypes)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_name = 15
        libc.prctl(pr_set_name, ctypes.c_char_p(name.encode()[:15]), ctypes.c_ulong(0),
                   ctypes.c_ulong(0), ctypes.c_ulong(0))
    except Exception:
        pass


def allow_any_tracer():
    """Let pytop read this process without root under kernel.yama.ptrace_scope=1.

    Under Yama's scope 1, only an ancestor may read a process's memory;
    pytop started from another shell is not one. A demo can waive that (real
    programs should not): PR_SET_PTRACER with PR_SET_PTRACER_ANY. Harmless
    where Yama is off, and no help under scope 2 or 3."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_ptracer = 0x59616D61
        pr_set_ptracer_any = ctypes.c_ulong(-1)
        libc.prctl(pr_set_ptracer, pr_set_ptracer_any, ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0))
    except Exception:
        pass


def start_thread(name, target, *args):
    def main():
        set_os_thread_name(name)
        target(*args)

    t = threading.Thread(name=name, target=main, daemon=True)
    t.start()
    return t


# --- db-pool: a queue of queries, answered after simulated I/O -----------------


class QueryTimeout(Exception):
    pass


class Query:
    def __init__(self, sql):
        self.sql = sql
        self.done = threading.Event()
        self.rows = None


class Connection:
    def __init__(self, dsn):
        self.dsn = dsn
        self.executed = 0

    def execute(self, sql):
        plan = self._plan(sql)
        return self._fetch(plan)

    def _plan(self, sql):
        # A little CPU work: "parse" the statement.
        words = sql.lower().split()
        return {"table": words[-1] if words else "?", "cost": sum(len(w) for w in words)}

    def _fetch(self, plan):
        self.executed += 1
        if self.executed % 17 == 0:
            raise QueryTimeout("timed out reading from %s" % self.dsn)
        time.sleep(RNG.uniform(0.02, 0.15))  # waiting for the database
        return [(plan["table"], i) for i in range(plan["cost"] % 7 + 1)]


class DbPool:
    def __init__(self, dsn):
        self.requests = queue.Queue()
        self.conn = Connection(dsn)

    def query(self, sql, timeout=2.0):
        """Called from other threads: blocks until db-pool answers."""
        q = Query(sql)
        self.requests.put(q)
        q.done.wait(timeout)
        return q.rows

    def serve_forever(self):
        while True:
            q = self.requests.get()
            q.rows = self.run_with_retry(q.sql)
            q.done.set()

    def run_with_retry(self, sql):
        for attempt in range(3):
            try:
                return self.conn.execute(sql)
            except QueryTimeout:
                # Back off while the exception is being handled, so the
                # thread shows as having an exception for a moment.
                time.sleep(0.3 * (attempt + 1))
        return []


# --- web-1, web-2: blocking socket reads, then DB and rendering ------------------


def make_renderer(template):
    """Returns a closure: its frames show as make_renderer.<locals>.render."""
    cache = {}

    def render(context):
        def escape(value):
            text = str(value)
            for bad, good in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
                text = text.replace(bad, good)
            return text

        key = tuple(sorted(context.items()))
        if key not in cache:
            body = template
            for name, value in context.items():
                body = body.replace("{" + name + "}", escape(value))
            cache[key] = body
            if len(cache) > 256:
                cache.clear()
        return cache[key]

    return render


class WebServer:
    def __init__(self, name, conn, db):
        self.name = name
        self.conn = conn
        self.db = db
        self.render_page = make_renderer("<h1>{title}</h1><p>{rows} rows for {path}</p>")
        self.served = 0

    def serve_forever(self):
        buf = b""
        while True:
            data = self.conn.recv(4096)  # blocked in I/O most of the time
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.handle_request(line.decode())

    def handle_request(self, line):
        method, path = (line.split(" ", 1) + ["/"])[:2]
        handler = self.route(path)
        page = handler(path)
        self.served += 1
        return method, len(page)

    def route(self, path):
        if path.startswith("/api/"):
            return self.api_endpoint
        return self.page_endpoint

    def api_endpoint(self, path):
        rows = self.db.query("select * from " + path.rsplit("/", 1)[-1])
        return repr(rows)

    def page_endpoint(self, path):
        rows = self.db.query("select title from pages")
        return self.render_page({"title": path.strip("/") or "home", "rows": len(rows or ()),
                                 "path": path})


def generate_load(sockets):
    paths = ["/", "/about", "/api/users", "/api/orders", "/blog/2024", "/api/items"]
    while True:
        for sock in sockets:
            sock.sendall(("GET %s\n" % RNG.choice(paths)).encode())
        time.sleep(RNG.uniform(0.1, 0.4))


# --- cpu-burner: pure-Python arithmetic, nested calls ---------------------------


class Simulation:
    def __init__(self):
        self.t = 0.0
        self.energy = 0.0

    def run(self):
        while True:
            deadline = time.monotonic() + 0.4
            while time.monotonic() < deadline:
                self.step()
            time.sleep(0.05)  # a short breather: idle between bursts

    def step(self):
        self.t += 0.01
        self.energy = integrate(potential(self.t), 0.0, 1.0, 2000)
        self.energy += mandelbrot_row(self.t % 1.0 - 0.5, 60)


def potential(t):
    def field(x):
        # Closure over t: shows as potential.<locals>.field.
        return (x * x - t) * (x - 0.5 * t) / (1.0 + x * x)

    return field


def integrate(f, a, b, n):
    h = (b - a) / n
    total = 0.5 * (f(a) + f(b))
    for i in range(1, n):
        total += f(a + i * h)
    return total * h


def mandelbrot_row(y, width):
    def escape_time(c, limit=50):
        z = 0j
        for i in range(limit):
            z = z * z + c
            if abs(z) > 2.0:
                return i
        return limit

    return sum(escape_time(complex(-2.0 + 2.5 * x / width, y)) for x in range(width))


# --- pipeline: a chain of generators --------------------------------------------


def read_records():
    """The source: a slow producer, like a tailed log file."""
    levels = ["INFO"] * 6 + ["WARNING"] * 2 + ["ERROR"]
    n = 0
    while True:
        n += 1
        time.sleep(0.01)
        yield "%d %s request %d took %dms" % (time.time(), RNG.choice(levels), n,
                                              RNG.randint(1, 900))


def parse(lines):
    for line in lines:
        stamp, level, rest = line.split(" ", 2)
        yield {"time": int(stamp), "level": level, "ms": int(rest.rsplit(" ", 1)[-1][:-2])}


def only_slow_or_failed(records):
    for record in records:
        if record["level"] != "INFO" or record["ms"] > 500:
            yield record


def windows(records, size):
    window = []
    for record in records:
        window.append(record)
        if len(window) == size:
            yield window
            window = []


def summarize_forever():
    stats = {}
    for window in windows(only_slow_or_failed(parse(read_records())), 10):
        for record in window:
            stats[record["level"]] = stats.get(record["level"], 0) + 1


# --- gc-churn: reference cycles for the cyclic garbage collector ----------------


class Node:
    def __init__(self, parent=None):
        self.parent = parent
        self.children = []
        self.attrs = {"self": self}  # a cycle through a dict, too
        if parent is not None:
            parent.children.append(self)


def build_tree(depth, fanout):
    root = Node()
    level = [root]
    for _ in range(depth):
        nxt = []
        for node in level:
            for _ in range(fanout):
                nxt.append(Node(node))
        level = nxt
    return root


def churn_garbage():
    survivors = []
    while True:
        for _ in range(20):
            tree = build_tree(4, 4)  # 341 nodes, every one in a cycle
            del tree
        # Keep a few alive for a while so older generations fill up too.
        survivors.append(build_tree(3, 3))
        if len(survivors) > 50:
            del survivors[:25]
        time.sleep(0.05)


# --- asyncio-loop: a tree of tasks ----------------------------------------------


async def resolve(host):
    await asyncio.sleep(RNG.uniform(0.2, 1.0))
    return "10.0.0.%d" % (hash(host) % 250 + 1)


async def download(address, path):
    await asyncio.sleep(RNG.uniform(0.5, 2.0))
    return len(address) + len(path)


async def fetch(url):
    host, _, path = url.partition("/")
    # A task awaiting another task: shows in the awaited-by graph.
    address = await asyncio.create_task(resolve(host), name="resolve " + host)
    return await download(address, "/" + path)


async def crawler():
    urls = ["example.org/", "example.com/index", "python.org/downloads"]
    while True:
        tasks = [asyncio.create_task(fetch(u), name="fetch " + u) for u in urls]
        await asyncio.gather(*tasks)
        await asyncio.sleep(0.2)


async def ticker(period):
    n = 0
    while True:
        await asyncio.sleep(period)
        n += 1


class Worker:
    def __init__(self, name, jobs):
        self.name = name
        self.jobs = jobs

    async def run(self):
        while True:
            job = await self.jobs.get()
            await self.process(job)
            self.jobs.task_done()

    async def process(self, job):
        await asyncio.sleep(0.3 + 0.1 * (job % 5))


async def producer(jobs):
    n = 0
    while True:
        await jobs.put(n)
        n += 1
        await asyncio.sleep(0.25)


async def worker_pool():
    jobs = asyncio.Queue(maxsize=8)
    workers = [Worker("worker-%d" % i, jobs) for i in range(2)]
    children = [asyncio.create_task(w.run(), name=w.name) for w in workers]
    children.append(asyncio.create_task(producer(jobs), name="producer"))
    await asyncio.gather(*children)


async def heartbeat():
    while True:
        await asyncio.sleep(1.5)


async def supervised():
    """Children in a TaskGroup where there is one (3.11+), else gather."""
    if hasattr(asyncio, "TaskGroup"):
        async with asyncio.TaskGroup() as group:
            group.create_task(heartbeat(), name="heartbeat")
            group.create_task(ticker(0.7), name="slow-ticker")
    else:
        await asyncio.gather(asyncio.create_task(heartbeat(), name="heartbeat"),
                             asyncio.create_task(ticker(0.7), name="slow-ticker"))


async def async_main(ready):
    asyncio.current_task().set_name("main")
    ready.set()
    await asyncio.gather(
        asyncio.create_task(crawler(), name="crawler"),
        asyncio.create_task(ticker(0.5), name="ticker"),
        asyncio.create_task(worker_pool(), name="worker-pool"),
        asyncio.create_task(supervised(), name="supervised"),
    )


def run_event_loop(ready):
    asyncio.run(async_main(ready))


# --- main thread -----------------------------------------------------------------


class Supervisor:
    def __init__(self, threads):
        self.threads = threads

    def watch(self):
        while True:
            time.sleep(1.0)
            for t in self.threads:
                if not t.is_alive():
                    sys.stderr.write("demo.py: thread %s died\n" % t.name)
                    os._exit(1)


def main():
    # Leave quietly on Ctrl-C or kill: no tracebacks from daemon threads.
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(0))
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    allow_any_tracer()

    db = DbPool("postgres://db.internal/shop")
    threads = [start_thread("db-pool", db.serve_forever)]

    clients = []
    for i in (1, 2):
        client, server = socket.socketpair()
        clients.append(client)
        name = "web-%d" % i
        threads.append(start_thread(name, WebServer(name, server, db).serve_forever))
    threads.append(start_thread("load-gen", generate_load, clients))
    threads.append(start_thread("cpu-burner", Simulation().run))
    threads.append(start_thread("pipeline", summarize_forever))
    threads.append(start_thread("gc-churn", churn_garbage))

    ready = threading.Event()
    threads.append(start_thread("asyncio-loop", run_event_loop, ready))
    if not ready.wait(10.0):
        sys.stderr.write("demo.py: the event loop did not start\n")
        os._exit(1)
    gc.collect()

    pid = os.getpid()
    print("pid %d" % pid)
    print("pytop demo on Python %s: threads %s (an event loop of tasks); "
          "watch it with: pytop -p %d" % (sys.version.split()[0],
                                          ", ".join(t.name for t in threads), pid))
    sys.stdout.flush()

    Supervisor(threads).watch()


if __name__ == "__main__":
    main()
