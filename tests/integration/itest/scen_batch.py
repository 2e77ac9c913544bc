"""Batch mode (pytop -b): the manythreads, batch, codereuse, idle, latename and churn scenarios."""
import json
import os
import re
import signal
import subprocess
import time

from .harness import (CHILDREN, Fail, PYTOP_TIMEOUT, Problem, Skip, TARGET_START_TIMEOUT,
                      UNSUPPORTED_RE, clean_env, q, run)
from .compare import PYTOP_HEADER_RE, all_threads, parse_text_dump
from .scen_stacks import check_target, pytop_dump, wait_for_report


# What a warm sample of the 50 parked threads may cost in reads (DESIGN.md, the hot path): one
# batched read from 3.11 on; before it their 1 250 frame objects fill more than one call (the
# kernel takes 1024 regions a call), and the tids and code objects then need one each: 4.
MAX_WARM_READS = 6


def check_manythreads(ctx, py, proc, outfile, log_path, workdir, notes):
    """The common checks, then the reader's cost: a second interval of `pytop -b` (warm caches)
    must stay within MAX_WARM_READS reads a sample."""
    check_target(ctx, py, proc, outfile, log_path, workdir, notes)
    r = pytop_batch(ctx, proc.pid, ["-n", "2", "-d", "1", "--json"])
    docs = json_lines(r.stdout.decode("utf-8", "replace"), "pytop -b --json")
    doc = docs[-1] if docs else {}
    samples = (doc.get("sampling") or {}).get("samples") or 0
    reads = (doc.get("reader") or {}).get("reads")
    if not samples or not isinstance(reads, int):
        raise Fail([Problem("pytop -b: no samples or no reader counters in the second document",
                            [json.dumps(doc.get("sampling")), json.dumps(doc.get("reader"))])])
    notes.append("warm: %.2f reads a sample (%d samples)" % (reads / samples, samples))
    if reads / samples > MAX_WARM_READS:
        raise Fail([Problem("pytop -b: %.1f reads a warm sample of %d threads, at most %d"
                            % (reads / samples, len(all_threads(doc)), MAX_WARM_READS),
                            [json.dumps(doc.get("reader"))])])


# ---------------------------------------------------------------- batch mode

BATCH_HIGH_PCT = 50   # the spinner's %CPU and %GIL are above this
BATCH_LOW_PCT = 20    # the sleepers' are below this
BATCH_LOADED_CPU_PCT = 10  # the spinner's %CPU, when more threads want a CPU than there are CPUs
BATCH_BUSY_IDLE = 0.25     # a machine idle less than this share of its CPU time was saturated


def cpu_times():
    """The machine's (idle, total) CPU time so far, in ticks (/proc/stat's first line); None
    where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (ticks[3] + ticks[4], sum(ticks[:8])) if len(ticks) >= 8 else None


def idle_share(before, after):
    """The share of the machine's CPU time that was idle between two cpu_times(); None when
    unknown."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / float(after[1] - before[1])


def busy_floor(field, idle=None):
    """What the spinner's FIELD must exceed. %CPU is the kernel's count of the CPU time it got:
    on a machine busier than its CPUs (more runnable threads than cores) it gets less than half a
    core however right pytop is, so it then only has to stand clear of the sleepers' (< 1 %).
    Busier is judged by the 1-minute load average, and by IDLE, the machine's idle share while
    pytop ran, where the caller knows it (the load average lags behind a load that just began).
    %GIL does not depend on the load."""
    if field == "cpu_pct" and (os.getloadavg()[0] >= (os.cpu_count() or 1) or
                               (idle is not None and idle < BATCH_BUSY_IDLE)):
        return BATCH_LOADED_CPU_PCT
    return BATCH_HIGH_PCT


def pytop_batch(ctx, pid, args):
    """Runs `pytop -p PID -b ARGS`; returns the Run, or raises Fail/Skip."""
    cmd = [ctx.pytop, "-p", str(pid), "-b"] + args
    before = cpu_times()
    r = run(cmd, timeout=PYTOP_TIMEOUT, env=clean_env())
    r.idle = idle_share(before, cpu_times())
    shown = "pytop %s" % " ".join(cmd[1:])
    if r.returncode is None:
        raise Fail([Problem("%s: no answer within %.0f s (killed)" % (shown, PYTOP_TIMEOUT))])
    if r.returncode == 1 and UNSUPPORTED_RE.search(r.err):
        raise Skip("pytop does not support this version (%s)" % r.err.splitlines()[0])
    if r.returncode != 0:
        raise Fail([Problem("%s: exit status %s" % (shown, r.returncode),
                            ["stderr: " + l for l in r.err.splitlines()[:10]])])
    return r


def json_lines(text, what):
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            docs.append(json.loads(line))
        except ValueError as e:
            raise Fail([Problem("%s: line %d is not JSON (%s)" % (what, n, e), [line[:200]])])
    return docs


def batch_doc_problems(doc, expect, label, idle=None):
    """What is wrong with one batch document: sampling, the threads' shares, the functions.
    IDLE: the machine's idle share while the document was taken (busy_floor())."""
    problems = []
    sampling = doc.get("sampling") or {}
    if not isinstance(sampling.get("samples"), int) or sampling["samples"] <= 0:
        problems.append(Problem("%s: sampling.samples is %r" % (label, sampling.get("samples")),
                                [json.dumps(sampling)]))
    threads = {t.get("tid"): t for _, t in all_threads(doc)}
    roles = [(expect["spinner"], "spinner", True)] + [(tid, "sleeper", False)
                                                      for tid in expect["sleepers"]]
    for tid, role, busy in roles:
        t = threads.get(tid)
        if t is None:
            problems.append(Problem("%s: %s thread %s is missing" % (label, role, tid)))
            continue
        for field in ("cpu_pct", "gil_pct", "gc_pct"):
            value = t.get(field)
            if not isinstance(value, (int, float)):
                problems.append(Problem("%s: %s %s: %s is %r" % (label, role, tid, field, value)))
            elif field != "gc_pct" and busy and value <= busy_floor(field, idle):
                problems.append(Problem("%s: spinner %s: %s %s, expected > %d (load %.1f, "
                                        "idle %s)" % (label, tid, field, value,
                                                      busy_floor(field, idle),
                                                      os.getloadavg()[0],
                                                      "?" if idle is None else
                                                      "%.0f %%" % (100 * idle))))
    functions = doc.get("functions")
    if not isinstance(functions, list) or not functions:
        return problems + [Problem("%s: no functions table (%r)" % (label, functions))]
    spin = [f for f in functions
            if f.get("function") == expect["function"]
            and os.path.realpath(str(f.get("file"))) == os.path.realpath(expect["file"])]
    others = [f.get("own", 0) for f in functions if f not in spin]
    if not spin:
        problems.append(Problem("%s: %s (%s) is not in the functions table"
                                % (label, expect["function"], expect["file"]),
                                [json.dumps(f) for f in functions[:5]]))
    elif others and spin[0].get("own", 0) < max(others):
        # A tie is no fault: in a window shorter than a nap (few samples on a loaded machine:
        # 16 in 0.4 s under ASan with a debug build) a sleeper may not change function, and is
        # then innermost in every sample, as spin is.
        problems.append(Problem("%s: %s has own %s, below another function's" % (
            label, expect["function"], spin[0].get("own")), [json.dumps(f) for f in functions[:5]]))
    return problems


def sleeper_problems(docs, expect):
    """The sleepers' %CPU and %GIL, over all documents: low. (A sleeper that wakes is runnable,
    "on CPU", until it gets a CPU; on a loaded machine one interval alone may show that.)"""
    problems = []
    for tid in expect["sleepers"]:
        for field in ("cpu_pct", "gil_pct"):
            values = [t.get(field) for d in docs for _, t in all_threads(d)
                      if t.get("tid") == tid and isinstance(t.get(field), (int, float))]
            if values and sum(values) / len(values) >= BATCH_LOW_PCT:
                problems.append(Problem("sleeper %s: %s %s, expected < %d on average"
                                        % (tid, field, values, BATCH_LOW_PCT)))
    return problems


def thread_stopped(pid, tid):
    """True when the kernel shows thread TID of PID stopped (T) or traced-stopped (t)."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def batch_until_stopped(ctx, proc, stop, what):
    """Runs `pytop -b` (no -n: until stopped), lets it write, stops it with STOP; returns stdout, stderr, status."""
    cmd = [ctx.pytop, "-p", str(proc.pid), "-b", "-d", "0.2", "--json"]
    pytop = CHILDREN.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    try:
        time.sleep(0.9)
        stop(pytop)
        out, err = pytop.communicate(timeout=PYTOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail([Problem("%s: pytop did not stop within %.0f s" % (what, PYTOP_TIMEOUT))])
    finally:
        CHILDREN.kill(pytop)
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), pytop.returncode


def check_batch(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop -b: JSON lines with the sampler's statistics, text blocks, --blocking, and ends
    (SIGINT, the target exiting) that keep what was written and exit 0."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    r = pytop_batch(ctx, proc.pid, ["-n", "3", "-d", "0.5", "--json"])
    docs = json_lines(r.stdout.decode("utf-8", "replace"), "pytop -b --json")
    problems = []
    if len(docs) != 3:
        problems.append(Problem("pytop -b -n 3 --json: %d JSON lines, expected 3" % len(docs)))
    for i, doc in enumerate(docs):
        problems += batch_doc_problems(doc, expect, "document %d" % (i + 1), r.idle)
    problems += sleeper_problems(docs, expect)
    shares = {t.get("tid"): (t.get("cpu_pct"), t.get("gil_pct")) for d in docs[:1]
              for _, t in all_threads(d)}
    notes.append("document 1, (%%CPU, %%GIL): spinner %s, sleepers %s" % (
        shares.get(expect["spinner"]), ", ".join(str(shares.get(t)) for t in expect["sleepers"])))
    notes.append("-b -n 3 -d 0.5 --json: %s" % ", ".join(
        "%s samples at %s Hz" % ((d.get("sampling") or {}).get("samples"),
                                 (d.get("sampling") or {}).get("achieved_hz")) for d in docs))

    text = pytop_batch(ctx, proc.pid, ["-n", "1", "-d", "0.3"]).stdout.decode("utf-8", "replace")
    blocks = parse_text_dump(text, PYTOP_HEADER_RE)
    for needle in ("Samples: ", "%GIL", "%CPU", "%GC", "Functions: ", " spin ("):
        if needle not in text:
            problems.append(Problem("pytop -b (text): no %r in the report" % needle,
                                    text.splitlines()[:12]))
    if expect["spinner"] not in [b["tid"] for b in blocks]:
        problems.append(Problem("pytop -b (text): no traceback block for the spinner %s"
                                % expect["spinner"], text.splitlines()[:12]))

    docs = json_lines(pytop_batch(ctx, proc.pid, ["-n", "1", "-d", "0.3", "--json",
                                                  "--blocking"]).stdout.decode(), "--blocking")
    if len(docs) != 1 or (docs[0].get("sampling") or {}).get("samples", 0) <= 0:
        problems.append(Problem("pytop -b --blocking: no samples", [json.dumps(docs)[:300]]))
    time.sleep(0.05)
    if thread_stopped(proc.pid, expect["spinner"]):
        problems.append(Problem("pytop -b --blocking left the target stopped"))

    def interrupt(pytop):
        os.kill(pytop.pid, signal.SIGINT)

    out, err, status = batch_until_stopped(ctx, proc, interrupt, "SIGINT")
    docs = json_lines(out, "pytop -b (SIGINT)")
    if status != 0 or not docs:
        problems.append(Problem("pytop -b stopped by SIGINT: exit status %s, %d documents"
                                % (status, len(docs)), ["stderr: " + l for l in err.splitlines()]))

    out, err, status = batch_until_stopped(ctx, proc, lambda pytop: CHILDREN.kill(proc),
                                           "target exit")
    docs = json_lines(out, "pytop -b (target exits)")
    if status != 0 or not docs or "exited" not in err:
        problems.append(Problem("pytop -b, target killed: exit status %s, %d documents, "
                                "stderr %r (expected 0, some, 'exited')" % (status, len(docs), err)))
    if problems:
        raise Fail(problems)


CODEREUSE_SLACK_S = 0.05  # between a document's "time" and the read it reports


def check_codereuse(ctx, py, proc, outfile, log_path, workdir, notes):
    """One long pytop -b whose caches live across documents, on a thread that makes, runs and
    frees one function after another at the same address: each document must name the function
    that ran then, with its own lines, in its stack and in its functions table."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    r = pytop_batch(ctx, proc.pid, ["-n", "8", "-d", "0.25", "--json"])
    docs = json_lines(r.stdout.decode("utf-8", "replace"), "pytop -b --json")
    time.sleep(0.4)  # the function running at the end is logged once it returns
    runs = {}
    with open(expect["log"], encoding="utf-8") as f:
        for line in f:
            try:
                run_ = json.loads(line)
            except ValueError:
                continue  # a line being written
            runs[run_["name"]] = run_
    problems = []
    innermost = []
    for n, doc in enumerate(docs, 1):
        when = doc.get("time")
        thread = next((t for _, t in all_threads(doc) if t.get("tid") == expect["tid"]), None)
        if thread is None or not thread.get("frames"):
            problems.append(Problem("document %d: no stack for the reuser %s" % (n, expect["tid"])))
            continue
        # The newest of the compiled functions on the stack: the reuser runs them one at a
        # time, and between two of them compiles, logs (json) and frees, in other functions.
        top = next((f for f in thread["frames"]
                    if re.match(r"f_\d+$", str(f.get("function")))), thread["frames"][0])
        run_ = runs.get(top.get("function"))
        if not re.match(r"f_\d+$", str(top.get("function"))):
            innermost.append("reuser")  # caught between two functions, making the next one
        else:
            innermost.append(top.get("function"))
        if innermost[-1] == "reuser":
            pass
        elif run_ is None:
            problems.append(Problem("document %d: innermost function %r never ran"
                                    % (n, top.get("function")), [json.dumps(top)]))
        elif not run_["start"] - CODEREUSE_SLACK_S <= when <= run_["end"] + CODEREUSE_SLACK_S:
            problems.append(Problem("document %d at %.3f: %s, which ran %.3f-%.3f (a stale code "
                                    "object?)" % (n, when, run_["name"], run_["start"],
                                                  run_["end"]), [json.dumps(top)]))
        elif not run_["first_line"] <= (top.get("line") or 0) <= run_["first_line"] + 4:
            problems.append(Problem("document %d: %s at line %r, its lines are %d-%d"
                                    % (n, run_["name"], top.get("line"), run_["first_line"],
                                       run_["first_line"] + 4), [json.dumps(top)]))
        for fn in doc.get("functions") or []:
            name = fn.get("function") or ""
            if not name.startswith("f_"):
                continue
            run_ = runs.get(name)
            if run_ is None or fn.get("line") != run_["first_line"]:
                problems.append(Problem("document %d: functions table has %s at line %r, it "
                                        "starts at %r" % (n, name, fn.get("line"),
                                                          run_ and run_["first_line"])))
            elif run_["end"] < when - 0.25 - 2 * CODEREUSE_SLACK_S or \
                    run_["start"] > when + CODEREUSE_SLACK_S:
                problems.append(Problem("document %d at %.3f: functions table counts %s, which "
                                        "ran %.3f-%.3f, outside the interval"
                                        % (n, when, name, run_["start"], run_["end"])))
    if innermost.count("reuser") > 3:
        problems.append(Problem("innermost functions %s: the reuser itself in more than 3 of %d "
                                "documents" % (innermost, len(docs))))
    if len(set(innermost) - {"reuser"}) < 4:
        problems.append(Problem("innermost functions %s: fewer than 4 different in %d documents"
                                % (innermost, len(docs))))
    ids = [r_["code_id"] for r_ in runs.values()]
    notes.append("%d functions made at %d code addresses; innermost: %s"
                 % (len(ids), len(set(ids)), ", ".join(str(x) for x in innermost)))
    if problems:
        raise Fail(problems)


IDLE_INTERVAL_S = 0.4
IDLE_SLEEPERS = 20  # targets/idle.py's SLEEPERS
IDLE_SLACK_S = 0.05  # between a document's "time" and the end of the interval it counts
IDLE_TIMING_S = 0.08  # between a hop's logged start or end and the samples that see it


def check_idle(ctx, py, proc, outfile, log_path, workdir, notes):
    """Threads that sleep, and a hopper that sleeps in hop_0() to hop_3() in turn: on 3.13+
    pytop keeps the stacks of threads that cannot have run since the last sample (the GIL's
    switch count has not moved) instead of reading them. Each document's functions table must
    count only hop functions that ran in its interval (a kept stack that went stale would go
    on counting the hop it saw), all four must show up, and the kept stacks must be used on
    3.13+ and never before."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    r = pytop_batch(ctx, proc.pid, ["-n", "4", "-d", "%g" % IDLE_INTERVAL_S, "--json"])
    docs = json_lines(r.stdout.decode("utf-8", "replace"), "pytop -b --json")
    time.sleep(0.3)  # the hop running at the end is logged once it returns
    hops = []
    with open(expect["log"], encoding="utf-8") as f:
        for line in f:
            try:
                hops.append(json.loads(line))
            except ValueError:
                continue  # a line being written
    problems = []
    seen = set()
    kept = 0
    for n, doc in enumerate(docs, 1):
        when = doc.get("time") or 0
        lo = when - IDLE_INTERVAL_S - 2 * IDLE_SLACK_S
        hi = when + IDLE_SLACK_S
        kept += ((doc.get("reader") or {}).get("kept_stacks") or 0)
        # The sleepers never move: each is in sleep_in() in every sample (a kept stack that
        # was lost would count nothing).
        samples = (doc.get("sampling") or {}).get("samples") or 0
        sleeping = next((fn.get("total") for fn in doc.get("functions") or []
                         if fn.get("function") == "sleep_in"), 0)
        if sleeping != IDLE_SLEEPERS * samples:
            problems.append(Problem("document %d: sleep_in() in %r thread-samples, expected %d "
                                    "(%d sleepers x %d samples): a stack lost?"
                                    % (n, sleeping, IDLE_SLEEPERS * samples, IDLE_SLEEPERS,
                                       samples)))
        for fn in doc.get("functions") or []:
            name = fn.get("function") or ""
            if not re.match(r"hop_\d$", name):
                continue
            seen.add(name)
            ran = [h for h in hops if h["name"] == name and h["start"] <= hi and h["end"] >= lo]
            if not ran:
                problems.append(Problem("document %d (%.3f-%.3f): the functions table counts %s "
                                        "(%r samples), which did not run then: a stale stack?"
                                        % (n, lo, hi, name, fn.get("total"))))
                continue
            # No more samples than its time in the interval gives at the achieved rate (a
            # stale stack counts its hop for the whole interval).
            overlap = sum(max(0.0, min(h["end"], hi) - max(h["start"], lo)) for h in ran)
            hz = (doc.get("sampling") or {}).get("achieved_hz") or 0
            bound = (overlap + IDLE_TIMING_S) * hz + 3
            if (fn.get("total") or 0) > bound:
                problems.append(Problem("document %d (%.3f-%.3f): %s counted in %r samples, but "
                                        "ran %.3f s of it (at most %.0f samples at %.1f Hz): a "
                                        "stale stack?" % (n, lo, hi, name, fn.get("total"),
                                                          overlap, bound, hz)))
    if len(seen) < 4:
        problems.append(Problem("hop functions counted: %s, not all four in %d documents"
                                % (sorted(seen), len(docs))))
    keeps = py.version >= (3, 13)
    if keeps and kept == 0:
        problems.append(Problem("no stack was kept in %d documents of an idle target" % len(docs)))
    if not keeps and kept != 0:
        problems.append(Problem("%d stacks kept before 3.13, where the GIL does not prove a "
                                "thread idle" % kept))
    notes.append("%d hops logged; %d stacks kept in %d documents; hop functions counted: %s"
                 % (len(hops), kept, len(docs), ", ".join(sorted(seen))))
    if problems:
        raise Fail(problems)


LATENAME_WITHIN_S = 0.6  # the name must show this soon after threading learns it


def check_latename(ctx, py, proc, outfile, log_path, workdir, notes):
    """A thread threading learns of only after pytop looked (as every thread is, for a moment
    after Thread.start() returned): its name must show within LATENAME_WITHIN_S of it being
    registered, not only when all names are read again (every 2 s)."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    cmd = [ctx.pytop, "-p", str(proc.pid), "-b", "-n", "7", "-d", "0.2", "--json"]
    pytop = CHILDREN.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    try:
        first = pytop.stdout.readline().decode("utf-8", "replace")
        with open(outfile + ".go", "w", encoding="utf-8"):
            pass
        rest, err = pytop.communicate(timeout=PYTOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail([Problem("pytop %s: no answer within %.0f s" % (" ".join(cmd[1:]),
                                                                   PYTOP_TIMEOUT))])
    finally:
        CHILDREN.kill(pytop)
    if pytop.returncode != 0:
        raise Fail([Problem("pytop -b: exit status %s" % pytop.returncode,
                            err.decode("utf-8", "replace").splitlines()[:5])])
    docs = json_lines(first + rest.decode("utf-8", "replace"), "pytop -b --json")
    named_at = wait_for_report(proc, outfile + ".named", log_path, 10)["named_at"]

    def name_in(doc):
        return next((t.get("name") for _, t in all_threads(doc) if t.get("tid") == expect["tid"]),
                    "no such thread")

    problems = []
    if docs and name_in(docs[0]) is not None:
        problems.append(Problem("document 1 names the thread %r before threading knew it"
                                % name_in(docs[0])))
    late = [(n, doc) for n, doc in enumerate(docs, 1)
            if (doc.get("time") or 0) >= named_at + LATENAME_WITHIN_S]
    if not late:
        problems.append(Problem("no document later than %.1f s after the name was registered"
                                % LATENAME_WITHIN_S))
    for n, doc in enumerate(docs, 1):
        mains = [t.get("name") for _, t in all_threads(doc) if t.get("main")]
        if mains != ["MainThread"]:
            problems.append(Problem("document %d: main thread named %r" % (n, mains)))
    for n, doc in late:
        if name_in(doc) != "registered-late":
            problems.append(Problem("document %d, %.2f s after the name was registered: name %r"
                                    % (n, doc["time"] - named_at, name_in(doc))))
    notes.append("names: %s" % ", ".join(str(name_in(d)) for d in docs))
    if problems:
        raise Fail(problems)


UNREADABLE_RE = re.compile(r"^<unreadable frame: (.+)>$")
UNREADABLE_WARNING_RE = re.compile(r"^unreadable frame: (.+): (\d+) of (\d+) thread-samples in ")


def churn_doc_problems(doc, n, expect):
    """What is wrong with one churn document: a function without a name, an unreadable row
    without its warning, an unreadable frame without a reason or with frames beyond it."""
    problems = []
    warned = {}
    for w in doc.get("warnings") or []:
        m = UNREADABLE_WARNING_RE.match(str(w))
        if m:
            warned[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    samples = (doc.get("sampling") or {}).get("thread_samples")
    counted = {}
    for fn in doc.get("functions") or []:
        name = fn.get("function")
        if name is None:
            problems.append(Problem("document %d: the functions table counts a function with "
                                    "no name" % n, [json.dumps(fn)]))
            continue
        m = UNREADABLE_RE.match(name)
        if fn.get("file") is None and not name.startswith("<"):
            problems.append(Problem("document %d: function %s has no file" % (n, q(name)),
                                    [json.dumps(fn)]))
        if not m:
            continue
        counted[m.group(1)] = fn.get("total")
        if warned.get(m.group(1)) != (fn.get("total"), samples):
            problems.append(Problem("document %d: %d thread-samples under %s, but its warnings "
                                    "say %r" % (n, fn.get("total") or 0, q(name),
                                                warned.get(m.group(1))),
                                    [json.dumps(doc.get("warnings"))]))
    for reason in sorted(set(warned) - set(counted)):
        problems.append(Problem("document %d: warned of unreadable frames (%s) it does not "
                                "count" % (n, reason)))
    for _, t in all_threads(doc):
        frames = t.get("frames") or []
        for k, f in enumerate(frames):
            label = "document %d: thread %s %s frame %d" % (n, t.get("tid"), q(t.get("name")), k)
            if f.get("kind") in (None, "python") and f.get("function") is None:
                problems.append(Problem("%s: a Python frame with no function" % label,
                                        [json.dumps(f)]))
            if f.get("kind") != "unreadable":
                continue
            m = UNREADABLE_RE.match(f.get("function") or "")
            if not m or m.group(1) != f.get("reason"):
                problems.append(Problem("%s: unreadable, but its function %s does not give "
                                        "its reason %s" % (label, q(f.get("function")),
                                                           q(f.get("reason"))), [json.dumps(f)]))
            elif f.get("reason") == "stack changed while read" and \
                    (k != len(frames) - 1 or not t.get("frames_truncated")):
                problems.append(Problem("%s: frames reached through a frame that names no code "
                                        "object are shown (or the stack is not marked "
                                        "truncated)" % label, [json.dumps(f)]))
        if t.get("tid") == expect["corrupt_tid"] and expect["corrupted"] and \
                not any(f.get("kind") == "unreadable" for f in frames):
            problems.append(Problem("document %d: the corrupted frame of thread %s is not shown "
                                    "as unreadable" % (n, t.get("tid")),
                                    [json.dumps([f.get("function") for f in frames])]))
    if expect["corrupted"] and not counted:
        sampling = doc.get("sampling") or {}
        problems.append(Problem("document %d: no unreadable frame counted, though thread %s "
                                "has one in every sample" % (n, expect["corrupt_tid"]),
                                ["sampling: " + json.dumps(sampling),
                                 "reader: " + json.dumps(doc.get("reader")),
                                 "functions: %d, truncated %s" % (
                                     len(doc.get("functions") or []),
                                     doc.get("functions_truncated")),
                                 "warnings: " + json.dumps(doc.get("warnings"))[:600]]))
    return problems, counted


def check_forkname(ctx, py, proc, outfile, log_path, workdir, notes):
    """Children of fork() (one forked by the main thread, one by another thread, each with a
    thread started after the fork): `pytop --dump --json` of each names every thread as the
    child's own threading does. Before 3.13 the forking thread's Thread keeps the parent's
    native_id after the fork; its name must not be lost for that."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    problems = []
    for child in expect["children"]:
        r = pytop_dump(ctx, child["pid"], True)
        doc = json.loads(r.stdout.decode("utf-8"))
        got = {t.get("tid"): t.get("name") for _, t in all_threads(doc)}
        for want in child["threads"]:
            # 3.13+ leave a child's main thread state unset after a fork() from another
            # thread, and early 3.13 releases keep the parent's native_id in its Thread: the
            # thread cannot be told apart from an earlier one with its ident, so unknown.
            if (got.get(want["tid"], "no such thread") is None and
                    want.get("stale_native_id") and py.version >= (3, 13)):
                notes.append("child %d: thread %d unnamed (Thread.native_id is the parent's)"
                             % (child["pid"], want["tid"]))
                continue
            if got.get(want["tid"], "no such thread") != want["name"]:
                problems.append(Problem("child %d: thread %d is named %r, its threading says %r"
                                        % (child["pid"], want["tid"],
                                           got.get(want["tid"], "no such thread"),
                                           want["name"])))
        notes.append("child %d: %s" % (child["pid"], ", ".join(
            "%s %r" % (tid, name) for tid, name in sorted(got.items(),
                                                          key=lambda kv: (kv[0] is None, kv[0])))))
    if problems:
        raise Fail(problems)


def check_churn(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop -b --rate max on threads whose stacks change faster than it reads them, and on one
    whose parked frame names a float for its code: no document counts a function without a
    name; what it could not read is counted as such, with its reason, and said in warnings."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    if not expect["corrupted"]:
        notes.append("the target found no code pointer in its generator to corrupt")
    r = pytop_batch(ctx, proc.pid, ["--rate", "max", "-n", "6", "-d", "0.5", "--json"])
    docs = json_lines(r.stdout.decode("utf-8", "replace"), "pytop -b --json")
    problems = []
    total = {}
    samples = 0
    raced = 0
    for n, doc in enumerate(docs, 1):
        p, counted = churn_doc_problems(doc, n, expect)
        problems += p
        sampling = doc.get("sampling") or {}
        samples += sampling.get("thread_samples") or 0
        for reason, c in counted.items():
            total[reason] = total.get(reason, 0) + (c or 0)
        # The corrupted thread is unreadable in every sample; the rest are the churners' races.
        raced += max(0, (counted.get("stack changed while read") or 0)
                     - (sampling.get("samples") or 0 if expect["corrupted"] else 0))
    if not docs:
        problems.append(Problem("pytop -b wrote no document"))
    notes.append("%d documents, %d thread-samples; unreadable: %s; of them the churners' (stacks "
                 "that changed while read): about %d" % (
                     len(docs), samples,
                     ", ".join("%s %d" % kv for kv in sorted(total.items())) or "none", raced))
    if problems:
        raise Fail(problems)
