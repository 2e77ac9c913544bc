"""The gc and gcwait scenarios: the garbage collector."""
import json
import os
import re
import signal
import subprocess
import time

from .harness import (CHILDREN, Fail, PYTOP_TIMEOUT, Problem, REMOTE_GC, TARGET_START_TIMEOUT,
                      clean_env, run)
from .compare import all_threads
from .scen_stacks import labelled, pytop_dump, wait_for_report
from .scen_batch import json_lines, pytop_batch


# ---------------------------------------------------------------- garbage collector

GC_COUNT_SLACK = 5   # objects the target may allocate between its last get_count() and parking


def gc_of(snap):
    interps = snap.get("interpreters") or [{}]
    gc = interps[0].get("gc")
    if gc is None:
        raise Fail([Problem("pytop: gc is null", ["warnings: %s" % snap.get("warnings")])])
    return gc


def compare_gc_self(expect, count_after, gc):
    """pytop's generations vs what the parked target's gc module said of itself."""
    problems = []
    gens = gc.get("generations") or []
    if len(gens) != len(expect["threshold"]):
        return [Problem("%d generations, the target has %d" % (len(gens), len(expect["threshold"])))]
    if gc.get("enabled") is not expect["enabled"] or gc.get("collecting") is not False:
        problems.append(Problem("enabled %s collecting %s, expected %s and false"
                                % (gc.get("enabled"), gc.get("collecting"), expect["enabled"])))
    for i, g in enumerate(gens):
        want = dict(expect["stats"][i], generation=i, threshold=expect["threshold"][i])
        got = {k: g.get(k) for k in want}
        if "duration" in want:
            # JSON carries nanoseconds; the target's float may hold more digits.
            if got["duration"] is not None and abs(got["duration"] - want["duration"]) < 1e-9:
                got["duration"] = want["duration"]
        if got != want:
            problems.append(Problem("generation %d differs from gc.get_stats()/get_threshold()" % i,
                                    ["target: %s" % json.dumps(want, sort_keys=True),
                                     "pytop:  %s" % json.dumps(got, sort_keys=True)]))
        # Older generations do not move once automatic collection is off; the youngest counts
        # allocations, and the target may make a few more after its last look.
        count = g.get("count")
        if i > 0 and count != count_after[i] or \
                i == 0 and (count is None or abs(count - count_after[0]) > GC_COUNT_SLACK):
            problems.append(Problem("generation %d count %s, gc.get_count() said %s"
                                    % (i, count, count_after[i])))
    return problems


def compare_gc_remote_stats(remote, gc):
    """pytop's recent collections vs _remote_debugging.get_gc_stats(): the same records."""
    want = sorted((r["gen"], r["ts_start"], r["ts_stop"], r["collections"], r["collected"],
                   r["uncollectable"], r["candidates"], r["heap_size"], round(r["duration"], 9))
                  for r in remote if r["ts_start"] or r["ts_stop"] or r["collections"])
    got = sorted((r.get("generation"), r.get("start_ns"), r.get("stop_ns"), r.get("collections"),
                  r.get("collected"), r.get("uncollectable"), r.get("candidates"),
                  r.get("heap_size"), round(r.get("duration") or -1, 9))
                 for r in gc.get("recent") or [])
    if want != got:
        return [Problem("recent collections: get_gc_stats() has %d records, pytop %d"
                        % (len(want), len(got)),
                        ["only get_gc_stats: %s" % (sorted(set(want) - set(got))[:3],),
                         "only pytop:        %s" % (sorted(set(got) - set(want))[:3],)])]
    if not want:
        return [Problem("no collection records, yet the target forced collections")]
    return []


def check_gc(ctx, py, proc, outfile, log_path, workdir, notes):
    """GC: pytop's generations vs the target's gc module, and on 3.15 its collection records
    vs _remote_debugging.get_gc_stats(); then a collection that never ends: collecting, the
    collector thread, its in_gc (true on 3.15, else null) and (3.15) the <GC> frame vs
    RemoteUnwinder(gc=True)."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    deadline = time.monotonic() + TARGET_START_TIMEOUT
    while not os.path.exists(outfile + ".count") and time.monotonic() < deadline:
        time.sleep(0.01)
    with open(outfile + ".count", encoding="utf-8") as f:
        count_after = [int(x) for x in f.read().split()]
    time.sleep(0.2)  # into signal.pause()
    r = pytop_dump(ctx, proc.pid, json_output=True)
    snap = json.loads(r.stdout.decode("utf-8"))
    gc = gc_of(snap)
    problems = labelled("pytop vs gc module", compare_gc_self(expect, count_after, gc))
    if py.version >= (3, 15):
        r = run([py.path, REMOTE_GC, "stats", str(proc.pid)], timeout=PYTOP_TIMEOUT,
                env=clean_env())
        if r.returncode != 0:
            problems.append(Problem("get_gc_stats oracle failed (exit %s)" % r.returncode,
                                    r.err.splitlines()[-5:]))
        else:
            found = compare_gc_remote_stats(json.loads(r.stdout.decode("utf-8")), gc)
            problems += labelled("pytop vs _remote_debugging.get_gc_stats", found)
            notes.append("%d collection records agree" % len(gc.get("recent") or []))
    elif gc.get("recent") is not None:
        problems.append(Problem("recent collections on a version that keeps none"))
    text = pytop_dump(ctx, proc.pid, json_output=False).stdout.decode("utf-8", "replace")
    if not re.search(r"^GC \(automatic collection disabled\):$", text, re.M) or \
            not re.search(r"^  0 +\d+/1234 ", text, re.M):
        problems.append(Problem("text dump lacks the GC table",
                                [l for l in text.splitlines() if l.startswith(("GC", "  "))][-6:]))

    # Phase 2: a collection that does not end.
    os.kill(proc.pid, signal.SIGUSR1)
    phase2 = wait_for_report(proc, outfile + ".phase2", log_path, TARGET_START_TIMEOUT)
    collector = phase2["collector"]
    time.sleep(0.2)
    snap = json.loads(pytop_dump(ctx, proc.pid, json_output=True).stdout.decode("utf-8"))
    gc_of(snap)
    threads = {t.get("tid"): t for _, t in all_threads(snap)}
    # One read cannot tell who collects before 3.15 (the GIL's holder need not be the
    # collector): null for all, never a wrong true or false (gcwait tests when it can tell).
    problems += gc_verdicts(snap, collector, "during the collection", py.version >= (3, 15))
    ours = [f.get("function") for f in (threads.get(collector) or {}).get("frames") or []]
    if py.version >= (3, 15):
        r = run([py.path, REMOTE_GC, "stacks", str(proc.pid)], timeout=PYTOP_TIMEOUT,
                env=clean_env())
        theirs = next((t["frames"] for t in json.loads(r.stdout.decode("utf-8") or "[]")
                       if t["thread"] == collector), None) if r.returncode == 0 else None
        if theirs is None:
            problems.append(Problem("RemoteUnwinder(gc=True) oracle failed (exit %s)"
                                    % r.returncode, r.err.splitlines()[-5:]))
        elif ours != theirs or "<GC>" not in ours:
            problems.append(Problem("collector's frames differ from RemoteUnwinder(gc=True)",
                                    ["RemoteUnwinder: %s" % theirs, "pytop:          %s" % ours]))
        # --no-gc-frames: the same stack without the marker, the thread still in GC.
        bare = json.loads(pytop_dump(ctx, proc.pid, True, ["--no-gc-frames"]).stdout.decode())
        mine = {t.get("tid"): t for _, t in all_threads(bare)}.get(collector) or {}
        frames = [f.get("function") for f in mine.get("frames") or []]
        if frames != [f for f in ours if f != "<GC>"] or mine.get("in_gc") is not True:
            problems.append(Problem("--no-gc-frames: collector's frames %s, in_gc %r; expected "
                                    "%s without <GC>, in_gc true" % (frames, mine.get("in_gc"),
                                                                     ours)))
    elif "<GC>" in ours or not ours or ours[0] != "Spinner.__del__" and ours[0] != "__del__":
        problems.append(Problem("collector's frames: %s, expected Spinner.__del__ innermost "
                                "and no <GC> frame (the version marks none)" % ours))
    if problems:
        raise Fail(problems)


def gc_verdicts(doc, collector, label, must_know):
    """Problems with one document's word on who collects: the collector never false (true when
    MUST_KNOW), no other thread ever true; and gc.thread agrees."""
    problems = []
    gc = (doc.get("interpreters") or [{}])[0].get("gc") or {}
    threads = {t.get("tid"): t for _, t in all_threads(doc)}
    if gc.get("collecting") is not True:
        problems.append(Problem("%s: gc.collecting is %r during the collection"
                                % (label, gc.get("collecting"))))
    mine = (threads.get(collector) or {}).get("in_gc", "missing")
    if mine is False or mine == "missing" or (must_know and mine is not True):
        problems.append(Problem("%s: the collector %s has in_gc %s, expected %s"
                                % (label, collector, json.dumps(mine),
                                   "true" if must_know else "true or null")))
    wrong = sorted(tid for tid, t in threads.items() if tid != collector and t.get("in_gc"))
    if wrong:
        problems.append(Problem("%s: threads %s are not collecting but have in_gc true"
                                % (label, wrong)))
    vague = sorted(tid for tid, t in threads.items()
                   if mine is True and tid != collector and t.get("in_gc") is None)
    if vague:
        problems.append(Problem("%s: the collector is known, yet threads %s have in_gc null"
                                % (label, vague)))
    if gc.get("thread") not in ((collector,) if mine is True else (None,)):
        problems.append(Problem("%s: gc.thread %s, the collector's in_gc %s"
                                % (label, gc.get("thread"), json.dumps(mine))))
    return problems


def check_gcwait(ctx, py, proc, outfile, log_path, workdir, notes):
    """A collection whose finalizer waits (lock, sleep, pipe) while other threads run Python:
    in_gc never false for the collector nor true for another thread; true for the collector in
    -b documents (pytop saw the collection start) and, on 3.15, in --dump (the <GC> frame, as
    RemoteUnwinder(gc=True) shows it); before 3.15 a --dump cannot tell, and says null."""
    expect = wait_for_report(proc, outfile, log_path, TARGET_START_TIMEOUT)
    collector, workers = expect["collector"], expect["workers"]
    before = json.loads(pytop_dump(ctx, proc.pid, json_output=True).stdout.decode("utf-8"))
    problems = [Problem("before the collection: thread %s has in_gc %s"
                        % (t.get("tid"), json.dumps(t.get("in_gc"))))
                for _, t in all_threads(before) if t.get("in_gc") is not False]
    batch = CHILDREN.start([ctx.pytop, "-p", str(proc.pid), "-b", "-d", "0.5", "-n", "16",
                            "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=clean_env())
    try:
        time.sleep(1.0)  # pytop samples the parked target before the collection starts
        os.kill(proc.pid, signal.SIGUSR1)
        waiting = wait_for_report(proc, outfile + ".waiting", log_path, TARGET_START_TIMEOUT)
        time.sleep(0.3)
        for i in range(2):
            r = pytop_dump(ctx, proc.pid, json_output=True)
            problems += gc_verdicts(json.loads(r.stdout.decode("utf-8")), collector,
                                    "--dump %d" % (i + 1), py.version >= (3, 15))
            time.sleep(0.4)
        if py.version >= (3, 15):
            # CPython's unwinder gives up (exit 1) on a stack that changes while it reads it, as
            # the spinning workers' do: a few tries, the first that reads is compared.
            for _ in range(5):
                r = run([py.path, REMOTE_GC, "stacks", str(proc.pid)], timeout=PYTOP_TIMEOUT,
                        env=clean_env())
                if r.returncode == 0:
                    break
            theirs = sorted(t["thread"] for t in json.loads(r.stdout.decode("utf-8") or "[]")
                            if "<GC>" in t["frames"]) if r.returncode == 0 else None
            if theirs != [collector]:
                problems.append(Problem("RemoteUnwinder(gc=True): threads with a <GC> frame %s,"
                                        " expected the collector %s (exit %s)"
                                        % (theirs, collector, r.returncode),
                                        ["stderr: " + l
                                         for l in r.stderr.decode("utf-8", "replace")
                                         .splitlines()[-3:]]))
        out, err = batch.communicate(timeout=PYTOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Fail([Problem("pytop -b -d 0.5 -n 16: no end within %.0f s" % PYTOP_TIMEOUT)])
    finally:
        CHILDREN.kill(batch)
    docs = json_lines(out.decode("utf-8", "replace"), "pytop -b --json")
    if batch.returncode != 0 or len(docs) != 16:
        raise Fail(problems + [Problem("pytop -b -d 0.5 -n 16: exit status %s, %d documents"
                                       % (batch.returncode, len(docs)),
                                       ["stderr: " + l for l in err.decode().splitlines()[:5]])])
    # Documents wholly within the wait: their interval began after the workers were let loose.
    during = [d for d in docs if d.get("time", 0) - 0.5 > waiting["time"] + 0.1]
    if len(during) < 4:
        problems.append(Problem("only %d -b documents during the wait, expected 4 or more"
                                % len(during)))
    released = 0
    # 2.7's GIL counts no switches: pytop cannot prove who collects there, and says null.
    provable = py.version >= (3, 2)
    for i, doc in enumerate(during):
        label = "-b document %d of the wait" % (i + 1)
        verdicts = gc_verdicts(doc, collector, label, provable)
        if verdicts:
            # What pytop said of that document's reads, to tell a failed snapshot from a wrong one.
            verdicts[0].details = list(verdicts[0].details or []) + [
                "warning: %s" % w for w in doc.get("warnings") or []] + [
                "sampling: %s" % json.dumps(doc.get("sampling"))]
        problems += verdicts
        shares = {t.get("tid"): t for _, t in all_threads(doc)}
        mine = shares.get(collector) or {}
        if not provable:
            if any(t.get("gc_pct") is not None for t in shares.values()):
                problems.append(Problem("%s: gc_pct %s, expected null for every thread (who "
                                        "collects cannot be told)" % (label, sorted(
                                            (tid, t.get("gc_pct")) for tid, t in shares.items()))))
        elif (mine.get("gc_pct") or 0) < 50 or any((shares.get(w) or {}).get("gc_pct")
                                                   for w in workers):
            problems.append(Problem("%s: gc_pct %s for the collector, %s for the workers"
                                    % (label, mine.get("gc_pct"),
                                       [(shares.get(w) or {}).get("gc_pct") for w in workers])))
        released += (mine.get("gil_pct") or 0) < 50
    if during and released == 0:
        problems.append(Problem("the collector held the GIL over half of every document of the "
                                "wait: the scenario did not make it wait"))
    # Started amid the collection, pytop cannot tell who runs it: every sample is in GC, no
    # thread's share of it is known.
    for i, doc in enumerate(json_lines(pytop_batch(ctx, proc.pid, ["-n", "2", "-d", "0.3",
                                                                    "--json"]).stdout.decode(),
                                       "pytop -b amid the collection")):
        label = "-b started amid the collection, document %d" % (i + 1)
        problems += gc_verdicts(doc, collector, label, py.version >= (3, 15))
        sampling = doc.get("sampling") or {}
        shares = [t.get("gc_pct") for _, t in all_threads(doc)]
        if not sampling.get("samples") or sampling.get("gc_samples") != sampling["samples"]:
            problems.append(Problem("%s: %s of %s samples in GC, expected all"
                                    % (label, sampling.get("gc_samples"), sampling.get("samples"))))
        if py.version < (3, 15) and any(p is not None for p in shares):
            problems.append(Problem("%s: gc_pct %s, expected null (who collects is unknown)"
                                    % (label, shares)))
    notes.append("%d -b documents during the wait; collector %%GIL %s" % (
        len(during), [next((t.get("gil_pct") for _, t in all_threads(d)
                            if t.get("tid") == collector), None) for d in during]))
    if problems:
        raise Fail(problems)
