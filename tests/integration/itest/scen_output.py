"""The incident, errors and output scenarios: what pytop writes and where, its
command-line errors and permission hints."""
import calendar
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from .harness import (CHILDREN, Fail, NOT_PYTHON_RE, PYTOP_TIMEOUT, Problem, Skip, TARGETS,
                      TARGET_START_TIMEOUT, UNSUPPORTED_RE, clean_env, run)
from .compare import PYTOP_HEADER_RE, parse_text_dump
from .scen_stacks import pytop_dump, wait_for_report
from .scen_batch import batch_doc_problems, cpu_times, idle_share, json_lines
from .scen_exec import unused_pid, wait_for_exec, wait_until
from .harness import discover


INCIDENT_STARTED_SLACK_S = 0.05  # "started" against the kernel's start time, read here


def process_started(pid):
    """When process PID started, seconds since the epoch, from its /proc/PID/stat (as ps does)."""
    with open("/proc/%d/stat" % pid) as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    booted = time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_BOOTTIME)
    return booted + ticks / os.sysconf("SC_CLK_TCK")


def header_problems(text, pid, argv, started, by, label):
    """The incident report's header: the target's lines, in order, then how pytop took it."""
    lines = text.splitlines()
    problems = []
    want = [("Process", r"^Process %d: Python \d" % pid),
            ("Command", r"^Command: "),
            ("Started", r"^Started: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(up \d+:\d\d:\d\d\)$"),
            ("Taken at", r"^Taken at "),
            ("Dumped by", r"^Dumped by: pytop \S+ %s$" % re.escape(by)),
            ("Statistics", r"^Statistics[: ]"),
            ("Thread", r"^Thread \d+")]
    at = []
    for name, pattern in want:
        found = [i for i, l in enumerate(lines) if re.search(pattern, l)]
        if not found:
            problems.append(Problem("%s: no line like /%s/" % (label, pattern), lines[:10]))
            at.append(None)
            continue
        at.append(found[0])
    known = [a for a in at if a is not None]
    if known != sorted(known):
        problems.append(Problem("%s: the header lines are out of order (%s)" % (
            label, ", ".join("%s at %s" % (w[0], a) for w, a in zip(want, at))), lines[:10]))
    command = [l for l in lines if l.startswith("Command: ")]
    if command and shlex.split(command[0][len("Command: "):]) != argv:
        problems.append(Problem("%s: the command line is not the target's %r" % (label, argv),
                                command))
    start = [l for l in lines if l.startswith("Started: ")]
    if start:
        got = calendar.timegm(time.strptime(start[0][9:28], "%Y-%m-%d %H:%M:%S"))
        if abs(got - started) > 1.0:
            problems.append(Problem("%s: started %s, the kernel says %s UTC" % (
                label, start[0], time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)))))
    return problems


def identity_problems(doc, pid, argv, started, label):
    """A JSON document names its target beside "pid": "cmdline" (argv) and "started"."""
    problems = []
    keys = list(doc.keys())[:5]
    if keys != ["pytop", "pid", "cmdline", "started", "time"]:
        problems.append(Problem("%s: the document begins with %r" % (label, keys)))
    if doc.get("pid") != pid or doc.get("cmdline") != argv:
        problems.append(Problem("%s: pid %r cmdline %r, expected %d %r" % (
            label, doc.get("pid"), doc.get("cmdline"), pid, argv)))
    got = doc.get("started")
    if not isinstance(got, (int, float)) or abs(got - started) > INCIDENT_STARTED_SLACK_S:
        problems.append(Problem("%s: started %r, the kernel says %.3f" % (label, got, started)))
    return problems


def pytop_spawn(ctx, args, workdir, what):
    """Runs `pytop ARGS` (a command after --) to its end; returns (stdout, stderr, status)."""
    r = run([ctx.pytop] + args, timeout=PYTOP_TIMEOUT, env=clean_env(TMPDIR=workdir),
            cwd=workdir)
    if r.returncode is None:
        raise Fail([Problem("%s: no answer within %.0f s (killed)" % (what, PYTOP_TIMEOUT))])
    return r.stdout.decode("utf-8", "replace"), r.err, r.returncode


def read_json_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def check_incident(ctx, py, proc, outfile, log_path, workdir, notes):
    """What an incident report needs: --dump's header (command line, start, pytop's settings,
    why no statistics), JSON "cmdline" and "started", --dump --window's statistics, and a
    command started by -b and by --dump --at-exit."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    pid = proc.pid
    argv = [py.path, os.path.join(TARGETS, "batch.py"), outfile]
    started = process_started(pid)
    problems = []
    text = pytop_dump(ctx, pid, False).stdout.decode("utf-8", "replace")
    problems += header_problems(text, pid, argv, started, "--dump --rate 100 --delay 1",
                                "pytop --dump")
    if "\nStatistics: none: a single --dump reads one snapshot" not in text:
        problems.append(Problem("pytop --dump: does not say why it has no statistics",
                                text.splitlines()[:8]))
    doc = json.loads(pytop_dump(ctx, pid, True).stdout.decode("utf-8"))
    problems += identity_problems(doc, pid, argv, started, "pytop --dump --json")

    r = run([ctx.pytop, "-p", str(pid), "--dump", "--window", "0.6"], timeout=PYTOP_TIMEOUT,
            env=clean_env())
    text = r.stdout.decode("utf-8", "replace")
    problems += header_problems(text, pid, argv, started,
                                "--dump --rate 100 --window 0.6 --delay 1", "--dump --window")
    for needle in ("\nStatistics over the window (0.6 s):\nSamples: ", "%GIL", "\nFunctions: ",
                   " spin ("):
        if needle not in text:
            problems.append(Problem("--dump --window: no %r in the report" % needle,
                                    text.splitlines()[:16]))
    if not re.search(r"^ +%d +[0-9.?]+ +[0-9.?]+ +[0-9.?]+ +[1-9]\d* " % expect["spinner"], text,
                     re.M):
        problems.append(Problem("--dump --window: no statistics row for the spinner %d"
                                % expect["spinner"], text.splitlines()[:16]))
    before = cpu_times()
    r = run([ctx.pytop, "-p", str(pid), "--dump", "--json", "--window", "0.4"],
            timeout=PYTOP_TIMEOUT, env=clean_env())
    idle = idle_share(before, cpu_times())
    doc = json.loads(r.stdout.decode("utf-8"))
    problems += identity_problems(doc, pid, argv, started, "--dump --json --window")
    problems += batch_doc_problems(doc, expect, "--dump --json --window 0.4", idle)

    # -b -- CMD: each document names the command pytop started; pytop ends it after -n.
    script = os.path.join(TARGETS, "incident.py")
    out2 = os.path.join(workdir, "b.json")
    cmd = [py.path, script, out2, "--exit-after", "30"]
    out, err, status = pytop_spawn(ctx, ["-b", "-n", "2", "-d", "0.3", "--json", "--"] + cmd,
                                   workdir, "pytop -b -- CMD")
    child = read_json_file(out2).get("pid")
    docs = json_lines(out, "pytop -b -- CMD")
    if status != 0 or len(docs) != 2 or child is None:
        problems.append(Problem("pytop -b -n 2 -- CMD: exit status %s, %d documents, command "
                                "pid %r" % (status, len(docs), child),
                                ["stderr: " + l for l in err.splitlines()]))
    for i, d in enumerate(docs):
        problems += identity_problems(d, child or -1, cmd, d.get("started") or 0,
                                      "pytop -b -- CMD, document %d" % (i + 1))
    if child is not None:
        wait_until("pytop -b -n 2 -- CMD: the command ended",
                   lambda: not os.path.exists("/proc/%d" % child), 3.0)
    if "its output goes to %s/pytop-" % workdir not in err:
        problems.append(Problem("pytop -b -- CMD: stderr does not name the command's log",
                                err.splitlines()))

    # A command that exits on its own ends the batch, status 0, saying how it ended.
    out3 = os.path.join(workdir, "c.json")
    cmd = [py.path, script, out3, "--exit-after", "1.2", "--status", "3"]
    out, err, status = pytop_spawn(ctx, ["-b", "-d", "0.3", "--json", "--"] + cmd, workdir,
                                   "pytop -b -- CMD (exits)")
    docs = json_lines(out, "pytop -b -- CMD (exits)")
    if status != 0 or len(docs) < 2 or "exited (exit status 3)" not in err:
        problems.append(Problem("pytop -b -- CMD that exits with 3: exit status %s, %d "
                                "documents, stderr %r (expected 0, 2+, 'exited (exit status 3)')"
                                % (status, len(docs), err)))
    elif any(d.get("cmdline") != cmd for d in docs):
        problems.append(Problem("pytop -b -- CMD (exits): a document does not name the command",
                                [json.dumps(d.get("cmdline")) for d in docs]))

    # --dump --at-exit -- CMD: the last snapshot before it ended in which Python code ran (not
    # those of its shutdown, which runs none), the whole run's statistics.
    out4 = os.path.join(workdir, "d.json")
    cmd = [py.path, script, out4, "--exit-after", "1.5", "--status", "3", "--linger", "0.6"]
    out, err, status = pytop_spawn(ctx, ["--dump", "--at-exit", "-d", "0.2", "--"] + cmd,
                                   workdir, "pytop --dump --at-exit -- CMD")
    child = read_json_file(out4).get("pid") or -1
    note = r"^Note: --at-exit: process %d exited \(exit status 3\); this is the last snapshot " \
        r"pytop read in which Python code ran \(later ones showed the interpreter shutting " \
        r"down\), [0-9.]+ s before it found the process gone" % child
    blocks = parse_text_dump(out, PYTOP_HEADER_RE)
    main = [b for b in blocks if b["tid"] == child]
    innermost = main[0]["frames"][0]["function"] if main and main[0]["frames"] else None
    if status != 0 or not re.search(note, out, re.M):
        problems.append(Problem("pytop --dump --at-exit -- CMD: exit status %s, no line /%s/"
                                % (status, note), out.splitlines()[:8] +
                                ["stderr: " + l for l in err.splitlines()]))
    elif innermost != "phase_two":
        problems.append(Problem("pytop --dump --at-exit -- CMD: the last snapshot has the main "
                                "thread in %r, not phase_two (where it ended)" % innermost,
                                out.splitlines()[:30]))
    for needle in ("\nStatistics over the window (the whole run):\n", " phase_one (",
                   " phase_two ("):
        if needle not in out:
            problems.append(Problem("pytop --dump --at-exit: no %r in the report" % needle,
                                    out.splitlines()[:30]))
    notes.append("--at-exit: " + next((l for l in out.splitlines() if l.startswith("Samples:")),
                                      "no Samples line"))
    if problems:
        raise Fail(problems)


LIBPYTHON = ("import sys, sysconfig; sys.stdout.write(sysconfig.get_config_var('LIBDIR') + '/' "
             "+ (sysconfig.get_config_var('INSTSONAME') or ''))")


def stripped_old_pythons(ctx, expect, notes):
    """Before 3.7 pytop finds the interpreter through interp_head, a LOCAL symbol only .symtab
    names: each 2.7 or 3.6 found that loads a libpython runs once on a stripped copy of it, and
    pytop must refuse it in one line naming the version and the missing symbol."""
    if ctx.pythons is None:
        ctx.pythons = discover(lambda text: None)[0]
    olds = [p for p in ctx.pythons if p.minor < (3, 7) and not p.debug]
    if not olds or shutil.which("strip") is None:
        notes.append("stripped 2.7/3.6: not checked (no such interpreter, or no strip)")
        return
    for py in olds:
        r = run([py.path, "-c", LIBPYTHON], timeout=20)
        lib = r.stdout.decode().strip() if r.returncode == 0 else ""
        if not os.path.isfile(lib):
            notes.append("stripped %s: not checked (it loads no libpython)" % py.label)
            continue
        tmp = tempfile.mkdtemp(prefix="pytop-strip-")
        try:
            copy = os.path.join(tmp, os.path.basename(lib))
            shutil.copy(lib, copy)
            subprocess.check_call(["strip", "--strip-all", copy])
            proc = CHILDREN.start([py.path, "-c", "import time; time.sleep(60)"],
                                  env=clean_env(LD_LIBRARY_PATH=tmp), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            try:
                maps = "/proc/%d/maps" % proc.pid
                wait_until("%s on the stripped copy" % py.label,
                           lambda: copy in open(maps).read(), 10, alive=proc)
                expect(["-p", str(proc.pid), "--dump"], 1,
                       r"^pytop: Python %d\.%d[^\n]*interp_head[^\n]*\n" % py.minor,
                       "a stripped %s libpython has no interp_head" % py.label)
            finally:
                CHILDREN.kill(proc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def scenario_errors(ctx, notes):
    problems = []

    def expect(args, status, pattern, why, prefix=(), absent=None):
        """pytop ARGS (run under PREFIX, a command such as setpriv) must exit with STATUS and
        say PATTERN (a regex; None: anything) on stderr, and not ABSENT. Returns its stderr."""
        r = run(list(prefix) + [ctx.pytop] + args, timeout=10, env=clean_env())
        shown = " ".join(list(prefix) + ["pytop"] + args)
        err = r.err
        if r.returncode is None:
            problems.append(Problem("%s: did not exit within 10 s" % shown))
        elif r.returncode != status:
            problems.append(Problem("%s: exit status %s, expected %d (%s)" % (
                shown, r.returncode, status, why), ["stderr: " + l for l in err.splitlines()]))
        elif not err:
            problems.append(Problem("%s: exit status %d but nothing on stderr" % (shown, status)))
        elif pattern is not None and not re.search(pattern, err, re.I):
            problems.append(Problem("%s: stderr does not match /%s/ (%s)" % (shown, pattern, why),
                                    ["stderr: " + l for l in err.splitlines()]))
        elif absent is not None and re.search(absent, err, re.I):
            problems.append(Problem("%s: stderr says /%s/ (%s)" % (shown, absent, why),
                                    ["stderr: " + l for l in err.splitlines()]))
        else:
            notes.append("%s -> %d: %s" % (shown, status, " | ".join(err.splitlines())))
        return err

    pid = unused_pid()
    # The one-line reason and, as the man page promises, a hint.
    expect(["-p", str(pid), "--dump"], 1, r"\b%d\b(.|\n)*\npytop: hint: .*\bPID\b" % pid,
           "no such process: name the pid, and hint at how to find it")
    expect(["-p", str(pid)], 1, r"\b%d\b(.|\n)*\npytop: hint: " % pid,
           "no such process: name the pid")
    sleeper = CHILDREN.start(["sleep", "60"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_for_exec(sleeper.pid, "sleep")
        expect(["-p", str(sleeper.pid), "--dump"], 1, NOT_PYTHON_RE.pattern,
               "sleep(1) is not a Python process")
        permission_hints(ctx, expect, sleeper.pid, notes)
    finally:
        CHILDREN.kill(sleeper)
    stripped_old_pythons(ctx, expect, notes)
    for args in (["--no-such-option"], ["-p"], ["-p", "not-a-pid", "--dump"],
                 ["-p", "1", "--dump", "--bogus"], ["-p", "1", "-b", "--at-exit"],
                 ["-p", "1", "--dump", "--window", "0"], ["-p", "1", "--window", "x"],
                 ["-p", "1", "-b", "--mode", "CPU"], ["-p", "1", "--mode"]):
        expect(args, 2, None, "bad usage")
    # An option that changes nothing is bad usage, not silently ignored.
    for args, pattern in ((["-p", str(pid), "-n", "3"], r"-n .*-b"),
                          (["-p", str(pid), "--dump", "-n", "3"], r"-n .*-b"),
                          (["-p", str(pid), "-o", "x.txt"], r"-o .*--dump"),
                          (["-p", str(pid), "--dump", "--force"], r"--force .*-o"),
                          (["-p", str(pid), "--dump", "--mode", "cpu"], r"--mode .*--window"),
                          (["-p", str(pid), "--dump", "--active-only"],
                           r"--active-only .*--window")):
        expect(args, 2, pattern, "an option without the mode it goes with")
    # -o never replaces a file nor writes through a symlink: said before the target is read
    # (the pid is unused, so a read would give 1).
    tmp = tempfile.mkdtemp(prefix="pytop-it-errors-")
    try:
        kept = os.path.join(tmp, "incident.txt")
        with open(kept, "w") as f:
            f.write("keep me\n")
        link = os.path.join(tmp, "link.txt")
        aimed = os.path.join(tmp, "aimed.txt")
        os.symlink(aimed, link)
        for mode in (["--dump"], ["--dump", "--json"], ["-b", "-n", "1"]):
            expect(["-p", str(pid)] + mode + ["-o", kept], 2, r"exists.*--force",
                   "an existing -o file without --force")
            expect(["-p", str(pid)] + mode + ["-o", link, "--force"], 2, r"symbolic link",
                   "-o through a symlink, even with --force")
        with open(kept) as f:
            if f.read() != "keep me\n":
                problems.append(Problem("pytop changed an existing -o file without --force"))
        if os.path.lexists(aimed):
            problems.append(Problem("pytop wrote through a symlink given to -o"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if problems:
        raise Fail(problems)


def permission_hints(ctx, expect, sleeper_pid, notes):
    """As root: the permission hint names the real cause, from what pytop can know, in the cases
    this machine can stage (each one it cannot is noted): root without CAP_SYS_PTRACE; pytop
    with CAP_SYS_PTRACE but in another user namespace (unshare -U -r); a process of another
    user; a process of the same user that made itself not dumpable."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        notes.append("permission hints: not staged (needs root and setpriv)")
        return
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except (OSError, ValueError):
        scope = -1
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    no_caps = ["--inh-caps=-all", "--bounding-set=-all"]
    if run(nobody + no_caps + [ctx.pytop, "--version"], timeout=10).returncode != 0:
        notes.append("permission hints: not staged (uid 65534 cannot run %s)" % ctx.pytop)
        return
    args = ["-p", str(sleeper_pid), "--dump"]
    if scope == 3:
        expect(args, 1, r"hint: .*ptrace_scope is 3", "Yama scope 3 refuses everyone",
               prefix=nobody + no_caps)
        return
    expect(args, 1, r"hint: .*root but lacks CAP_SYS_PTRACE", "root without CAP_SYS_PTRACE",
           prefix=["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"])
    if run(["unshare", "-U", "-r", "true"], timeout=10).returncode == 0:
        expect(args, 1, r"hint: .*another user namespace",
               "CAP_SYS_PTRACE in a user namespace the target is not in",
               prefix=["unshare", "-U", "-r"], absent=r"lacks CAP_SYS_PTRACE")
    else:
        notes.append("permission hints: another user namespace not staged (unshare -U fails)")
    expect(args, 1, r"hint: .*another user", "a root process read by uid 65534",
           prefix=nobody + no_caps)
    protected = CHILDREN.start(nobody + [sys.executable, "-c",
                                         "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, "
                                         "0, 0); print('ready', flush=True); time.sleep(60)"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        if protected.stdout.readline().strip() != b"ready":
            notes.append("permission hints: a process that is not dumpable not staged")
            return
        expect(["-p", str(protected.pid), "--dump"], 1, r"hint: .*not dumpable",
               "a process of the same user that called prctl(PR_SET_DUMPABLE, 0)",
               prefix=nobody + no_caps, absent=r"another user")
    finally:
        CHILDREN.kill(protected)


def missing_part_problems(doc, label):
    """A part of a document that is null must come with its reason in "warnings"."""
    problems = []
    warnings = " | ".join(map(str, doc.get("warnings") or []))
    for interp in doc.get("interpreters") or []:
        for part, word in (("tasks", "task"), ("gc", "gc")):
            if interp.get(part) is None and word not in warnings.lower():
                problems.append(Problem("%s: interpreter %s has %s null and no warning says why"
                                        % (label, interp.get("id"), part),
                                        ["warnings: %s" % (doc.get("warnings"),)]))
    return problems


def check_output(ctx, py, proc, outfile, log_path, workdir, notes):
    """What pytop writes and where: -o makes a new file of mode 0600, refuses to replace one
    (exit 2) unless --force, which makes it 0600; a null part of a document (--dump, -b) comes
    with its reason and the text says it is missing; sampling.rate_hz is a number, or null with
    rate_max true at --rate max, never a string."""
    wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    problems = []

    def pytop(args, status=0):
        cmd = [ctx.pytop, "-p", str(proc.pid)] + args
        r = run(cmd, timeout=PYTOP_TIMEOUT, env=clean_env())
        if r.returncode == 1 and UNSUPPORTED_RE.search(r.err):
            raise Skip("pytop does not support this version (%s)" % r.err.splitlines()[0])
        if r.returncode != status:
            raise Fail([Problem("pytop %s: exit status %s, expected %d" % (
                " ".join(cmd[1:]), r.returncode, status),
                ["stderr: " + l for l in r.err.splitlines()[:10]])])
        return r

    def mode_of(path, what):
        mode = os.stat(path).st_mode & 0o777
        if mode != 0o600:
            problems.append(Problem("%s: mode %04o, expected 0600" % (what, mode)))

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    dump = os.path.join(workdir, "incident.txt")
    pytop(["--dump", "-o", dump])
    mode_of(dump, "--dump -o")
    text = read(dump)
    if b"Thread " not in text:
        problems.append(Problem("--dump -o wrote no thread", text.decode("utf-8", "replace")
                                .splitlines()[:5]))
    r = pytop(["--dump", "--json", "-o", dump], status=2)
    notes.append("-o on an existing file: %s" % r.err)
    if read(dump) != text:
        problems.append(Problem("--dump -o replaced an existing file without --force"))
    os.chmod(dump, 0o644)
    pytop(["--dump", "--json", "-o", dump, "--force"])
    mode_of(dump, "--dump -o --force over a 0644 file")
    try:
        snap = json.loads(read(dump).decode("utf-8"))
    except ValueError as e:
        raise Fail([Problem("--dump --json -o --force: not one JSON document (%s)" % e)])
    problems += missing_part_problems(snap, "--dump --json")
    text = pytop(["--dump"]).stdout.decode("utf-8", "replace")
    for interp in snap.get("interpreters") or []:
        if interp.get("tasks") is None and "Asyncio tasks: not read" not in text:
            problems.append(Problem("JSON tasks null but the text dump does not say they are "
                                    "missing"))

    batch = os.path.join(workdir, "batch.json")
    pytop(["-b", "-n", "2", "-d", "0.3", "--json", "-o", batch])
    mode_of(batch, "-b -o")
    docs = json_lines(read(batch).decode("utf-8", "replace"), "pytop -b --json -o")
    pytop(["-b", "-n", "1", "-d", "0.3", "--json", "-o", batch], status=2)
    maxed = json_lines(pytop(["-b", "-n", "1", "-d", "0.3", "--json", "--rate", "max"])
                       .stdout.decode("utf-8", "replace"), "pytop -b --json --rate max")
    for label, group, want_hz, want_max in (("-b", docs, 100, False),
                                            ("-b --rate max", maxed, None, True)):
        for n, doc in enumerate(group, 1):
            what = "%s document %d" % (label, n)
            problems += missing_part_problems(doc, what)
            sampling = doc.get("sampling") or {}
            if sampling.get("rate_hz") != want_hz or sampling.get("rate_max") is not want_max:
                problems.append(Problem("%s: sampling rate_hz %r, rate_max %r; expected %r, %r"
                                        % (what, sampling.get("rate_hz"),
                                           sampling.get("rate_max"), want_hz, want_max)))
            for interp in doc.get("interpreters") or []:
                if interp.get("tasks") is None:
                    problems.append(Problem("%s: tasks null for a program without asyncio "
                                            "(the task graph was not read)" % what,
                                            ["warnings: %s" % doc.get("warnings")]))
    notes.append("%d + %d batch documents; tasks %s" % (
        len(docs), len(maxed), [i.get("tasks") for d in docs for i in d.get("interpreters", [])]))
    if problems:
        raise Fail(problems)
