"""The hostile scenario: targets that corrupt their own interpreter state."""
import json
import os
import re
import subprocess

from .harness import (CHILDREN, Fail, Problem, Skip, TARGETS, TARGET_START_TIMEOUT, UNSUPPORTED_RE,
                      clean_env, q, run)
from .compare import PYTOP_HEADER_RE, all_threads, fmt_frame, parse_text_dump, python_frames
from .scen_stacks import tail, wait_for_report


# ---------------------------------------------------------------- hostile targets

HOSTILE_TIMEOUT = 10.0   # a dump of a corrupted target that takes longer counts as a hang
HOSTILE_MAX_LOOP_FRAMES = 16
SANITIZER_RE = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|Sanitizer")


def hostile_dump(ctx, pid, json_output, label):
    """pytop --dump [--json] of a corrupted target: (stdout text, problems)."""
    args = [ctx.pytop, "-p", str(pid), "--dump"] + (["--json"] if json_output else [])
    shown = "%s: pytop %s" % (label, " ".join(args[3:]))
    r = run(args, timeout=HOSTILE_TIMEOUT, env=clean_env())
    err = ["stderr: " + l for l in r.err.splitlines()[:20]]
    if r.returncode is None:
        return None, [Problem("%s: hang (no answer within %.0f s)" % (shown, HOSTILE_TIMEOUT))]
    if r.returncode < 0:
        return None, [Problem("%s: crashed (signal %d)" % (shown, -r.returncode), err)]
    if SANITIZER_RE.search(r.err):
        return None, [Problem("%s: sanitizer report" % shown, err)]
    if r.returncode == 1 and UNSUPPORTED_RE.search(r.err):
        raise Skip("pytop does not support this version (%s)" % r.err.splitlines()[0])
    if r.returncode != 0:
        return None, [Problem("%s: exit status %s" % (shown, r.returncode), err)]
    return r.stdout.decode("utf-8", "replace"), []


def hostile_task_problems(expect, snap, label, py):
    """No invented task, name, awaiter or frame; canaries present; loops cut short."""
    problems = []
    want = {int(k): v for k, v in expect["tasks"].items()}
    functions = set(expect["functions"]) | {None}
    tasks = [t for i in snap.get("interpreters") or [] for t in i.get("tasks") or []]
    got = {t.get("id"): t for t in tasks}
    for t in tasks:
        w = want.get(t.get("id"))
        what = "%s: task %s %s" % (label, t.get("id"), q(t.get("name")))
        if w is None:
            problems.append(Problem("%s: not a task of the target" % what))
            continue
        if t.get("name") != w["name"]:
            problems.append(Problem("%s: name, expected %s (%s)" % (what, q(w["name"]),
                                                                  w["case"])))
        for a in t.get("awaited_by") or []:
            if a.get("task") is not None and a.get("task") not in want:
                problems.append(Problem("%s: awaited by %s, not a task of the target"
                                        % (what, a.get("task"))))
        stack = t.get("coroutine_stack") or []
        odd = [f.get("function") for f in stack if f.get("function") not in functions]
        if odd:
            problems.append(Problem("%s: frames of no function of the target: %s"
                                    % (what, odd[:3])))
        if t.get("id") in expect["loop_tasks"] and (
                not t.get("coroutine_stack_truncated") or len(stack) > HOSTILE_MAX_LOOP_FRAMES):
            problems.append(Problem("%s: an await loop gave %d frames, truncated %s (expected "
                                    "at most %d, marked truncated)" % (
                                        what, len(stack), t.get("coroutine_stack_truncated"),
                                        HOSTILE_MAX_LOOP_FRAMES)))
        if w["case"] == "awaited-by-garbage" and not t.get("awaited_by_truncated"):
            problems.append(Problem("%s: an unreadable awaiter, not marked awaited_by_truncated"
                                    % what))
    for tid, w in want.items():
        if w["required"] and tid not in got:
            problems.append(Problem("%s: untouched task %s is missing" % (label, q(w["name"]))))
    return problems


def hostile_warning_problems(expect, snap, label, py):
    """What pytop must have said it could not read."""
    problems = []
    warnings = snap.get("warnings") or []
    interp = (snap.get("interpreters") or [{}])[0]
    cases = set(expect["cases"])

    def need(pattern, why):
        if not any(re.search(pattern, str(w)) for w in warnings):
            problems.append(Problem("%s: no warning matching /%s/ (%s)" % (label, pattern, why),
                                    ["warnings: %s" % warnings]))
    if not warnings:
        problems.append(Problem("%s: no warnings at all" % label))
    if expect["gc"] == "corrupted":
        if interp.get("gc") is not None:
            problems.append(Problem("%s: gc shown though its state is corrupt: %s"
                                    % (label, json.dumps(interp.get("gc"))[:200])))
        need(r"GC", "the GC state is corrupt")
    registries = py.version < (3, 14)
    if "registry-huge" in cases:
        need(r"registry", "the task registry is corrupt")
        if not interp.get("tasks_truncated"):
            problems.append(Problem("%s: tasks not marked truncated" % label))
    if "task-list-loop" in cases:
        need(r"loops", "a task list loops")
        if not interp.get("tasks_truncated"):
            problems.append(Problem("%s: tasks not marked truncated" % label))
    if registries and "gather-children-huge" in cases:
        need(r"_children", "a gather's children list is unreadable")
    # A pure-Python task's awaited object is read on every version (3.14+: its registries);
    # a C task's only where the registries hold it (before 3.14).
    if "fw-py-garbage" in cases or (registries and "fw-c-garbage" in cases):
        need(r"awaits? .*(unreadable|cannot be read)", "a task awaits an unreadable object")
    if cases & {"thread-name-not-str", "thread-name-length-2**40"}:
        need(r"thread.*name", "a thread's name is unreadable")
    if "exc-chain-loop" in cases:
        need(r"exception chain loops", "a thread's exception chain loops")
    return problems


def hostile_problems(ctx, py, pid, expect, label):
    out, problems = hostile_dump(ctx, pid, True, label)
    if out is None:
        return problems
    try:
        snap = json.loads(out)
    except ValueError as e:
        return [Problem("%s: pytop --json: not JSON (%s)" % (label, e), out.splitlines()[:5])]
    if expect["fake"] in out:
        problems.append(Problem("%s: pytop --json shows the fake str %r" % (label,
                                                                             expect["fake"])))
    threads = {t.get("tid"): t for _, t in all_threads(snap)}
    main = threads.get(expect["main_tid"])
    if main is None or expect["main_function"] not in [f.get("function")
                                                      for f in python_frames(main)]:
        problems.append(Problem("%s: main thread %s without its frame %s" % (
            label, expect["main_tid"], expect["main_function"]),
            [fmt_frame(f) for f in python_frames(main or {})][:5]))
    for tid, name in sorted(expect["threads"].items()):
        t = threads.get(int(tid))
        if t is None:
            problems.append(Problem("%s: thread %s %s missing" % (label, tid, q(name))))
        elif t.get("name") != name:
            problems.append(Problem("%s: thread %s named %s, expected %s" % (
                label, tid, q(t.get("name"))[:80], q(name))))
    looped = threads.get(expect.get("exc_loop_tid"))
    if "exc-chain-loop" in expect["cases"] and looped is not None and \
            looped.get("has_exception") is not None:
        problems.append(Problem("%s: thread %s: has_exception %r, though its exception chain "
                                "loops (expected null)" % (label, looped.get("tid"),
                                                           looped.get("has_exception"))))
    problems += hostile_task_problems(expect, snap, label, py)
    problems += hostile_warning_problems(expect, snap, label, py)
    text, found = hostile_dump(ctx, pid, False, label)
    problems += found
    if text is not None:
        if expect["fake"] in text:
            problems.append(Problem("%s: pytop --dump shows the fake str" % label))
        blocks = {b["tid"]: b for b in parse_text_dump(text, PYTOP_HEADER_RE)}
        frames = [f["function"] for f in (blocks.get(expect["main_tid"]) or {}).get("frames", [])]
        if expect["main_function"] not in frames:
            problems.append(Problem("%s: pytop --dump: main thread without %s" % (
                label, expect["main_function"]), text.splitlines()[:8]))
    return problems


def check_hostile(ctx, py, proc, outfile, log_path, workdir, notes):
    """Targets that corrupt what pytop reads of them (targets/hostile.py): pytop --dump and
    --dump --json finish in time, exit 0, print JSON, show the main thread, and say what they
    could not read, never a value the target does not have. Two target processes: objects
    (proc) and the task registry (started here, as the registry is shared by all loops; not on
    2.7, which has no asyncio)."""
    runs = [("objects", proc, outfile, log_path)]
    reg = None
    if py.version >= (3, 0):
        reg_out = os.path.join(workdir, "registry.json")
        reg_log = os.path.join(workdir, "registry.log")
        with open(reg_log, "wb") as log:
            reg = CHILDREN.start([py.path, os.path.join(TARGETS, "hostile.py"), reg_out,
                                  "registry"], stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                 env=clean_env())
        runs.append(("registry", reg, reg_out, reg_log))
    else:
        notes.append("registry: not in this version: asyncio and its task registry")
    try:
        problems = []
        for label, p, out, logp in runs:
            expect = wait_for_report(p, out, logp, TARGET_START_TIMEOUT)
            notes.append("%s: corrupted %s" % (label, ", ".join(expect["cases"]) or "nothing"))
            # Cases the version has nothing for (task names before 3.8): said, not failed.
            for a in expect.get("absent", []):
                notes.append("%s: not in this version: %s" % (label, a))
            # A case the target could not set up would leave pytop untested: a failure.
            for s in expect["skipped"]:
                problems.append(Problem("%s: the target could not corrupt %s" % (label, s)))
            if label == "objects" and expect["gc"] != "corrupted":
                problems.append(Problem("objects: the target could not corrupt the GC state "
                                        "(%s)" % expect["gc"]))
            problems += hostile_problems(ctx, py, p.pid, expect, label)
            if p.poll() is not None:
                problems.append(Problem("%s: the target died (status %s)" % (label,
                                                                            p.returncode),
                                        tail(logp)))
    finally:
        if reg is not None:
            CHILDREN.kill(reg)
    if problems:
        raise Fail(problems)
