"""The tasks and taskcycle scenarios: asyncio tasks."""
import json
import re

from .harness import (Fail, PYTOP_TIMEOUT, Problem, REMOTE_TASKS, TARGET_START_TIMEOUT, clean_env,
                      run)
from .scen_stacks import labelled, pytop_dump, wait_for_report


# ---------------------------------------------------------------- asyncio tasks

def task_frames(frames):
    return [(f.get("function"), f.get("file"), f.get("line")) for f in frames or []]


def pstree_blocks(lines):
    """Lines of a pstree drawing split into one block per root."""
    blocks = []
    for line in lines:
        if line.startswith("\u2514\u2500\u2500 ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return blocks


def pure_tree(block, pure_names):
    """Whether a drawn tree names tasks, all of them in PURE_NAMES."""
    names = [m.group(1) for l in block for m in [re.search(r"\(T\) (.*)$", l)] if m]
    return bool(names) and all(n in pure_names for n in names)


def target_tasks(expect):
    """Every task the target reports, by id: its name (None before 3.8, when tasks had none),
    label (its name, or the label the target made it with) and coroutine function."""
    return {t["id"]: t for rep in expect["loops"].values() for t in rep["tasks"]}


def shown_name(t):
    """How pytop's text and live view show a task the target reports as T: its name, or where
    it has none (before 3.8) its coroutine, as asyncio's repr of a task names it."""
    return t["name"] if t["name"] is not None else "coro=%s()" % t.get("coro")


def compare_tasks_self(expect, tasks):
    """pytop's tasks vs the target's own list per loop (its pure-Python tasks, expect["pure"],
    included), the coroutine each runs, and the edges the program builds (by the labels the
    target gave its tasks: their names, or before 3.8 labels of its own)."""
    problems = []
    mine = target_tasks(expect)
    labels = {i: t.get("label") for i, t in mine.items()}
    for loop, rep in sorted(expect["loops"].items()):
        want = {t["id"]: t["name"] for t in rep["tasks"]}
        got = {t.get("id"): t.get("name") for t in tasks if t.get("thread") == rep["tid"]}
        if want != got:
            diff = ["missing: %s %s %s" % (hex(i), n, labels.get(i))
                    for i, n in want.items() if i not in got or got[i] != n]
            diff += ["extra: %s %s" % (hex(i), n) for i, n in got.items() if i not in want]
            problems.append(Problem("loop %s (thread %s): %d tasks in asyncio.all_tasks(), "
                                    "pytop has %d, %d differ" % (loop, rep["tid"], len(want),
                                                                 len(got), len(diff)), diff[:10]))
    # The outermost frame of a task's coroutine stack is the coroutine the target gave it.
    odd = []
    for t in tasks:
        stack = t.get("coroutine_stack") or []
        coro = mine.get(t.get("id"), {}).get("coro")
        if coro is not None and (not stack or stack[-1].get("function") != coro):
            odd.append("%s %s: runs %s, pytop's outermost frame %s" % (
                hex(t.get("id")), labels.get(t.get("id")), coro,
                stack[-1].get("function") if stack else None))
    if odd:
        problems.append(Problem("%d tasks with another coroutine than the target's" % len(odd),
                                odd[:5]))
    for child, parents in sorted(expect["edges"].items()):
        got = sorted(str(labels.get(a.get("task"), a.get("task"))) for t in tasks
                     if labels.get(t.get("id")) == child for a in t.get("awaited_by") or [])
        if got != sorted(parents):
            problems.append(Problem("%s awaited by %s, expected %s" % (child, got, parents)))
    bulk = [t for t in tasks if str(labels.get(t.get("id"))).startswith("bulk-")]
    odd = [t for t in bulk if t.get("state") != "pending"
           or [f[0] for f in task_frames(t.get("coroutine_stack"))] != ["bulk"]]
    if len(bulk) != expect["bulk"] or odd:
        problems.append(Problem("%d bulk tasks (expected %d), %d not pending in bulk()"
                                % (len(bulk), expect["bulk"], len(odd)),
                                [json.dumps(t)[:200] for t in odd[:3]]))
    return problems


def pure_task_ids(expect):
    """The ids of the target's pure-Python tasks (by the labels it gives them)."""
    pure = set(expect.get("pure", []))
    return {t["id"] for rep in expect["loops"].values() for t in rep["tasks"]
            if t.get("label") in pure}


def compare_tasks_remote(remote, tasks, pure_ids, notes):
    """pytop's tasks vs RemoteUnwinder.get_all_awaited_by(), list by list. The pure-Python
    tasks (PURE_IDS), which _remote_debugging does not list, are left out of pytop's."""
    problems = []
    ids = {t.get("id") for t in tasks}
    for entry in remote:
        thread = entry["thread"] or None
        want = []
        for t in entry["tasks"]:
            awaiters = [(a["task"] if a["task"] in ids or a["coroutine_stack"] else None,
                         task_frames(a["coroutine_stack"])) for a in t["awaited_by"]]
            want.append((t["id"], t["name"], task_frames(t["coroutine_stack"]), awaiters))
        got = [(t.get("id"), t.get("name"), task_frames(t.get("coroutine_stack")),
                [(a.get("task"), task_frames(a.get("coroutine_stack")))
                 for a in t.get("awaited_by") or []])
               for t in tasks if t.get("thread") == thread and t.get("id") not in pure_ids]
        if want != got:
            first = next((i for i in range(max(len(want), len(got)))
                          if i >= len(want) or i >= len(got) or want[i] != got[i]), None)
            problems.append(Problem("thread %s: %d tasks, pytop %d; first difference at #%s"
                                    % (thread, len(want), len(got), first),
                                    ["_remote_debugging: %r" % (want[first:first + 1],),
                                     "pytop:             %r" % (got[first:first + 1],)]))
    seen = {e["thread"] or None for e in remote}
    unseen = sorted({t.get("thread") for t in tasks if t.get("id") not in pure_ids} - seen,
                    key=str)
    if unseen:
        notes.append("_remote_debugging lists no tasks of thread(s) %s (pytop does)" % unseen)
    return problems, not unseen


def pstree_cycles(lines):
    """The cycles an `asyncio pstree` error lists, each turned to start at its least name."""
    cycles = set()
    for line in lines:
        if line.startswith("cycle: "):
            names = line[len("cycle: "):].split(" \u2192 ")[:-1]
            if names:
                k = names.index(min(names))
                cycles.add(tuple(names[k:] + names[:k]))
    return cycles


def check_tasks(ctx, py, proc, outfile, log_path, workdir, notes):
    """asyncio: pytop's JSON tasks vs the target's own report; on 3.14+ also vs
    RemoteUnwinder.get_all_awaited_by() and its text tree vs `python -m asyncio pstree`
    (before 3.14: the text tree must draw every task, and a cycle as one)."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    r = pytop_dump(ctx, proc.pid, json_output=True)
    try:
        snap = json.loads(r.stdout.decode("utf-8"))
    except ValueError as e:
        raise Fail([Problem("pytop --json: not JSON (%s)" % e)])
    interps = snap.get("interpreters") or [{}]
    if interps[0].get("tasks") is None:
        raise Fail([Problem("pytop: tasks is null", ["warnings: %s" % snap.get("warnings")])])
    tasks = [t for i in interps for t in i.get("tasks") or []]
    notes.append("pytop --dump --json: %.3f s for %d tasks" % (r.seconds, len(tasks)))
    # 3.14+: C tasks come from the _asyncio debug section (as _remote_debugging's do), the
    # pure-Python ones from asyncio's registries; older versions read all from the registries.
    registries = py.version < (3, 14)
    problems = labelled("pytop vs target", compare_tasks_self(expect, tasks))
    if registries:
        problems += check_tasks_text(ctx, proc, expect, tasks, notes)
        if problems:
            raise Fail(problems)
        return

    pure_ids = pure_task_ids(expect)
    if expect.get("pure"):
        notes.append("%d pure-Python tasks: compared with the target's own list, left out of "
                     "the _remote_debugging and pstree comparisons" % len(pure_ids))
    r = run([py.path, REMOTE_TASKS, str(proc.pid)], timeout=PYTOP_TIMEOUT, env=clean_env())
    if r.returncode != 0:
        problems.append(Problem("_remote_debugging oracle failed (exit %s)" % r.returncode,
                                r.err.splitlines()[-10:]))
        complete = False
    else:
        found, complete = compare_tasks_remote(json.loads(r.stdout.decode("utf-8")), tasks,
                                               pure_ids, notes)
        problems += labelled("pytop vs _remote_debugging", found)

    r = pytop_dump(ctx, proc.pid, json_output=False)
    notes.append("pytop --dump: %.3f s" % r.seconds)
    text = r.stdout.decode("utf-8", "replace").split("\n")
    start = next((i for i, l in enumerate(text) if l.startswith("Asyncio tasks")), None)
    ours = []
    for line in text[start + 1:] if start is not None else []:
        if line == "Warnings:" or line.startswith(("Interpreter ", "Thread ")):
            break
        ours.append(line)
    while ours and not ours[-1]:
        ours.pop()
    r = run([py.path, "-m", "asyncio", "pstree", str(proc.pid)], timeout=PYTOP_TIMEOUT,
            env=clean_env(NO_COLOR="1", PYTHON_COLORS="0", TERM="dumb"))
    notes.append("python -m asyncio pstree: %.3f s" % r.seconds)
    theirs = r.stdout.decode("utf-8", "replace").splitlines()
    # pstree draws only the C tasks: pytop's trees of pure-Python tasks alone are set aside,
    # and the rest must be pstree's, line for line.
    pure_trees = [b for b in pstree_blocks(ours) if pure_tree(b, set(expect.get("pure", [])))]
    if expect.get("pure") and not expect.get("cycle"):
        ours = [l for b in pstree_blocks(ours) if b not in pure_trees for l in b]
        notes.append("pytop text: %d trees of pure-Python tasks only" % len(pure_trees))
    if expect.get("cycle"):
        ring = expect["cycle"]
        want = {tuple(ring[ring.index(min(ring)):] + ring[:ring.index(min(ring))])}
        if r.returncode != 1 or pstree_cycles(r.err.splitlines()) != want:
            problems.append(Problem("asyncio pstree: exit %s, cycles %s, expected 1 and %s"
                                    % (r.returncode, pstree_cycles(r.err.splitlines()), want)))
        if not ours or not ours[0].startswith("ERROR: await-graph contains cycles") or \
                pstree_cycles(ours) != want:
            problems.append(Problem("pytop text does not report the cycle %s" % ring, ours[:5]))
    elif r.returncode != 0:
        problems.append(Problem("asyncio pstree failed (exit %s)" % r.returncode,
                                r.err.splitlines()[-5:]))
    elif complete and ours != theirs:
        first = next(i for i in range(max(len(ours), len(theirs)))
                     if i >= len(ours) or i >= len(theirs) or ours[i] != theirs[i])
        problems.append(Problem("pytop text tree vs pstree: line %d differs" % (first + 1),
                                ["pstree: %r" % theirs[first:first + 1],
                                 "pytop:  %r" % ours[first:first + 1]]))
    elif not complete:
        # pstree saw fewer task lists: each of its trees must be one of pytop's, in order.
        mine = iter(pstree_blocks(ours))
        missing = [b[0] for b in pstree_blocks(theirs) if not any(b == m for m in mine)]
        if missing:
            problems.append(Problem("pytop text tree lacks %d of pstree's trees" % len(missing),
                                    missing[:5]))
    if problems:
        raise Fail(problems)


def shown_cycle(expect):
    """The target's await ring as pytop's text shows it (each task by shown_name()), turned to
    start at its least name as pstree_cycles() turns each cycle it reads."""
    by_label = {t.get("label"): t for t in target_tasks(expect).values()}
    ring = [shown_name(by_label[l]) if l in by_label else l for l in expect["cycle"]]
    k = ring.index(min(ring))
    return {tuple(ring[k:] + ring[:k])}


def check_tasks_text(ctx, proc, expect, tasks, notes):
    """Before 3.14 (no pstree to compare with): pytop's text tree names every task it found (by
    its name, or where it has none by its coroutine), and reports the target's await cycle, if
    it has one, as pstree would."""
    r = pytop_dump(ctx, proc.pid, json_output=False)
    notes.append("pytop --dump: %.3f s" % r.seconds)
    text = r.stdout.decode("utf-8", "replace").split("\n")
    start = next((i for i, l in enumerate(text) if l.startswith("Asyncio tasks")), None)
    if start is None:
        return [Problem("pytop text has no asyncio task tree")]
    ours = []
    for line in text[start + 1:]:
        if line == "Warnings:" or line.startswith(("Interpreter ", "Thread ")):
            break
        ours.append(line)
    drawn = set(re.findall(r"\(T\) (\S+)", "\n".join(ours)))
    problems = []
    mine = target_tasks(expect)
    missing = sorted({shown_name(mine[t.get("id")]) if t.get("id") in mine else str(t.get("name"))
                      for t in tasks} - drawn)
    if expect.get("cycle"):
        want = shown_cycle(expect)
        if not ours or not ours[0].startswith("ERROR: await-graph contains cycles") or \
                pstree_cycles(ours) != want:
            problems.append(Problem("pytop text does not report the cycle %s" % sorted(want),
                                    ours[:5]))
    elif missing:
        problems.append(Problem("pytop text tree lacks %d tasks" % len(missing), missing[:5]))
    return problems
