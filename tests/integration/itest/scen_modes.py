"""Sampling modes (pytop --mode, --active-only): the modes scenario."""
import json

from .harness import (Fail, PYTOP_TIMEOUT, Problem, REMOTE_MODES, TARGET_START_TIMEOUT,
                      clean_env, run)
from .compare import all_threads
from .scen_batch import json_lines, pytop_batch
from .scen_stacks import wait_for_report

# Which threads of targets/modes.py a mode must count (some samples) and must not (none); the
# ones in neither may go either way (the hasher takes the GIL for a moment between hashes).
MODE_COUNTS = {
    "wall": ({"spinner", "waiter", "hasher", "sleeper", "handler", "main"}, set()),
    "cpu": ({"spinner", "waiter", "hasher"}, {"sleeper", "handler", "main"}),
    "gil": ({"spinner", "waiter"}, {"sleeper", "handler", "main"}),
    "exception": ({"handler"}, {"spinner", "waiter", "hasher", "sleeper", "main"}),
}
# The function each role runs, innermost.
ROLE_FUNCTION = {"spinner": "spin", "waiter": "spin_too", "hasher": "hash_loop"}
MODE_ARGS = ["-n", "1", "-d", "1.5", "-r", "200", "--json"]
REMOTE_SAMPLES = 150


def role_samples(doc, roles):
    """{role: the thread's samples in DOC (the count of its thread-samples the mode counted)}."""
    by_tid = {t.get("tid"): t for _, t in all_threads(doc)}
    return {role: (by_tid.get(tid) or {}).get("samples") for role, tid in roles.items()}


def mode_problems(mode, doc, roles, what):
    problems = []
    sampling = doc.get("sampling") or {}
    if sampling.get("mode") != mode:
        problems.append(Problem("%s: sampling.mode is %r, not %r" % (what, sampling.get("mode"),
                                                                     mode)))
    counted = role_samples(doc, roles)
    must, must_not = MODE_COUNTS[mode]
    for role in sorted(must):
        if not counted.get(role):
            problems.append(Problem("%s: the %s thread (tid %s) has %r samples, expected some"
                                    % (what, role, roles[role], counted.get(role))))
    for role in sorted(must_not):
        if counted.get(role) != 0:
            problems.append(Problem("%s: the %s thread (tid %s) has %r samples, expected 0 "
                                    "(listed with samples 0)" % (what, role, roles[role],
                                                                 counted.get(role))))
    total = sum(v for v in counted.values() if isinstance(v, int))
    if sampling.get("thread_samples") != total:
        problems.append(Problem("%s: sampling.thread_samples %r is not the threads' samples "
                                "added up (%d)" % (what, sampling.get("thread_samples"), total)))
    names = {f.get("function") for f in doc.get("functions") or [] if f.get("own")}
    for role in sorted(must_not):
        if ROLE_FUNCTION.get(role) in names:
            problems.append(Problem("%s: function %s of the %s thread has own samples"
                                    % (what, ROLE_FUNCTION[role], role)))
    return problems


def remote_problems(ctx, py, pid, mode, roles, notes):
    """On 3.15+, CPython's unwinder in the same mode must count the same threads."""
    r = run([py.path, REMOTE_MODES, str(pid), mode, str(REMOTE_SAMPLES)], timeout=PYTOP_TIMEOUT,
            env=clean_env())
    try:
        remote = json.loads(r.stdout.decode("utf-8", "replace"))
    except ValueError:
        return [Problem("remote_modes.py %s: no JSON (exit %s)" % (mode, r.returncode),
                        r.err.splitlines()[:5])]
    if "error" in remote:
        return [Problem("remote_modes.py %s: %s" % (mode, remote["error"]))]
    seen = {int(k): v for k, v in remote.get("tids", {}).items()}
    must, must_not = MODE_COUNTS[mode]
    problems = []
    for role in sorted(must | must_not):
        if (seen.get(roles[role], 0) > 0) != (role in must):
            problems.append(Problem("CPython's unwinder, mode %s: the %s thread listed in %d of %d "
                                    "samples; pytop %s it" % (mode, role, seen.get(roles[role], 0),
                                                              remote.get("samples"),
                                                              "counts" if role in must
                                                              else "does not count")))
    notes.append("%s: CPython's unwinder agrees (%s)" % (mode, ", ".join(
        "%s %d" % (role, seen.get(tid, 0)) for role, tid in sorted(roles.items()))))
    return problems


def check_modes(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop -b --mode M for each mode, and --active-only: which threads and functions count,
    compared with what each thread does (and on 3.15+ with CPython's unwinder in that mode);
    the Functions table's CPU share tells the spinner from the sleepers in wall mode."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    roles = dict(expect["tids"])
    roles["main"] = expect["main"]
    problems = []
    for mode in ("wall", "cpu", "gil", "exception"):
        args = MODE_ARGS + (["--mode", mode] if mode != "wall" else [])
        docs = json_lines(pytop_batch(ctx, proc.pid, args).stdout.decode("utf-8", "replace"),
                          "pytop -b --mode %s" % mode)
        if len(docs) != 1:
            problems.append(Problem("pytop -b --mode %s: %d documents" % (mode, len(docs))))
            continue
        doc = docs[0]
        problems += mode_problems(mode, doc, roles, "--mode %s" % mode)
        notes.append("%s: %s" % (mode, ", ".join("%s %s" % kv for kv in
                                                 sorted(role_samples(doc, roles).items()))))
        if mode == "wall":
            problems += cpu_share_problems(doc)
            reader, sampling = doc.get("reader") or {}, doc.get("sampling") or {}
            if reader.get("samples") != sampling.get("samples"):
                problems.append(Problem("reader.samples %r is not the interval's samples %r"
                                        % (reader.get("samples"), sampling.get("samples"))))
        if mode != "wall" and py.minor >= (3, 15):
            problems += remote_problems(ctx, py, proc.pid, mode, roles, notes)
    docs = json_lines(pytop_batch(ctx, proc.pid, MODE_ARGS + ["--active-only"]).stdout.decode(
        "utf-8", "replace"), "pytop -b --active-only")
    if docs:
        doc = docs[0]
        if (doc.get("sampling") or {}).get("active_only") is not True:
            problems.append(Problem("--active-only: sampling.active_only is not true"))
        counted = role_samples(doc, roles)
        for role in ("sleeper", "handler", "main"):
            if counted.get(role) != 0:
                problems.append(Problem("--active-only: the %s thread, which never holds the "
                                        "GIL, has %r samples" % (role, counted.get(role))))
        if not counted.get("spinner"):
            problems.append(Problem("--active-only: the spinner has no samples"))
        # Its kernel CPU time runs on between its turns with the GIL (it spins throughout).
        by_tid = {t.get("tid"): t for _, t in all_threads(doc)}
        spin_cpu = (by_tid.get(roles["spinner"]) or {}).get("cpu_pct")
        if not isinstance(spin_cpu, (int, float)) or not 1 <= spin_cpu <= 110:
            problems.append(Problem("--active-only: the spinner's cpu_pct is %r, not a share of "
                                    "a busy thread" % (spin_cpu,)))
        notes.append("active-only: %s" % ", ".join("%s %s" % kv for kv in sorted(counted.items())))
    text = pytop_batch(ctx, proc.pid, ["-n", "1", "-d", "0.5", "--mode", "cpu"]).stdout.decode(
        "utf-8", "replace")
    for needle in ("Mode: cpu", "thread-samples on a CPU)", "CPU%"):
        if needle not in text:
            problems.append(Problem("pytop -b --mode cpu (text): no %r" % needle,
                                    text.splitlines()[:12]))
    if problems:
        raise Fail(problems)


# The spinners share the GIL (each waits for it, asleep, about half the time) and the machine's
# CPUs with the hasher: together, their own samples whose state was read are on a CPU in about
# half of them (at least STATES_ENOUGH of them are read), never none; the parked threads' never.
STATES_ENOUGH = 10


def cpu_share_problems(doc):
    """Wall mode reads threads' states in turn: the spinning functions' own samples are often on
    a CPU, the parked threads' (innermost in threading's Condition.wait) never."""
    problems = []
    funcs = {f.get("function"): f for f in doc.get("functions") or []}
    # Before 3.11 Event.wait and Condition.wait are both "wait": the one the threads park in
    # has the own samples.
    waits = [f for f in doc.get("functions") or []
             if f.get("function") in ("Condition.wait", "wait")]
    parked = max(waits, key=lambda f: f.get("own") or 0) if waits else None
    if parked is None or not parked.get("own_state_samples") or parked.get("own_cpu_pct") != 0:
        problems.append(Problem("--mode wall: the parked threads' wait has CPU share %r of %r "
                                "states read, expected 0 of some" % (
                                    (parked or {}).get("own_cpu_pct"),
                                    (parked or {}).get("own_state_samples")),
                                [json.dumps(parked)]))
    busy = [funcs.get(name) or {} for name in ("spin", "spin_too", "hash_loop")]
    states = sum(f.get("own_state_samples") or 0 for f in busy)
    on = sum(round((f.get("own_cpu_pct") or 0) * (f.get("own_state_samples") or 0) / 100)
             for f in busy)
    if states < STATES_ENOUGH or on == 0:
        problems.append(Problem("--mode wall: the busy threads' own samples: %d of %d states read "
                                "on a CPU (expected some of at least %d)"
                                % (on, states, STATES_ENOUGH), [json.dumps(f) for f in busy]))
    return problems


# targets/pulse.py is on a CPU for the first 3 ms of every 10 ms of the clock: the period of
# -r 100. Sampled at a random point of each period, it is on a CPU in about 30 % of the samples
# (more on a loaded machine, where it waits to run); a strict 100 Hz grid sees it at one phase
# every time, in (nearly) all samples or none.
PULSE_ARGS = ["-n", "1", "-d", "2", "-r", "100", "--mode", "cpu", "--json"]
PULSE_SHARE = (5.0, 85.0)
PULSE_SAMPLES = 50


def check_schedule(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop -b -r 100 --mode cpu on a thread that works in step with the rate: its share of
    the samples is its share of the time, not 0 % or 100 % as a sampler locked to one phase of
    its period would count."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    if "error" in expect:
        raise Fail([Problem("pulse target: %s" % expect["error"])])
    tid = expect["tids"]["pulse"]
    docs = json_lines(pytop_batch(ctx, proc.pid, PULSE_ARGS).stdout.decode("utf-8", "replace"),
                      "pytop -b -r 100 --mode cpu")
    if len(docs) != 1:
        raise Fail([Problem("pytop -b -r 100 --mode cpu: %d documents, expected 1" % len(docs))])
    samples = (docs[0].get("sampling") or {}).get("samples")
    counted = {t.get("tid"): t for _, t in all_threads(docs[0])}.get(tid, {}).get("samples")
    if not isinstance(samples, int) or samples < PULSE_SAMPLES or not isinstance(counted, int):
        raise Fail([Problem("pytop -b -r 100 --mode cpu: %r samples, the pulse thread's %r"
                            % (samples, counted))])
    share = 100.0 * counted / samples
    notes.append("the pulse thread (on a CPU %.0f %% of each %.0f ms) on a CPU in %d of %d "
                 "samples (%.1f %%)" % (100 * expect["busy"] / expect["period"],
                                        1000 * expect["period"], counted, samples, share))
    if not PULSE_SHARE[0] <= share <= PULSE_SHARE[1]:
        raise Fail([Problem("the pulse thread, on a CPU %.0f %% of the time in step with the "
                            "rate, was on a CPU in %d of %d samples (%.1f %%, expected %.0f-%.0f "
                            "%%): are the samples locked to one phase of the period?"
                            % (100 * expect["busy"] / expect["period"], counted, samples, share,
                               PULSE_SHARE[0], PULSE_SHARE[1]))])
