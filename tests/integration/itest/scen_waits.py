"""The waits scenario: each thread's "wait" record (what it is blocked in) and the snapshot's
"deadlocks", against what targets/waits.py says of its threads."""
import json
import re
import time

from .harness import Fail, Problem, TARGET_START_TIMEOUT
from .compare import PYTOP_HEADER_RE, all_threads
from .scen_batch import json_lines, pytop_batch
from .scen_stacks import pytop_dump, wait_for_report

# Every member of a thread's "wait" and the JSON types it may have (None: null).
NUMBER = (int, float)
WAIT_FIELDS = (("kind", (str,)), ("syscall", (str, type(None))), ("fd", (int, type(None))),
               ("object", (str, type(None))), ("lock", (int, type(None))),
               ("variable", (str, type(None))), ("via", (str, type(None))),
               ("owner_tid", (int, type(None))), ("since_s", NUMBER + (type(None),)),
               ("left_s", NUMBER + (type(None),)), ("reason", (str, type(None))),
               ("owner_held_s", NUMBER + (type(None),)), ("requested_s", NUMBER + (type(None),)))
KINDS = ("lock", "gil", "io", "sleep", "running", "unknown")

# The kind each thread of the target is in for good once it reported.
BLOCKED_KINDS = {"rl-a": "lock", "rl-b": "lock", "l-a": "lock", "l-b": "lock", "recv": "io",
                 "sleeper": "sleep", "queue": "lock", "select": "io", "main": "sleep",
                 "attr": "lock"}
DEADLOCKED = ("rl-a", "rl-b")
BUSY = ("busy-1", "busy-2")
# Who waits for whose lock: thread -> (its own lock, the lock it waits for, the other thread).
LOCK_WAITS = {"rl-a": ("rlock_a", "rlock_b", "rl-b"), "rl-b": ("rlock_b", "rlock_a", "rl-a"),
              "l-a": ("lock_a", "lock_b", "l-b"), "l-b": ("lock_b", "lock_a", "l-a")}
RECV_SYSCALLS = ("recvfrom", "recvmsg", "recv", "read")
SLEEP_SYSCALLS = ("clock_nanosleep", "nanosleep", "select", "pselect6")
SELECT_SYSCALLS = ("select", "pselect6", "poll", "ppoll")
SLEEP_SECONDS = 3600          # targets/waits.py's time.sleep()
DUMP_TRIES, DUMP_PAUSE = 5, 0.3
GIL_DUMPS, GIL_PAUSE = 30, 0.05   # dumps, a moment apart, to catch a spinner waiting for the GIL
BATCH_ARGS = ["--json", "-d", "0.5", "-n", "3"]


def name_tag(name, tid):
    return '%s (tid %s)' % (name, tid)


def show(wait):
    return "wait: %s" % json.dumps(wait, sort_keys=True)


class Roles:
    """The target's report: tids by thread name (the main thread as "main") and back."""

    def __init__(self, expect):
        self.tid = dict(expect["tids"])
        self.tid["main"] = expect["main"]
        self.name = {tid: name for name, tid in self.tid.items()}
        self.locks = expect["locks"]


def waits_of(doc, roles):
    """{name: wait record} of the target's threads in DOC (missing threads left out)."""
    by_tid = {t.get("tid"): t for _, t in all_threads(doc)}
    return {name: by_tid[tid].get("wait") for name, tid in roles.tid.items() if tid in by_tid}


def shape_problems(doc, roles, what):
    """Every thread has a "wait" object with every member, of its type; "deadlocks" is a list
    of {"threads", "locks"}. Threads the target has must all be there."""
    problems = []
    threads = [t for _, t in all_threads(doc)]
    present = {t.get("tid") for t in threads}
    gone = sorted(name for name, tid in roles.tid.items() if tid not in present)
    if gone:
        problems.append(Problem("%s: the target's threads %s are not in the snapshot"
                                % (what, ", ".join(name_tag(n, roles.tid[n]) for n in gone))))
    lacking = [t for t in threads if not isinstance(t.get("wait"), dict)]
    if lacking:
        problems.append(Problem(
            "%s: %d of %d threads have no \"wait\" object (the per-thread wait record: kind, "
            "syscall, fd, object, lock, variable, via, owner_tid, since_s, left_s, reason)"
            % (what, len(lacking), len(threads)),
            ["thread %s %s: \"wait\" is %s" % (t.get("tid"), json.dumps(t.get("name")),
                                               json.dumps(t.get("wait", "missing")))
             for t in lacking[:4]]))
    for t in threads:
        wait = t.get("wait")
        if not isinstance(wait, dict):
            continue
        label = "%s: thread %s %s" % (what, t.get("tid"), json.dumps(t.get("name")))
        for field, types in WAIT_FIELDS:
            if field not in wait:
                problems.append(Problem("%s: wait has no member %r" % (label, field),
                                        [show(wait)]))
            elif isinstance(wait[field], bool) or not isinstance(wait[field], types):
                problems.append(Problem("%s: wait.%s is %s, of the wrong type" % (
                    label, field, json.dumps(wait[field])), [show(wait)]))
        if "kind" in wait and wait["kind"] not in KINDS:
            problems.append(Problem("%s: wait.kind %s is none of %s" % (
                label, json.dumps(wait["kind"]), ", ".join(KINDS)), [show(wait)]))
    cycles = doc.get("deadlocks", "missing")
    if not isinstance(cycles, list):
        problems.append(Problem("%s: top-level \"deadlocks\" is %s, expected an array of "
                                "{\"threads\", \"locks\"}" % (what, json.dumps(cycles))))
    else:
        for c in cycles:
            if not (isinstance(c, dict) and isinstance(c.get("threads"), list)
                    and isinstance(c.get("locks"), list)):
                problems.append(Problem("%s: a deadlock is not {\"threads\": [...], \"locks\": "
                                        "[...]}" % what, [json.dumps(c)]))
    return problems


def in_their_waits(doc, roles):
    """True when every blocked thread of the target shows the kind of wait it is in."""
    waits = waits_of(doc, roles)
    return all(isinstance(waits.get(name), dict) and waits[name].get("kind") == kind
               for name, kind in BLOCKED_KINDS.items())


def sanity_problems(doc, roles, what):
    """What no document may say, whatever the moment: an owner that is no thread of the
    snapshot, a thread owning what it waits for, a reason without kind unknown (or none with
    it), a deadlock other than rl-a/rl-b's."""
    problems = []
    threads = [t for _, t in all_threads(doc)]
    tids = {t.get("tid") for t in threads}
    for t in threads:
        wait = t.get("wait")
        if not isinstance(wait, dict):
            continue
        label = "%s: thread %s %s" % (what, t.get("tid"), json.dumps(t.get("name")))
        owner = wait.get("owner_tid")
        if owner is not None and owner not in tids:
            problems.append(Problem("%s: owner_tid %s is no thread of the snapshot (made up)"
                                    % (label, owner), [show(wait)]))
        if owner is not None and owner == t.get("tid"):
            problems.append(Problem("%s: owner_tid is the waiting thread itself" % label,
                                    [show(wait)]))
        if owner is not None and wait.get("kind") not in ("lock", "gil"):
            problems.append(Problem("%s: owner_tid %s for a wait of kind %s" % (
                label, owner, json.dumps(wait.get("kind"))), [show(wait)]))
        held = wait.get("owner_held_s")
        if held is not None and (wait.get("kind") != "gil" or owner is None or held < 0):
            problems.append(Problem("%s: owner_held_s %s for a wait of kind %s with owner %s"
                                    % (label, held, json.dumps(wait.get("kind")), owner),
                                    [show(wait)]))
        if wait.get("lock") is not None and wait.get("kind") != "lock":
            problems.append(Problem("%s: a lock address for a wait of kind %s" % (
                label, json.dumps(wait.get("kind"))), [show(wait)]))
        # A reason says why the kind is unknown, or why a lock waited for is not named.
        unknown = wait.get("kind") == "unknown" or (wait.get("kind") == "lock" and
                                                    wait.get("lock") is None)
        reason = wait.get("reason")
        if unknown != (isinstance(reason, str) and reason != ""):
            problems.append(Problem("%s: kind %s with reason %s (a reason when, and only when, "
                                    "the kind is unknown or the lock unnamed)"
                                    % (label, json.dumps(wait.get("kind")),
                                                              json.dumps(reason)), [show(wait)]))
    cycles = doc.get("deadlocks")
    if isinstance(cycles, list):
        for c in cycles:
            if not isinstance(c, dict):
                continue
            members = c.get("threads") or []
            strangers = [m for m in members if m not in tids]
            if strangers:
                problems.append(Problem("%s: a deadlock names threads %s that are not in the "
                                        "snapshot" % (what, strangers), [json.dumps(c)]))
            named = sorted(roles.name.get(m, str(m)) for m in members)
            if named != sorted(DEADLOCKED):
                problems.append(Problem("%s: a deadlock of threads %s; the only one is rl-a's "
                                        "and rl-b's (nobody owns a plain Lock)" % (what, named),
                                        [json.dumps(c)]))
    return problems


def expect_problems(doc, roles, py_version, sleep_age, since_max, what, since_known):
    """The blocked threads' wait records against what the target did (see targets/waits.py).
    SINCE_KNOWN: False for a one-shot --dump (every since_s null), True for a batch document
    after the first (the blocked threads' since_s a positive number, at most SINCE_MAX).
    SLEEP_AGE: seconds since the target started (its sleeper's time.sleep() began after)."""
    problems = []
    waits = waits_of(doc, roles)
    locks = roles.locks

    def bad(name, text, wait):
        problems.append(Problem("%s: %s: %s" % (what, name_tag(name, roles.tid[name]), text),
                                [show(wait)]))

    def want(name, wait, field, value):
        if wait.get(field) != value:
            bad(name, "wait.%s is %s, expected %s" % (field, json.dumps(wait.get(field)),
                                                      json.dumps(value)), wait)

    def want_in(name, wait, field, values):
        if wait.get(field) not in values:
            bad(name, "wait.%s is %s, expected one of %s" % (
                field, json.dumps(wait.get(field)), ", ".join(json.dumps(v) for v in values)),
                wait)

    for name, kind in sorted(BLOCKED_KINDS.items()):
        wait = waits.get(name)
        if not isinstance(wait, dict):
            continue  # shape_problems said so
        want(name, wait, "kind", kind)
        if wait.get("kind") != kind:
            continue  # the rest would only repeat it
        if name in LOCK_WAITS:
            mine, other, holder = LOCK_WAITS[name]
            rlock = name.startswith("rl-")
            want(name, wait, "object", "threading.RLock" if rlock else "threading.Lock")
            want(name, wait, "lock", locks[other])
            want(name, wait, "variable", "other")
            want(name, wait, "owner_tid", roles.tid[holder] if rlock else None)
            # 2.7's RLock is threading.py's _RLock, whose acquire() is Python code the thread
            # waits in; from 3.2 the C RLock leaves no frame.
            want(name, wait, "via", "acquire" if rlock and py_version < (3, 0) else None)
        elif name == "attr":
            # A lock held as an attribute of the frame's self.
            want(name, wait, "object", "threading.Lock")
            want(name, wait, "lock", locks["guard"])
            want(name, wait, "variable", "self.guard")
            want(name, wait, "owner_tid", None)
        elif name == "queue":
            # Before 3.11 code objects have no qualified name: the function's own name.
            want(name, wait, "via", "Queue.get" if py_version >= (3, 11) else "get")
            want(name, wait, "owner_tid", None)
        elif name == "recv":
            want_in(name, wait, "syscall", RECV_SYSCALLS)
            want(name, wait, "fd", roles.recv["fd"])
            want(name, wait, "object", "socket TCP %s:%d->%s:%d" % tuple(
                roles.recv["local"] + roles.recv["remote"]))
        elif name == "select":
            want_in(name, wait, "syscall", SELECT_SYSCALLS)
            obj = wait.get("object")
            fd_word = "fd %d" % roles.select["r"]
            if not isinstance(obj, str) or "pipe" not in obj or \
                    not re.search(r"(?<!\d)%s(?!\d)" % re.escape(fd_word), obj):
                bad(name, "wait.object %s does not name %r as a pipe" % (json.dumps(obj),
                                                                          fd_word), wait)
        elif name in ("sleeper", "main"):
            want_in(name, wait, "syscall", SLEEP_SYSCALLS)
            left = wait.get("left_s")
            total = SLEEP_SECONDS if name == "sleeper" else None
            if left is not None and not 0 < left <= (total or 1e9):
                bad(name, "wait.left_s %s is not within (0, %s]" % (left, total), wait)
            if name == "sleeper":
                # time.sleep() began at most SLEEP_AGE seconds ago (the target started then).
                if left is not None and left < SLEEP_SECONDS - sleep_age - 5:
                    bad(name, "wait.left_s %s: the sleep of %d s began only %.1f s ago" % (
                        left, SLEEP_SECONDS, sleep_age), wait)
                if left is None and py_version >= (3, 11):
                    bad(name, "wait.left_s is null, yet %d.%d's time.sleep() sleeps in "
                        "clock_nanosleep(TIMER_ABSTIME), whose deadline the kernel shows"
                        % py_version[:2], wait)
        if name not in ("sleeper", "main") and wait.get("left_s") is not None:
            bad(name, "wait.left_s is %s for a call that has no timeout" % wait["left_s"], wait)
        if name in ("rl-a", "rl-b", "l-a", "l-b", "sleeper", "main", "queue") \
                and wait.get("fd") is not None:
            bad(name, "wait.fd is %s for a wait on no descriptor" % wait["fd"], wait)
        if name in ("recv", "select", "sleeper", "main"):
            for field in ("lock", "variable", "owner_tid", "via"):
                want(name, wait, field, None)
        since = wait.get("since_s")
        if not since_known and since is not None:
            bad(name, "wait.since_s is %s in a one-shot --dump (pytop looked once: null)"
                % since, wait)
        if since_known and (not isinstance(since, NUMBER) or isinstance(since, bool)
                            or not 0 < since <= since_max):
            bad(name, "wait.since_s is %s, expected a number of seconds in (0, %.1f]"
                % (json.dumps(since), since_max), wait)
    if not since_known:
        # One look: no thread of any kind can have been seen in its wait before.
        for _, t in all_threads(doc):
            wait = t.get("wait") or {}
            name = roles.name.get(t.get("tid"))
            if name not in BLOCKED_KINDS and wait.get("since_s") is not None:
                problems.append(Problem("%s: thread %s %s: wait.since_s is %s in a one-shot "
                                        "--dump" % (what, t.get("tid"), json.dumps(t.get("name")),
                                                    wait["since_s"]), [show(wait)]))
    return problems


def deadlock_problems(doc, roles, what):
    """Exactly one cycle, rl-a and rl-b over rlock_a and rlock_b; l-a, l-b in none."""
    cycles = doc.get("deadlocks")
    if not isinstance(cycles, list):
        return []  # shape_problems said so
    want_threads = sorted(roles.tid[n] for n in DEADLOCKED)
    want_locks = sorted(roles.locks[n] for n in ("rlock_a", "rlock_b"))
    found = [c for c in cycles if isinstance(c, dict)
             and sorted(c.get("threads") or []) == want_threads
             and sorted(c.get("locks") or []) == want_locks]
    problems = []
    if len(found) != 1 or len(cycles) != 1:
        problems.append(Problem(
            "%s: deadlocks has %d cycle(s), expected exactly one: threads rl-a, rl-b %s, locks "
            "%s (id(rlock_a), id(rlock_b))" % (what, len(cycles), want_threads, want_locks),
            [json.dumps(c) for c in cycles[:4]]))
    plain = {roles.tid["l-a"], roles.tid["l-b"]}
    for c in cycles:
        if isinstance(c, dict) and plain & set(c.get("threads") or []):
            problems.append(Problem("%s: a deadlock includes l-a or l-b, which wait for plain "
                                    "Locks nobody owns" % what, [json.dumps(c)]))
    return problems


def gil_seen(doc, roles):
    """True when DOC shows one busy thread waiting for the GIL while the other holds it."""
    waits = waits_of(doc, roles)
    for me, other in (BUSY, BUSY[::-1]):
        a, b = waits.get(me) or {}, waits.get(other) or {}
        if a.get("kind") == "gil" and (a.get("owner_tid") == roles.tid[other]
                                       or b.get("kind") == "running"):
            return True
    return False


def gil_problems(doc, roles, what, gil_disabled):
    """The spinners are running or waiting for the GIL; a GIL owner is the other spinner, never
    both each other's."""
    problems = []
    waits = waits_of(doc, roles)
    for me, other in (BUSY, BUSY[::-1]):
        wait = waits.get(me)
        if not isinstance(wait, dict):
            continue
        kinds = ("running",) if gil_disabled else ("gil", "running")
        if wait.get("kind") not in kinds:
            problems.append(Problem("%s: %s spins in Python: wait.kind %s, expected %s" % (
                what, name_tag(me, roles.tid[me]), json.dumps(wait.get("kind")),
                " or ".join(kinds)), [show(wait)]))
        if wait.get("kind") == "gil" and wait.get("owner_tid") not in (None, roles.tid[other]):
            problems.append(Problem("%s: %s waits for the GIL, owner_tid %s; only %s can hold "
                                    "it" % (what, name_tag(me, roles.tid[me]),
                                            wait.get("owner_tid"),
                                            name_tag(other, roles.tid[other])), [show(wait)]))
    a, b = (waits.get(n) or {} for n in BUSY)
    if a.get("kind") == b.get("kind") == "gil" and a.get("owner_tid") == roles.tid[BUSY[1]] \
            and b.get("owner_tid") == roles.tid[BUSY[0]]:
        problems.append(Problem("%s: busy-1 and busy-2 each wait for the GIL the other holds"
                                % what, [show(a), show(b)]))
    return problems


def text_problems(text, roles):
    """A "Waiting for:" line under every thread header; a "Deadlock..." section naming rl-a
    and rl-b."""
    problems = []
    lines = text.splitlines()
    headers = [i for i, l in enumerate(lines) if PYTOP_HEADER_RE.match(l)]
    if not headers:
        return [Problem("pytop --dump (text): no thread header", lines[:8])]
    for n, i in enumerate(headers):
        end = headers[n + 1] if n + 1 < len(headers) else len(lines)
        if not any(l.lstrip().startswith("Waiting for:") for l in lines[i + 1:end]):
            problems.append(Problem("pytop --dump (text): no \"Waiting for:\" line under %s"
                                    % lines[i], lines[i:min(end, i + 4)]))
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("Deadlock")), None)
    if start is None:
        problems.append(Problem("pytop --dump (text): no section starting \"Deadlock\" (rl-a "
                                "and rl-b wait for each other's RLock)"))
    else:
        end = next((i for i in headers if i > start), len(lines))
        section = "\n".join(lines[start:end])
        for name in DEADLOCKED:
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), section):
                problems.append(Problem("pytop --dump (text): the Deadlock section does not "
                                        "name %s" % name, lines[start:min(end, start + 8)]))
    return problems


def once(problems, seen):
    """PROBLEMS without those another document already showed (the same headline after its
    document's label); SEEN: the headlines so far, updated."""
    fresh = []
    for p in problems:
        key = p.headline.split(": ", 1)[-1]
        if key not in seen:
            seen.add(key)
            fresh.append(p)
    return fresh


def check_waits(ctx, py, proc, outfile, log_path, workdir, notes):
    """pytop's per-thread "wait" records and "deadlocks" on targets/waits.py (an RLock and a
    Lock deadlock, a recv, a sleep, a Queue.get, a select, two spinners passing the GIL): one-shot
    --dump --json, a -b --json run (since_s), the text dump."""
    started = time.monotonic()
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    roles = Roles(expect)
    roles.recv, roles.select = expect["recv"], expect["select"]
    version = tuple(expect["version"])
    gil_disabled = bool(expect.get("gil_disabled"))
    notes.append("target's threads in the kernel (/proc/self/task/TID/syscall): %s" % ", ".join(
        "%s %s" % (name, (expect["syscalls"].get(name) or "").split(" ")[0])
        for name in sorted(expect["syscalls"])))

    # 1. One-shot --dump --json: the first of a few in which the blocked threads are in place.
    for attempt in range(DUMP_TRIES):
        snap = json.loads(pytop_dump(ctx, proc.pid, json_output=True).stdout.decode("utf-8"))
        what = "--dump --json"
        shape = shape_problems(snap, roles, what)
        if shape:
            raise Fail(shape)
        if in_their_waits(snap, roles):
            break
        time.sleep(DUMP_PAUSE)
    notes.append("--dump --json, try %d: %s" % (attempt + 1, "; ".join(
        "%s %s" % (name, json.dumps(w, sort_keys=True))
        for name, w in sorted(waits_of(snap, roles).items()))))
    problems = expect_problems(snap, roles, version, time.monotonic() - started, None, what,
                               since_known=False)
    problems += deadlock_problems(snap, roles, what)
    problems += sanity_problems(snap, roles, what)
    problems += gil_problems(snap, roles, what, gil_disabled)
    seen = set()
    problems = once(problems, seen)

    # 2. The GIL: one spinner waiting for it while the other holds it, in one of a few dumps.
    if gil_disabled:
        notes.append("free-threaded build: no GIL to wait for (only that no thread waits for it)")
        for _, t in all_threads(snap):
            if (t.get("wait") or {}).get("kind") == "gil":
                problems.append(Problem("%s: thread %s waits for the GIL of a build without one"
                                        % (what, t.get("tid")), [show(t.get("wait"))]))
    else:
        gil_at = None
        for n in range(GIL_DUMPS):
            doc = snap if n == 0 else json.loads(
                pytop_dump(ctx, proc.pid, json_output=True).stdout.decode("utf-8"))
            label = "--dump --json (GIL look %d)" % (n + 1)
            if n:
                problems += once(shape_problems(doc, roles, label)
                                 + sanity_problems(doc, roles, label)
                                 + gil_problems(doc, roles, label, gil_disabled), seen)
            if gil_seen(doc, roles):
                gil_at = n + 1
                break
            time.sleep(GIL_PAUSE)
        if gil_at is None:
            problems.append(Problem(
                "in %d dumps, neither busy thread waited for the GIL (kind \"gil\") with the "
                "other as its owner_tid or running" % GIL_DUMPS,
                ["last: %s %s" % (name, json.dumps(waits_of(doc, roles).get(name)))
                 for name in BUSY]))
        else:
            notes.append("GIL wait seen in dump %d: %s" % (gil_at, "; ".join(
                "%s %s" % (name, json.dumps(waits_of(doc, roles).get(name))) for name in BUSY)))

    # 3. pytop -b: since_s grows while the threads stay in their waits.
    batch_started = time.monotonic()
    docs = json_lines(pytop_batch(ctx, proc.pid, BATCH_ARGS).stdout.decode("utf-8", "replace"),
                      "pytop -b " + " ".join(BATCH_ARGS))
    batch_elapsed = time.monotonic() - batch_started
    if len(docs) != 3:
        problems.append(Problem("pytop -b %s: %d documents, expected 3"
                                % (" ".join(BATCH_ARGS), len(docs))))
    for i, doc in enumerate(docs):
        label = "pytop -b document %d" % (i + 1)
        shape = shape_problems(doc, roles, label)
        problems += once(shape, seen)
        if not shape:
            problems += once(sanity_problems(doc, roles, label)
                             + deadlock_problems(doc, roles, label), seen)
    if len(docs) == 3 and not any(shape_problems(d, roles, "") for d in docs):
        last = "pytop -b document 3"
        problems += once(expect_problems(docs[2], roles, version, time.monotonic() - started,
                                         batch_elapsed + 1, last, since_known=True), seen)
        before, after = waits_of(docs[1], roles), waits_of(docs[2], roles)
        for name in BLOCKED_KINDS:
            s1 = (before.get(name) or {}).get("since_s")
            s2 = (after.get(name) or {}).get("since_s")
            if isinstance(s1, NUMBER) and isinstance(s2, NUMBER) and not s2 > s1:
                problems.append(Problem("pytop -b: %s: since_s %s in document 2, %s in document "
                                        "3: the same wait must have lasted longer"
                                        % (name_tag(name, roles.tid[name]), s1, s2)))
        notes.append("pytop -b document 3 since_s: %s" % ", ".join(
            "%s %s" % (name, (after.get(name) or {}).get("since_s"))
            for name in sorted(BLOCKED_KINDS)))

    # 4. The text dump.
    text = pytop_dump(ctx, proc.pid, json_output=False).stdout.decode("utf-8", "replace")
    problems += text_problems(text, roles)
    if problems:
        raise Fail(problems)
