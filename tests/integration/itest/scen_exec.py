"""The exec scenario: a target that exec()s another program."""
import json
import os
import re
import signal
import subprocess
import time

from .harness import (CHILDREN, Fail, PYTOP_TIMEOUT, Problem, Skip, TARGETS, TARGET_START_TIMEOUT,
                      UNSUPPORTED_RE, clean_env, discover)
from .compare import all_threads
from .scen_stacks import wait_for_report
from .scen_batch import json_lines


EXEC_STOP_S = 2.0     # the exec until pytop stopped by itself (the message is due within ~1 s)
EXEC_MARK_S = 1.5     # the exec until the first document that carries the mark
EXEC_MAX_CPU_S = 0.3  # pytop's CPU time from the exec until it stopped (nothing left to read)
EXEC_DELAY = "0.25"   # -d of the batch runs
EXEC_NOT_PYTHON_RE = r"process %d exec\(\)ed (\S*/)?sleep; it is no longer a Python process"


def cpu_seconds(pid):
    """The CPU time (user + system) process PID has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def wait_until(what, cond, timeout, alive=None):
    deadline = time.monotonic() + timeout
    while not cond():
        if alive is not None and alive.poll() is not None:
            raise Fail([Problem("%s: pytop ended first (status %s)" % (what, alive.returncode))])
        if time.monotonic() > deadline:
            raise Fail([Problem("%s: not within %.0f s" % (what, timeout))])
        time.sleep(0.01)


def reap(proc, timeout):
    """Waits for PROC up to TIMEOUT s; returns (exit status, CPU seconds of its whole run), or
    (None, None) after killing it when it did not end."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, ru.ru_utime + ru.ru_stime
        if time.monotonic() > deadline:
            CHILDREN.kill(proc)
            return None, None
        time.sleep(0.005)


class ExecRun:
    """pytop -b on one execer.py target, from before its exec until pytop stopped."""

    def __init__(self, ctx, proc, outfile, log_path, workdir, tag, rate, after, extra=()):
        self.expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
        self.out_path = os.path.join(workdir, "pytop-%s.out" % tag)
        err_path = os.path.join(workdir, "pytop-%s.err" % tag)
        cmd = [ctx.pytop, "-p", str(proc.pid), "-b", "--json", "-d", EXEC_DELAY, "-r", rate]
        cmd += list(extra)
        self.shown = "pytop %s (%s)" % (" ".join(cmd[1:]), tag)
        with open(self.out_path, "wb") as out, open(err_path, "wb") as err:
            pytop = CHILDREN.start(cmd, stdout=out, stderr=err, env=clean_env())
        try:
            try:
                wait_until(self.shown + ": 2 documents before the exec",
                           lambda: count_lines(self.out_path) >= 2, PYTOP_TIMEOUT, pytop)
            except Fail:
                with open(err_path, encoding="utf-8", errors="replace") as f:
                    err = f.read()
                if pytop.returncode == 1 and UNSUPPORTED_RE.search(err):
                    raise Skip("pytop does not support this version (%s)" % err.splitlines()[0])
                raise
            self.docs_before = count_lines(self.out_path)
            cpu_at_exec = cpu_seconds(pytop.pid)
            self.exec_time = time.time()
            started = time.monotonic()
            open(outfile + ".go", "w").close()
            self.after = None
            if after:
                self.after = wait_for_report(proc, outfile + ".after", log_path,
                                             TARGET_START_TIMEOUT)
                n = count_lines(self.out_path)
                wait_until(self.shown + ": 4 documents after the new program reported",
                           lambda: count_lines(self.out_path) >= n + 4, PYTOP_TIMEOUT, pytop)
                os.kill(pytop.pid, signal.SIGINT)
            self.status, cpu = reap(pytop, PYTOP_TIMEOUT if after else EXEC_STOP_S)
            self.seconds = time.monotonic() - started
            self.cpu = cpu - cpu_at_exec if cpu is not None else None
        finally:
            CHILDREN.kill(pytop)
        with open(err_path, encoding="utf-8", errors="replace") as f:
            self.err = f.read()
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            self.docs = json_lines(f.read(), self.shown)

    def stderr(self):
        return ["stderr: " + l for l in self.err.splitlines()[:10]]


def thread_frames(doc):
    """{thread name: [function, ...]} of DOC, innermost first."""
    return {t.get("name"): [f.get("function") for f in t.get("frames") or []]
            for _, t in all_threads(doc)}


def exec_rate_problems(run, rate_hz):
    """Failed samples never come faster than the rate (1 000/s at --rate max)."""
    problems = []
    for i, d in enumerate(run.docs):
        s = d.get("sampling") or {}
        errors, window = s.get("errors"), s.get("window_s") or float(EXEC_DELAY)
        if not isinstance(errors, int) or errors > (rate_hz or 1000) * window + 2:
            problems.append(Problem("%s: document %d: %r failed samples in %s s" % (
                run.shown, i + 1, errors, window), [json.dumps(s)]))
    return problems


def check_exec_not_python(run, pid, rate_hz):
    """The target exec()ed /bin/sleep: pytop stops by itself, soon, saying so, with status 1."""
    problems = []
    if run.status is None:
        return [Problem("%s: still running %.1f s after the exec (killed)" % (
            run.shown, EXEC_STOP_S), run.stderr())]
    if run.status != 1 or not re.search(EXEC_NOT_PYTHON_RE % pid, run.err):
        problems.append(Problem("%s: exit status %s, expected 1 and the line \"process %d "
                                "exec()ed /usr/bin/sleep; it is no longer a Python process\""
                                % (run.shown, run.status, pid), run.stderr()))
    if run.cpu is None or run.cpu > EXEC_MAX_CPU_S:
        problems.append(Problem("%s: %s s of CPU from the exec until it stopped, at most %s" % (
            run.shown, run.cpu, EXEC_MAX_CPU_S)))
    if not run.docs or "before_exec" not in thread_frames(run.docs[0]).get("MainThread", []):
        problems.append(Problem("%s: the first document does not show before_exec" % run.shown,
                                [json.dumps(run.docs[:1])[:300]]))
    return problems + exec_rate_problems(run, rate_hz)


def check_exec_python(run, tag):
    """The target exec()ed a Python: pytop goes on, and from the document with the mark on shows
    the new program."""
    shown, after = run.shown, run.after
    problems = []
    if run.status != 0 or "following the new program" not in run.err:
        problems.append(Problem("%s: exit status %s, expected 0 and 'following the new program' "
                                "on stderr" % (shown, run.status), run.stderr()))
    marks = [i for i, d in enumerate(run.docs) if d.get("exec") is not None]
    if len(marks) != 1:
        return problems + [Problem("%s: %d documents carry \"exec\", expected 1" % (
            shown, len(marks)), [json.dumps(d.get("exec")) for d in run.docs])]
    m = marks[0]
    mark = run.docs[m]["exec"]
    if os.path.realpath(str(mark.get("program"))) != after["executable"]:
        problems.append(Problem("%s: exec.program %r, expected %r" % (
            shown, mark.get("program"), after["executable"])))
    if not isinstance(mark.get("time"), (int, float)) or not (
            run.exec_time - 0.1 <= mark["time"] <= run.exec_time + EXEC_MARK_S):
        problems.append(Problem("%s: exec.time %r, the exec was at %.3f (within %s s)" % (
            shown, mark.get("time"), run.exec_time, EXEC_MARK_S)))
    if "before_exec" not in thread_frames(run.docs[0]).get("MainThread", []):
        problems.append(Problem("%s: the first document does not show before_exec" % shown))
    settled = 0
    for i, d in enumerate(run.docs[m:], m + 1):
        frames = thread_frames(d)
        version = (d.get("python") or {}).get("version")
        if version != after["version"]:
            problems.append(Problem("%s: document %d (the mark is %d): Python %r, expected %r"
                                    % (shown, i, m + 1, version, after["version"])))
        old = [n for n, f in frames.items() if "before_exec" in f or "before_exec_worker" in f]
        if old:
            problems.append(Problem("%s: document %d, after the mark, shows the old program's "
                                    "threads %s" % (shown, i, old)))
        if (d.get("time") or 0) > after["time"] and i > m + 1:
            # The report's time is taken before it is written: until the main thread reaches
            # after_exec_main it is still in the new program's main() (writing the report);
            # from the first document that shows it there on, every one must.
            main = frames.get("MainThread", [None])
            there = (main[:1] == ["after_exec_main"]
                     and frames.get("after-exec-worker", [None])[:1] == ["after_exec_worker"])
            settled += there
            if not there and (settled or main[-2:] != ["main", "<module>"]):
                problems.append(Problem("%s: document %d: threads %s; expected MainThread in "
                                        "after_exec_main, after-exec-worker in "
                                        "after_exec_worker" % (shown, i, frames)))
    if settled == 0:
        problems.append(Problem("%s: no document after the new program reported shows it "
                                "settled" % shown))
    return problems


def other_python(ctx, py):
    """A release interpreter of another minor version than PY's, for an exec into it; None."""
    if ctx.pythons is None:
        ctx.pythons = discover(lambda text: None)[0]
    others = [p for p in ctx.pythons if p.minor != py.minor and not p.debug
              and p.version >= (3, 8)]
    return others[0] if others else None


def exec_target(py, workdir, tag, nxt):
    outfile = os.path.join(workdir, "expect-%s.json" % tag)
    log_path = os.path.join(workdir, "target-%s.log" % tag)
    with open(log_path, "wb") as log:
        proc = CHILDREN.start([py.path, os.path.join(TARGETS, "execer.py"), outfile, nxt],
                              stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=clean_env())
    return proc, outfile, log_path


def check_exec(ctx, py, proc, outfile, log_path, workdir, notes):
    """exec(): into /bin/sleep (at 100 Hz and --rate max), into the same Python running this
    script again (also under --blocking at 1 kHz), and into another version: pytop -b stops or
    follows (docstrings above)."""
    problems = []
    run = ExecRun(ctx, proc, outfile, log_path, workdir, "sleep", "100", after=False)
    problems += check_exec_not_python(run, proc.pid, 100)
    notes.append("sleep, 100 Hz: stopped %.2f s after the exec, %s s CPU, status %s" % (
        run.seconds, run.cpu, run.status))
    runs = [("sleep-max", "sleep")]
    runs.append(("same", py.path))
    runs.append(("blocking", py.path))
    other = other_python(ctx, py)
    if other is not None:
        runs.append(("other", other.path))
    else:
        notes.append("no interpreter of another version: the exec into one is not tried")
    for tag, nxt in runs:
        t_proc, t_out, t_log = exec_target(py, workdir, tag, nxt)
        try:
            if nxt == "sleep":
                run = ExecRun(ctx, t_proc, t_out, t_log, workdir, tag, "max", after=False)
                problems += check_exec_not_python(run, t_proc.pid, 0)
                notes.append("sleep, --rate max: stopped %.2f s after the exec, %s s CPU" % (
                    run.seconds, run.cpu))
            else:
                # --blocking at 1 kHz: the exec starts while pytop has threads stopped; it
                # must neither hang the target (the exec waits for them) nor lose it.
                blocking = tag == "blocking"
                run = ExecRun(ctx, t_proc, t_out, t_log, workdir, tag, "1k" if blocking else "100",
                              after=True, extra=["--blocking"] if blocking else [])
                problems += check_exec_python(run, tag)
                marks = [d for d in run.docs if d.get("exec")]
                notes.append("%s (%s): the mark %.2f s after the exec" % (
                    tag, nxt, marks[0]["exec"]["time"] - run.exec_time if marks else -1))
        finally:
            CHILDREN.kill(t_proc)
    if problems:
        raise Fail(problems)


def unused_pid():
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) - 1
    except (OSError, ValueError):
        pid = 32767
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


def wait_for_exec(pid, name, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.path.basename(os.readlink("/proc/%d/exe" % pid)) == name:
                return
        except OSError:
            pass
        time.sleep(0.002)
