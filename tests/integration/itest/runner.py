"""One scenario on one interpreter: its target started, checked, and its result line."""
import os
import shutil
import subprocess
import tempfile
import threading

from .harness import CHILDREN, Fail, Interrupted, MIN_TARGET_VERSION, Skip, TARGETS, clean_env
from .scen_stacks import check_target, check_wrong_layout
from .scen_tasks import check_tasks
from .scen_gc import check_gc, check_gcwait
from .scen_hostile import check_hostile
from .scen_batch import (check_batch, check_churn, check_codereuse, check_forkname, check_idle,
                         check_latename, check_manythreads)
from .scen_exec import check_exec
from .scen_modes import check_modes, check_schedule
from .scen_waits import check_waits
from .scen_record import check_record
from .scen_output import check_incident, check_output


def run_target_scenario(ctx, py, scenario, notes):
    workdir = tempfile.mkdtemp(prefix="pytop-it-%s-" % scenario)
    ok = False
    try:
        outfile = os.path.join(workdir, "expect.json")
        log_path = os.path.join(workdir, "target.log")
        with open(log_path, "wb") as log:
            target = {"wronglayout": "manythreads", "gc": "gcstate",
                      "exec": "execer", "output": "batch", "record": "stacks",
                      "incident": "batch", "schedule": "pulse"}.get(scenario, scenario)
            proc = CHILDREN.start([py.path, os.path.join(TARGETS, target + ".py"), outfile],
                                  stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                  env=clean_env())
        try:
            check = {"batch": check_batch, "codereuse": check_codereuse, "churn": check_churn,
                     "idle": check_idle, "latename": check_latename,
                     "forkname": check_forkname,
                     "manythreads": check_manythreads,
                     "tasks": check_tasks, "taskcycle": check_tasks,
                     "wronglayout": check_wrong_layout, "gc": check_gc,
                     "gcwait": check_gcwait,
                     "hostile": check_hostile, "exec": check_exec,
                     "output": check_output,
                     "incident": check_incident,
                     "modes": check_modes, "schedule": check_schedule,
                     "waits": check_waits,
                     "record": check_record}.get(scenario, check_target)
            check(ctx, py, proc, outfile, log_path, workdir, notes)
            ok = True
        finally:
            CHILDREN.kill(proc)
    finally:
        if ctx.keep or (ctx.verbose and not ok):
            notes.append("kept %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- main

class Reporter:
    def __init__(self, verbose):
        self.lock = threading.Lock()
        self.verbose = verbose
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def line(self, status, what, reason=None, details=(), notes=()):
        text = "%s %s" % (status, what)
        if reason:
            text += ": " + reason
        lines = [text] + ["    " + d for d in details]
        if self.verbose:
            lines += ["    # " + n for n in notes]
        with self.lock:
            if status in self.counts:
                self.counts[status] += 1
            print("\n".join(lines), flush=True)

    def log(self, text):
        if self.verbose:
            with self.lock:
                print("# " + text, flush=True)


def run_one(ctx, rep, py, scenario, unsupported):
    what = "%s %s %s" % (py.label, py.path, scenario)
    notes = []
    if py.version < MIN_TARGET_VERSION:
        return rep.line("SKIP", what, "the targets need Python %d.%d+" % MIN_TARGET_VERSION)
    if scenario == "subinterp" and py.version < (3, 14):
        return rep.line("SKIP", what, "needs Python 3.14+ (threads in subinterpreters)")
    if scenario in ("tasks", "taskcycle") and py.version < (3, 5):
        return rep.line("SKIP", what, "needs Python 3.5+ (asyncio: async def, await)")
    if unsupported:
        return rep.line("SKIP", what, unsupported[0])
    try:
        run_target_scenario(ctx, py, scenario, notes)
    except Skip as e:
        unsupported.append(str(e))
        return rep.line("SKIP", what, str(e), notes=notes)
    except Fail as e:
        details = []
        for p in e.problems[1:8]:
            details.append(p.headline)
        first = e.problems[0]
        details = first.details + (["also:"] + ["  " + d for d in details] if details else [])
        if len(e.problems) > 8:
            details.append("  ... %d more problems" % (len(e.problems) - 8))
        return rep.line("FAIL", what, first.headline, details, notes)
    except Interrupted:
        return None
    suffix = ""
    if scenario == "manythreads":
        suffix = " (%s)" % "; ".join(n for n in notes if n.startswith("pytop --dump --json") or
                                     n.startswith("warm:"))
    rep.line("PASS", what + suffix, notes=notes)
