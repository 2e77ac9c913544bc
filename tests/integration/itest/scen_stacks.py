"""What every target scenario shares (waiting for the target, pytop's dump), the common checks
of a target's stacks, and the wronglayout scenario."""
import json
import os
import re
import time

from .harness import (Fail, MAX_DUMP_SECONDS, PYTOP_TIMEOUT, Problem, REMOTE_UNWIND, Skip,
                      TARGET_START_TIMEOUT, THREADS_GONE_TIMEOUT, UNSUPPORTED_RE, clean_env, run)
from .compare import (CPYTHON_HEADER_RE, PYTOP_HEADER_RE, all_threads, compare_cpython_dump,
                      compare_remote, compare_self_report, compare_text_with_json, parse_text_dump,
                      is_init_shim, python_frames, with_instr)


# ---------------------------------------------------------------- scenarios

class Context:
    def __init__(self, pytop, verbose, keep):
        self.pytop = pytop
        self.verbose = verbose
        self.keep = keep
        self.pythons = None  # every interpreter found, once asked for (other_python())


def wait_for_report(proc, outfile, log_path, timeout):
    deadline = time.monotonic() + timeout
    delay = 0.002
    while not os.path.exists(outfile):
        if proc.poll() is not None:
            raise Fail([Problem("target exited with status %s before reporting" % proc.returncode,
                                tail(log_path))])
        if time.monotonic() > deadline:
            raise Fail([Problem("target did not report within %.0f s" % timeout,
                                tail(log_path))])
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    with open(outfile, encoding="utf-8") as f:
        report = json.load(f)
    if "error" in report:
        raise Fail([Problem("target: %s" % report["error"], tail(log_path))])
    return report


def wait_for_threads(pid, count, timeout):
    """Waits until the target has exactly COUNT threads (its reporters have exited)."""
    deadline = time.monotonic() + timeout
    n = None
    while True:
        try:
            n = len(os.listdir("/proc/%d/task" % pid))
        except OSError:
            raise Fail([Problem("target %d is gone" % pid)])
        if n == count:
            return
        if time.monotonic() > deadline:
            raise Fail([Problem("target has %d threads, expected %d once its reporter exited"
                                % (n, count))])
        time.sleep(0.002)


def tail(path, n=15):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return ["target output: " + l for l in lines[-n:]]


def pytop_dump(ctx, pid, json_output, extra=()):
    args = [ctx.pytop, "-p", str(pid), "--dump"] + (["--json"] if json_output else []) + \
        list(extra)
    r = run(args, timeout=PYTOP_TIMEOUT, env=clean_env())
    cmd = " ".join(args[1:])
    if r.returncode is None:
        raise Fail([Problem("pytop %s: no answer within %.0f s (killed)" % (cmd, PYTOP_TIMEOUT))])
    if r.returncode == 1 and UNSUPPORTED_RE.search(r.err):
        raise Skip("pytop does not support this version (%s)" % r.err.splitlines()[0])
    if r.returncode != 0:
        raise Fail([Problem("pytop %s: exit status %s" % (cmd, r.returncode),
                            ["stderr: " + l for l in r.err.splitlines()[:10]])])
    return r


def check_wrong_layout(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop told (for testing) to take another version's layout must refuse, not print."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    tids = {t["native_id"] for i in expect["interpreters"] for t in i["threads"]}
    wait_for_threads(proc.pid, len(tids), THREADS_GONE_TIMEOUT)
    minor = py.version[1]
    # Take a neighbour's layout, never the target's own (the variable names 3.x only): 2.7 and
    # 3.7 take 3.6's (2.7's runtime is found by symbol as 3.6's is), 3.6 takes 3.7's, 3.8-3.11
    # the next one's, 3.12 3.11's, the debug-offset versions (3.13+) 3.12's.
    if py.version[0] == 2 or minor == 7:
        wrong = "3.6"
    else:
        wrong = "3.%d" % (7 if minor == 6 else minor + 1 if minor in (8, 9, 10, 11)
                          else 11 if minor == 12 else 12)
    problems = []
    for fmt in ([], ["--json"]):
        args = [ctx.pytop, "-p", str(proc.pid), "--dump"] + fmt
        r = run(args, timeout=PYTOP_TIMEOUT, env=clean_env(PYTOP_TEST_FORCE_VERSION=wrong))
        out = r.stdout.decode("utf-8", "replace")
        if r.returncode != 1 or not re.search(r"does not fit|refusing|not supported", r.err):
            problems.append(Problem("pytop %s with a %s layout: exit status %s, expected 1 and "
                                    "a refusal" % (" ".join(args[1:]), wrong, r.returncode),
                                    ["stderr: " + l for l in r.err.splitlines()[:5]]))
        elif "File " in out or '"frames"' in out:
            problems.append(Problem("pytop printed frames with a wrong (%s) layout" % wrong))
        else:
            notes.append("forced %s layout: %s" % (wrong, r.err.splitlines()[0]))
    if problems:
        raise Fail(problems)


def labelled(check, problems):
    for p in problems:
        p.headline = "%s: %s" % (check, p.headline)
    return problems


def remote_threads(remote):
    """{(interpreter id, tid): frames} of remote_unwind.py's output, without the __init__
    cleanup shim pytop leaves out (compare.is_init_shim())."""
    out = {}
    for i in remote["interpreters"]:
        for t in i["threads"]:
            out[(i["id"], t["tid"])] = [
                f for f in t["frames"] if not is_init_shim(
                    {"function": f["funcname"], "file": f["filename"], "line": f.get("lineno")})]
    return out


def remote_with(py, pid, flag):
    """remote_unwind.py PID FLAG's threads (remote_threads()), or raises Fail when it fails."""
    r = run([py.path, REMOTE_UNWIND, str(pid), flag], timeout=PYTOP_TIMEOUT, env=clean_env())
    if r.returncode != 0:
        raise Fail([Problem("remote_unwind.py %s failed (exit %s)" % (flag, r.returncode),
                            r.err.splitlines()[-5:])])
    return remote_threads(json.loads(r.stdout.decode("utf-8")))


def remote_opcode_problems(py, pid, snap, notes):
    """3.15+: each parked frame's opcode (the code unit as the interpreter holds it) as CPython's
    unwinder reports it with opcodes=True, frame for frame."""
    theirs = {key: [f.get("opcode") for f in frames
                    if f["funcname"] not in ("<native>", "<GC>", "<shim>")]
              for key, frames in remote_with(py, pid, "--opcodes").items()}
    problems = []
    compared = 0
    for interp_id, t in all_threads(snap):
        want = theirs.get((interp_id, t.get("tid")))
        if want is None:
            continue
        ours = [(f.get("instruction") or {}).get("opcode") for f in python_frames(t)]
        compared += len(ours)
        if ours != want:
            problems.append(Problem("thread %s: opcodes %s, RemoteUnwinder %s"
                                    % (t.get("tid"), ours, want)))
    notes.append("(e) RemoteUnwinder(opcodes=True): %d frames' opcodes compared" % compared)
    return problems


def remote_native_problems(py, pid, snap, notes):
    """3.15+: the frames with <native> where C called into Python, as CPython's unwinder lists
    them with native=True, frame for frame."""
    theirs = {key: [f["funcname"] for f in frames]
              for key, frames in remote_with(py, pid, "--native").items()}
    problems = []
    natives = 0
    for interp_id, t in all_threads(snap):
        want = theirs.get((interp_id, t.get("tid")))
        if want is None:
            continue
        ours = [f.get("function") for f in t.get("frames") or []]
        natives += ours.count("<native>")
        if ours != want:
            problems.append(Problem("thread %s: frames differ" % t.get("tid"),
                                    ["RemoteUnwinder: %s" % want, "pytop:          %s" % ours]))
    notes.append("(f) --native: %d <native> frames, as RemoteUnwinder(native=True)" % natives)
    return problems


def check_target(ctx, py, proc, outfile, log_path, workdir, notes):
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    tids = {t["native_id"] for i in expect["interpreters"] for t in i["threads"]}
    wait_for_threads(proc.pid, len(tids), THREADS_GONE_TIMEOUT)

    r = pytop_dump(ctx, proc.pid, json_output=True)
    notes.append("pytop --dump --json: %.3f s" % r.seconds)
    try:
        snap = json.loads(r.stdout.decode("utf-8"))
    except ValueError as e:
        raise Fail([Problem("pytop --json: not JSON (%s)" % e,
                            r.stdout.decode("utf-8", "replace").splitlines()[:5])])
    if snap.get("warnings"):
        notes.append("pytop warnings: %s" % "; ".join(map(str, snap["warnings"])))
    problems = labelled("pytop vs target", compare_self_report(expect, snap, py.version))
    nthreads = len(all_threads(snap))
    nframes = sum(len(python_frames(t)) for _, t in all_threads(snap))
    notes.append("(a) target's own view: %d threads, %d frames" % (nthreads, nframes))
    if r.seconds > MAX_DUMP_SECONDS:
        problems.append(Problem("pytop --dump --json took %.1f s (limit %.1f s, "
                                "PYTOP_TEST_MAX_DUMP_SECONDS)" % (r.seconds, MAX_DUMP_SECONDS)))

    # --opcodes: each frame's instruction (offset, name as dis gives it) as the target reports.
    ops = json.loads(pytop_dump(ctx, proc.pid, True, ["--opcodes"]).stdout.decode("utf-8"))
    found = compare_self_report(expect, with_instr(ops), py.version, ["instr"])
    problems += labelled("pytop --opcodes vs target", found)
    notes.append("(e) --opcodes: %d frames with their instruction" % sum(
        1 for _, t in all_threads(ops) for f in t.get("frames") or [] if f.get("instruction")))
    if py.version >= (3, 15):
        problems += labelled("pytop --opcodes vs RemoteUnwinder(opcodes=True)",
                             remote_opcode_problems(py, proc.pid, ops, notes))
        native = json.loads(pytop_dump(ctx, proc.pid, True, ["--native"]).stdout.decode("utf-8"))
        problems += labelled("pytop --native vs RemoteUnwinder(native=True)",
                             remote_native_problems(py, proc.pid, native, notes))

    text = pytop_dump(ctx, proc.pid, json_output=False).stdout.decode("utf-8", "replace")
    problems += labelled("pytop text vs JSON", compare_text_with_json(text, snap))
    notes.append("(d) text dump vs JSON: %d thread blocks"
                 % len(parse_text_dump(text, PYTOP_HEADER_RE)))

    if py.version >= (3, 14):
        r = run([py.path, REMOTE_UNWIND, str(proc.pid)], timeout=PYTOP_TIMEOUT, env=clean_env())
        if r.returncode != 0:
            problems.append(Problem("_remote_debugging oracle failed (exit %s)" % r.returncode,
                                    r.err.splitlines()[-10:]))
        else:
            remote = json.loads(r.stdout.decode("utf-8"))
            problems += labelled("pytop vs _remote_debugging",
                                 compare_remote(remote, snap, py.version, notes))
            notes.append("(b) _remote_debugging: %s, %d interpreter(s), %d threads" % (
                "grouped by interpreter" if remote["grouped"] else "flat list",
                len(remote["interpreters"]),
                sum(len(i["threads"]) for i in remote["interpreters"])))

    if py.version >= (3, 15):
        # A cwd nothing lives under, so the dump keeps absolute file names where it can.
        cwd = os.path.join(workdir, "dump-cwd")
        os.makedirs(cwd, exist_ok=True)
        r = run([py.path, "-m", "profiling.sampling", "dump", "-a", str(proc.pid)],
                timeout=PYTOP_TIMEOUT, cwd=cwd,
                env=clean_env(NO_COLOR="1", PYTHON_COLORS="0", TERM="dumb"))
        if r.returncode != 0:
            problems.append(Problem("profiling.sampling dump failed (exit %s)" % r.returncode,
                                    r.err.splitlines()[-10:]))
        else:
            cpython_text = r.stdout.decode("utf-8", "replace")
            problems += labelled("pytop text vs profiling.sampling dump",
                                 compare_cpython_dump(cpython_text, cwd, text, notes))
            notes.append("(c) profiling.sampling dump: %d threads"
                         % len(parse_text_dump(cpython_text, CPYTHON_HEADER_RE)))

    if problems:
        raise Fail(problems)
