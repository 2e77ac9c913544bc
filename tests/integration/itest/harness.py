"""The child processes the suite starts, the interpreters it finds, and how a run's results
are told."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time


HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRCDIR = os.environ.get("PYTOP_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
TARGETS = os.path.join(SRCDIR, "tests", "integration", "targets")
REMOTE_UNWIND = os.path.join(SRCDIR, "tests", "integration", "remote_unwind.py")
REMOTE_TASKS = os.path.join(SRCDIR, "tests", "integration", "remote_tasks.py")
REMOTE_GC = os.path.join(SRCDIR, "tests", "integration", "remote_gc.py")
REMOTE_MODES = os.path.join(SRCDIR, "tests", "integration", "remote_modes.py")

SCENARIOS = ("errors", "stacks", "subinterp", "manythreads", "batch", "codereuse", "churn",
             "wronglayout", "tasks", "taskcycle", "gc", "gcwait", "hostile", "initshim", "genexc",
             "exec", "idle", "latename", "forkname", "output", "incident", "modes", "schedule",
             "waits", "record")
# Versions pytop means to support (DESIGN.md); each one not found is reported as skipped.
KNOWN_MINORS = [(3, m) for m in range(15, 5, -1)] + [(2, 7)]
MIN_TARGET_VERSION = (2, 7)

TARGET_START_TIMEOUT = 60.0   # target started until it wrote OUTFILE (debug builds, loaded CI)
THREADS_GONE_TIMEOUT = 10.0   # OUTFILE written until the reporter threads have exited
PYTOP_TIMEOUT = 30.0
MAX_DUMP_SECONDS = float(os.environ.get("PYTOP_TEST_MAX_DUMP_SECONDS", "5"))

UNSUPPORTED_RE = re.compile(r"not supported|unsupported", re.I)
NOT_PYTHON_RE = re.compile(r"not\s+(a\s+)?python|no\s+python\s+(interpreter|runtime)", re.I)


class Interrupted(Exception):
    pass


# ---------------------------------------------------------------- child processes

class Children:
    """Every process the suite starts, so that all of them die with it (even on Ctrl-C)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.procs = set()
        self.stopping = False

    def start(self, cmd, **kwargs):
        # Own session: a Ctrl-C in the terminal reaches the suite only; it kills the rest.
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs["env"] = SANITIZERS.env(kwargs.get("env"))
        with self.lock:
            if self.stopping:
                raise Interrupted()
            proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
            self.procs.add(proc)
        return proc

    def kill(self, proc):
        # Only while not yet reaped: then its pid (and group) cannot belong to anyone else.
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        with self.lock:
            self.procs.discard(proc)

    def kill_all(self):
        with self.lock:
            self.stopping = True
            procs = list(self.procs)
        for proc in procs:
            self.kill(proc)


CHILDREN = Children()


class Sanitizers:
    """Where a sanitizer build of pytop (--enable-sanitizers[=thread]) writes what it finds: a
    file per process under a prefix of the scenario run that started it (the thread running it
    names it), instead of stderr. Any report fails that run. Harmless for other programs."""

    # Defaults, then the caller's options, then where the reports go. TSan's own default would
    # let a race go by.
    OPTIONS = (("ASAN_OPTIONS", ""), ("UBSAN_OPTIONS", ""),
               ("TSAN_OPTIONS", "halt_on_error=1:exitcode=66"))

    def __init__(self):
        self.dir = None
        self.local = threading.local()
        self.lock = threading.Lock()
        self.runs = 0

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="pytop-it-sanitizer.")

    def stop(self):
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def begin(self):
        """Reports of processes this thread starts from now on belong to a new run."""
        with self.lock:
            self.runs += 1
            self.local.prefix = os.path.join(self.dir, "run%d" % self.runs)

    def env(self, env):
        """ENV (None: the suite's own) with the sanitizers' reports sent to this run's files."""
        if self.dir is None:
            return env
        prefix = getattr(self.local, "prefix", None) or os.path.join(self.dir, "unattributed")
        env = dict(os.environ if env is None else env)
        for name, ours in self.OPTIONS:
            env[name] = ":".join(o for o in (ours, env.get(name), "log_path=" + prefix) if o)
        return env

    def reports(self, prefix=None):
        """The reports since begin() (PREFIX None), or of files under PREFIX, as one headline and
        their lines (None: no report); then forgets them."""
        prefix = prefix or getattr(self.local, "prefix", None)
        paths = sorted(glob.glob(glob.escape(prefix) + ".*")) if prefix else []
        lines = []
        for path in paths:
            with open(path, errors="replace") as f:
                text = f.read(8192)
            lines += ["%s:" % os.path.basename(path)] + ["  " + l for l in text.splitlines()]
            os.unlink(path)
        if not paths:
            return None
        return "pytop's sanitizer reported %d problem(s)" % len(paths), lines


class HeldReporter:
    """Holds back the result line of one run until its sanitizer reports are in: any turns it
    into a FAIL that shows them."""

    def __init__(self, rep):
        self.rep = rep
        self.result = None

    def line(self, status, what, reason=None, details=(), notes=()):
        self.result = (status, what, reason, list(details), notes)

    def log(self, text):
        self.rep.log(text)

    def release(self, what, prefix=None):
        status, what, reason, details, notes = self.result or (None, what, None, [], ())
        found = SANITIZERS.reports(prefix)
        if found is not None:
            reason = "; ".join(r for r in (found[0], reason if status == "FAIL" else None) if r)
            status = "FAIL"
            details = found[1] + details
        if status is not None:
            self.rep.line(status, what, reason, details, notes)


SANITIZERS = Sanitizers()


class Run:
    def __init__(self, returncode, stdout, stderr, seconds):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds

    @property
    def err(self):
        return self.stderr.decode("utf-8", "replace").strip()


def run(cmd, timeout, cwd=None, env=None):
    """Runs CMD to completion; returncode None means it timed out (and was killed)."""
    started = time.monotonic()
    proc = CHILDREN.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        CHILDREN.kill(proc)
        out, err = proc.communicate()
        code = None
    finally:
        CHILDREN.kill(proc)
    return Run(code, out, err, time.monotonic() - started)


def clean_env(**extra):
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONSAFEPATH"):
        env.pop(name, None)
    # Targets import helpers from the source tree: leave no __pycache__ there.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


# ---------------------------------------------------------------- interpreters

PROBE = ("import sys, json; sys.stdout.write(json.dumps({'version': list(sys.version_info[:3]), "
         "'hexversion': sys.hexversion, 'debug': hasattr(sys, 'gettotalrefcount'), "
         "'abiflags': getattr(sys, 'abiflags', ''), 'executable': sys.executable}))")


class Python:
    def __init__(self, path, info):
        self.path = path
        self.version = tuple(info["version"])
        self.hexversion = info["hexversion"]
        self.debug = info["debug"]
        self.executable = info["executable"] or path
        self.label = "%d.%d.%d" % self.version + ("d" if self.debug else "")
        if "t" in info["abiflags"]:
            self.label += "t"

    @property
    def minor(self):
        return self.version[:2]


def probe(path):
    """A Python for PATH, or None (and why) when it does not run."""
    try:
        r = run([path, "-c", PROBE], timeout=20)
    except OSError as e:
        return None, str(e)
    if r.returncode != 0:
        return None, "exit %s: %s" % (r.returncode, (r.err.splitlines() or [""])[-1])
    try:
        return Python(path, json.loads(r.stdout.decode())), None
    except (ValueError, KeyError) as e:
        return None, "unexpected probe output (%s)" % e


def candidate_paths():
    """Interpreter paths in the order DESIGN.md's Testing section gives."""
    explicit = os.environ.get("PYTOP_TEST_PYTHONS")
    if explicit:
        return [p for p in explicit.split(":") if p], True
    paths = []
    cache = os.environ.get("PYTOP_PYTHONS_DIR", "/var/cache/pytop-pythons")
    bindir = os.path.join(cache, "root", "usr", "bin")
    paths += [p for p in sorted(glob.glob(os.path.join(bindir, "python3.1[0-9]*")))
              if re.fullmatch(r"python3\.1[0-9][dt]?", os.path.basename(p))]
    for bindir in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin"))):
        paths += [p for p in sorted(glob.glob(os.path.join(bindir, "python*")))
                  if re.fullmatch(r"python(3\.\d+|2\.7)", os.path.basename(p))]
    for bindir in os.environ.get("PATH", "").split(os.pathsep):
        # pyenv's shims only run the pyenv versions found above (slowly, if at all).
        if bindir and os.path.basename(os.path.normpath(bindir)) != "shims":
            paths += [p for p in sorted(glob.glob(os.path.join(bindir, "python3.*")))
                      if re.fullmatch(r"python3\.\d+", os.path.basename(p))]
    return paths, False


def discover(log):
    """Runnable interpreters (deduplicated, newest first) and skip lines for the rest."""
    paths, explicit = candidate_paths()
    unique = []
    for path in paths:
        if os.path.realpath(path) not in {os.path.realpath(p) for p in unique}:
            unique.append(path)
    probes = {}
    threads = [threading.Thread(target=lambda p=p: probes.__setitem__(p, probe(p)))
               for p in unique]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = []
    seen = set()
    skips = []
    for path in unique:
        py, why = probes[path]
        if py is None:
            if explicit:
                skips.append("SKIP ? %s: does not run (%s)" % (path, why))
            else:
                log("  not used: %s (%s)" % (path, why))
            continue
        keys = {os.path.realpath(path), os.path.realpath(py.executable)}
        if keys & seen:
            log("  duplicate: %s" % path)
            continue
        seen |= keys
        found.append(py)
    found.sort(key=lambda p: (p.version, not p.debug), reverse=True)
    return found, skips


# ---------------------------------------------------------------- results

class Problem:
    """One failed comparison: a headline and the lines that show it (a diff)."""

    def __init__(self, headline, details=()):
        self.headline = headline
        self.details = list(details)


class Skip(Exception):
    pass


class Fail(Exception):
    def __init__(self, problems):
        super().__init__(problems[0].headline)
        self.problems = problems


def q(s):
    return "null" if s is None else '"%s"' % s
