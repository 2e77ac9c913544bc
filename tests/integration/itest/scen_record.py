"""The record scenario: pytop --record on targets/stacks.py (threads parked in known stacks),
then everything read back from the file: --replay --dump --json at several moments (each the
target's own view of its stacks), -b, and every --export format (the same stacks and counts in
each); a recording cut short by kill -9; and, on 3.15, CPython's own --binary recordings of the
same target read by --replay --export collapsed with the counts CPython's replay gives."""
import gzip
import json
import os
import shutil
import signal
import subprocess
import time

from .harness import (Fail, PYTOP_TIMEOUT, Problem, Skip, TARGET_START_TIMEOUT,
                      THREADS_GONE_TIMEOUT, UNSUPPORTED_RE, clean_env, run)
from .compare import all_threads, compare_self_report
from .scen_batch import json_lines
from .scen_stacks import labelled, wait_for_report, wait_for_threads

RECORD_ARGS = ["-r", "200", "-d", "0.5", "-n", "4"]   # 2 s, a snapshot every 0.5 s
AT_TIMES = ("0", "0.3", "1.1", "1.9")
SPAN_S = 2.0
FORMATS = ("collapsed", "speedscope", "pprof", "chrome")
KILL_AFTER = 6.5           # seconds: past the first whole chunk (5 s) of a recording
CPYTHON_SECONDS = "2"


def pytop(ctx, args, what, expect_status=0):
    r = run([ctx.pytop] + args, timeout=PYTOP_TIMEOUT + 10, env=clean_env())
    if r.returncode is None:
        raise Fail([Problem("pytop %s: no answer (killed)" % what)])
    if r.returncode == 1 and UNSUPPORTED_RE.search(r.err):
        raise Skip("pytop does not support this version (%s)" % r.err.splitlines()[0])
    if r.returncode != expect_status:
        raise Fail([Problem("pytop %s: exit status %s" % (what, r.returncode),
                            ["stderr: " + l for l in r.err.splitlines()[:10]])])
    return r


def collapsed_counts(text):
    """{stack line without its count: count}."""
    counts = {}
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(n)
    return counts


def pb_fields(buf):
    """The top-level fields of a protobuf message: [(number, value)] (bytes or int)."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = s = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7f) << s
            s += 7
            if not b & 0x80:
                return v
    while i < len(buf):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            out.append((num, varint()))
        elif wire == 2:
            n = varint()
            out.append((num, buf[i:i + n]))
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
    return out


def packed(value):
    """A packed repeated varint field (or one varint)."""
    if isinstance(value, int):
        return [value]
    out, i, v, s = [], 0, 0, 0
    for b in value:
        v |= (b & 0x7f) << s
        s += 7
        if not b & 0x80:
            out.append(v)
            v = s = 0
    return out


def pprof_total(data):
    """The samples/count total of a gzipped profile.proto."""
    total = 0
    for num, value in pb_fields(gzip.decompress(data)):
        if num == 2:    # Sample
            values = [v for n, w in pb_fields(value) if n == 2 for v in packed(w)]
            total += values[0] if values else 0
    return total


def export_problems(ctx, rec, workdir, counts, notes):
    """Every format's total count of thread-samples is collapsed's."""
    problems = []
    total = sum(counts.values())
    for fmt in FORMATS[1:]:
        out = os.path.join(workdir, "export." + fmt)
        pytop(ctx, ["--replay", rec, "--export", fmt, "-o", out], "--export " + fmt)
        with open(out, "rb") as f:
            data = f.read()
        if fmt == "speedscope":
            # Runs of one stack are one entry weighted by their time: the time adds up to
            # about the recording's span on each thread's profile.
            doc = json.loads(data.decode("utf-8"))
            profiles = doc.get("profiles") or []
            threads = {k.split(" ")[1] for k in counts}
            got = total
            if len(profiles) != len(threads):
                problems.append(Problem("speedscope: %d profiles for %d threads"
                                        % (len(profiles), len(threads))))
            for p in profiles:
                weight = sum(p.get("weights") or [])
                if len(p.get("samples") or []) != len(p.get("weights") or []) or \
                        not SPAN_S / 2 < weight < SPAN_S * 2:
                    problems.append(Problem("speedscope profile %r: %d samples, %d weights, "
                                            "%.3f s in all" % (p.get("name"),
                                                               len(p.get("samples") or []),
                                                               len(p.get("weights") or []),
                                                               weight)))
        elif fmt == "chrome":
            doc = json.loads(data.decode("utf-8"))
            events = doc.get("traceEvents") or []
            names = {e.get("args", {}).get("name") for e in events if e.get("ph") == "M"}
            got = total if events and names else -1
            if any(e.get("ph") == "X" and (e.get("dur", 0) < 0 or e.get("ts", 0) < 0)
                   for e in events):
                problems.append(Problem("chrome: an event with a negative time"))
        else:
            got = pprof_total(data)
            go = shutil.which("go")
            if go:
                r = run([go, "tool", "pprof", "-raw", out], timeout=120, env=clean_env())
                if r.returncode != 0:
                    problems.append(Problem("go tool pprof -raw %s: exit %s" % (out, r.returncode),
                                            r.err.splitlines()[:5]))
                else:
                    notes.append("go tool pprof -raw reads the pprof export")
        if got != total:
            problems.append(Problem("--export %s: %s thread-samples, collapsed has %d"
                                    % (fmt, got, total)))
    return problems


def replay_problems(ctx, py, expect, rec, workdir, notes):
    problems = []
    for at in AT_TIMES:
        r = pytop(ctx, ["--replay", rec, "--dump", "--json", "--at", at], "--replay --dump --at " + at)
        snap = json.loads(r.stdout.decode("utf-8"))
        problems += labelled("--replay --dump --json --at %s vs target" % at,
                             compare_self_report(expect, snap, py.version, columns=False))
        gc = [i.get("gc") for i in snap.get("interpreters") or []]
        if not gc or gc[0] is None:
            problems.append(Problem("--replay --dump --at %s: no GC state" % at))
    text = pytop(ctx, ["--replay", rec, "--dump"], "--replay --dump").stdout.decode("utf-8",
                                                                                   "replace")
    if "Thread " not in text:
        problems.append(Problem("--replay --dump (text): no thread", text.splitlines()[:5]))
    docs = json_lines(pytop(ctx, ["--replay", rec, "-b", "--json", "-d", "0.5"],
                            "--replay -b").stdout.decode("utf-8"), "--replay -b --json")
    if not 3 <= len(docs) <= 6:
        problems.append(Problem("--replay -b -d 0.5 of a 2 s recording: %d documents" % len(docs)))
    for n, doc in enumerate(docs):
        if not (doc.get("sampling") or {}).get("samples"):
            problems.append(Problem("--replay -b document %d: no samples" % n))
    collapsed = pytop(ctx, ["--replay", rec, "--export", "collapsed"], "--export collapsed")
    counts = collapsed_counts(collapsed.stdout.decode("utf-8"))
    tids = {t["native_id"] for i in expect["interpreters"] for t in i["threads"]}
    seen = {int(k.split(" ")[1]) for k in counts}
    if seen != tids:
        problems.append(Problem("--export collapsed: threads %s, the target has %s"
                                % (sorted(seen), sorted(tids))))
    notes.append("--export collapsed: %d stacks, %d thread-samples" % (len(counts),
                                                                         sum(counts.values())))
    problems += export_problems(ctx, rec, workdir, counts, notes)
    return problems


def killed_problems(ctx, pid, workdir, notes):
    """A recording whose writer is killed -9 is read up to its last whole chunk."""
    rec = os.path.join(workdir, "killed.pyrec")
    p = subprocess.Popen([ctx.pytop, "-p", str(pid), "--record", rec, "-r", "100"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
    time.sleep(KILL_AFTER)
    p.send_signal(signal.SIGKILL)
    p.wait()
    r = run([ctx.pytop, "--replay", rec, "--dump", "--json"], timeout=PYTOP_TIMEOUT,
            env=clean_env())
    problems = []
    if r.returncode != 0:
        problems.append(Problem("--replay of a recording cut by kill -9: exit %s" % r.returncode,
                                r.err.splitlines()[:5]))
    elif not all_threads(json.loads(r.stdout.decode("utf-8"))):
        problems.append(Problem("--replay of a recording cut by kill -9: no threads"))
    if "cut short" not in r.err:
        problems.append(Problem("--replay of a recording cut by kill -9 does not say it was cut "
                                "short", r.err.splitlines()[:5]))
    notes.append("kill -9 after %.1f s: %s" % (KILL_AFTER, r.err.strip()))
    return problems


def cpython_problems(ctx, py, pid, workdir, notes):
    """CPython 3.15's own recordings, read by pytop: the same stacks and counts."""
    problems = []
    for compression in ("zstd", "none"):
        rec = os.path.join(workdir, "cpython-%s.bin" % compression)
        r = run([py.path, "-m", "profiling.sampling", "attach", "--binary", "-a", "-r", "200",
                 "--compression", compression, "-d", CPYTHON_SECONDS, "-o", rec, str(pid)],
                timeout=PYTOP_TIMEOUT + 30, env=clean_env())
        if r.returncode != 0 or not os.path.exists(rec):
            problems.append(Problem("profiling.sampling attach --binary --compression %s: exit %s"
                                    % (compression, r.returncode), r.err.splitlines()[-5:]))
            continue
        ours = pytop(ctx, ["--replay", rec, "--export", "collapsed"], "--replay CPython's file")
        theirs = os.path.join(workdir, "cpython-%s.txt" % compression)
        r = run([py.path, "-m", "profiling.sampling", "replay", "--collapsed", "-o", theirs, rec],
                timeout=PYTOP_TIMEOUT + 30, env=clean_env())
        if r.returncode != 0:
            problems.append(Problem("profiling.sampling replay --collapsed: exit %s"
                                    % r.returncode, r.err.splitlines()[-5:]))
            continue
        with open(theirs, encoding="utf-8") as f:
            want = sorted(collapsed_counts(f.read()).values())
        got = sorted(collapsed_counts(ours.stdout.decode("utf-8")).values())
        if want != got:
            problems.append(Problem("CPython's %s recording: pytop's stacks count %s, CPython's "
                                    "replay %s" % (compression, got[:12], want[:12])))
        notes.append("CPython --binary (%s): %d stacks, %d thread-samples, the same counts"
                     % (compression, len(got), sum(got)))
    return problems


def check_record(ctx, py, proc, outfile, log_path, workdir, notes):
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    tids = {t["native_id"] for i in expect["interpreters"] for t in i["threads"]}
    wait_for_threads(proc.pid, len(tids), THREADS_GONE_TIMEOUT)
    rec = os.path.join(workdir, "stacks.pyrec")
    r = pytop(ctx, ["-p", str(proc.pid), "--record", rec] + RECORD_ARGS, "--record")
    notes.append("%s (%d bytes)" % (r.err.strip().splitlines()[-1], os.path.getsize(rec)))
    if os.stat(rec).st_mode & 0o777 != 0o600:
        raise Fail([Problem("the recording's mode is %o, not 600" % (os.stat(rec).st_mode & 0o777))])
    again = run([ctx.pytop, "-p", str(proc.pid), "--record", rec, "-n", "1"],
                timeout=PYTOP_TIMEOUT, env=clean_env())
    problems = []
    if again.returncode == 0:
        problems.append(Problem("--record over an existing file succeeded"))
    problems += replay_problems(ctx, py, expect, rec, workdir, notes)
    # Sampled straight into a profile: every thread, and its stack as the target says.
    folded = os.path.join(workdir, "live.folded")
    pytop(ctx, ["-p", str(proc.pid), "--export", "collapsed", "-d", "1", "-r", "100", "-o", folded],
          "-p --export collapsed")
    with open(folded, encoding="utf-8") as f:
        live = collapsed_counts(f.read())
    seen = {int(k.split(" ")[1]) for k in live}
    if seen != tids:
        problems.append(Problem("-p PID --export collapsed: threads %s, the target has %s"
                                % (sorted(seen), sorted(tids))))
    for i in expect["interpreters"]:
        for t in i["threads"]:
            inner = t["frames"][0]["function"] if t.get("frames") else None
            if inner and not any(k.startswith("thread %d " % t["native_id"]) and
                                 k.split(";")[-1].startswith(inner + " (")
                                 for k in live):
                problems.append(Problem("-p PID --export collapsed: thread %d's innermost "
                                        "function %s is in none of its stacks"
                                        % (t["native_id"], inner)))
    if py.version >= (3, 15):
        problems += killed_problems(ctx, proc.pid, workdir, notes)
        problems += cpython_problems(ctx, py, proc.pid, workdir, notes)
    if problems:
        raise Fail(problems)
