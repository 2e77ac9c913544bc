/* target: the process batch and dump modes read: -p PID, or a command pytop starts and waits
 * for until its interpreter runs Python code. */
#include "config.h"

#include "app/target.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/walk/unwind.h"
#include "app/spawn.h"

/* A starting command is looked at often at first, then less; after SAY_S the wait is said. */
static const double FIRST_TRIES_S = 2;
static const double RETRY_FAST_S = 0.01;
static const double RETRY_SLOW_S = 0.25;
static const double SAY_S = 2;
static const double SPAWN_GRACE_S = 2.0;

bool target_runs_python(struct proc *p, const struct runtime *rt, struct pt_error *err)
{
    struct unwind *u = unwind_new(p, rt, err);
    struct snapshot *s = u != NULL ? unwind_snapshot(u, err) : NULL;
    bool has_main = false;
    bool main_runs = false;
    bool any_runs = false;
    for (size_t i = 0; s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            const struct snap_thread *t = &s->interps[i].threads[j];
            has_main |= t->main;
            main_runs |= t->main && t->n_frames > 0;
            any_runs |= t->n_frames > 0;
        }
    }
    bool runs = has_main ? main_runs : any_runs;
    if (s != NULL && !runs) {
        pt_error_set(err, PT_E_NOTPY, 0, "its interpreter runs no Python code yet");
    }
    snapshot_free(s);
    unwind_free(u);
    return runs;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One look at the started command: 0 when its Python runs (T's handle and runtime set). */
static int try_attach(struct target *t, struct pt_error *err)
{
    struct proc *p = proc_open(t->pid, err);
    if (p == NULL) {
        return -1;
    }
    if (runtime_locate(p, &t->rt, err) < 0 || !target_runs_python(p, &t->rt, err)) {
        proc_close(p);
        return -1;
    }
    t->proc = p;
    return 0;
}

/* Waits until the command T started runs Python. Returns 0, or an exit status. */
static int wait_for_python(struct target *t, volatile sig_atomic_t *stop)
{
    double start = clock_now();
    bool said = false;
    /* Why it could not be read while it ran: that it exited says nothing. */
    char why[sizeof((struct pt_error *)0)->msg] = "it never ran Python code";
    for (;;) {
        struct pt_error err = {0};
        if (try_attach(t, &err) == 0) {
            return 0;
        }
        if (err.code != PT_E_GONE && err.code != PT_E_NOPROC) {
            snprintf(why, sizeof why, "%s", err.msg);
        }
        /* A Python pytop cannot read, or may not, is given up once it has had the time to
         * start: before, its runtime may not have said its version yet (3.13.0 was seen read
         * as unsupported while it started). */
        double waited = clock_now() - start;
        if ((err.code == PT_E_UNSUPPORTED || err.code == PT_E_PERM) && waited >= FIRST_TRIES_S) {
            return cli_target_error(&err, t->pid);
        }
        char how[96];
        if (target_ended(t, 0, how, sizeof how)) {
            fprintf(stderr,
                    "pytop: the command (process %d) ended (%s) before pytop could read it: %s\n",
                    (int)t->pid, how, why);
            return CLI_EXIT_TARGET;
        }
        if (stop != NULL && *stop) {
            fprintf(stderr, "pytop: interrupted while waiting for process %d: %s\n", (int)t->pid,
                    err.msg);
            return CLI_EXIT_TARGET;
        }
        if (!said && waited >= SAY_S) {
            fprintf(stderr, "pytop: waiting for the Python interpreter of process %d: %s\n",
                    (int)t->pid, err.msg);
            said = true;
        }
        sleep_s(waited < FIRST_TRIES_S ? RETRY_FAST_S : RETRY_SLOW_S);
    }
}

int target_open(struct target *t, const struct cli_options *o, volatile sig_atomic_t *stop)
{
    struct pt_error err = {0};
    memset(t, 0, sizeof *t);
    t->pid = o->pid;
    if (o->command == NULL) {
        t->proc = proc_open(o->pid, &err);
        if (t->proc == NULL || runtime_locate(t->proc, &t->rt, &err) < 0) {
            target_close(t);
            return cli_target_error(&err, o->pid);
        }
        return 0;
    }
    t->spawn = spawn_open(o->command, &err);
    if (t->spawn == NULL) {
        fprintf(stderr, "pytop: %s\n", err.msg);
        return CLI_EXIT_TARGET;
    }
    t->pid = t->spawn->pid;
    fprintf(stderr, "pytop: started %s as process %d; its output goes to %s\n", o->command[0],
            (int)t->pid, t->spawn->log_path);
    int rc = wait_for_python(t, stop);
    if (rc != 0) {
        target_close(t);
    }
    return rc;
}

void target_close(struct target *t)
{
    spawn_close(t->spawn, SPAWN_GRACE_S);
    t->spawn = NULL;
    proc_close(t->proc);
    t->proc = NULL;
}

bool target_ended(struct target *t, double wait_s, char *buf, size_t size)
{
    if (t->spawn == NULL) {
        return false;
    }
    for (double waited = 0; !spawn_poll(t->spawn); waited += RETRY_FAST_S) {
        if (waited >= wait_s) {
            return false;
        }
        sleep_s(RETRY_FAST_S);
    }
    spawn_describe(t->spawn, buf, size);
    return true;
}
