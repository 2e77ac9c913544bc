/* dump: pytop --dump: one snapshot (after a window of samples, or the last before the target
 * ends, --at-exit), as the incident report or JSON. */
#include "config.h"

#include "app/dump.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/write/report.h"
#include "core/sampler/sampler.h"
#include "core/sampler/schedule.h"
#include "core/write/sampler_write.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "core/target/source.h"
#include "app/target.h"
#include "app/stopsig.h"

enum { DUMP_TOP_FUNCTIONS = 20 }; /* rows of the report's functions table */

/* How long an exited command may take to be reaped, for its exit status. */
static const double END_WAIT_S = 0.5;

/* Set by SIGINT and SIGTERM while the dump waits or samples: dump what there is, and stop. */

struct dump {
    const struct cli_options *o;
    struct target t;
    struct sampler *sampler;
    struct snapshot *last; /* the newest snapshot read; the caller's */
    double last_at;        /* when (clock_now()) */
    /* When LAST shows no Python code running (an interpreter shutting down), the newest one
     * that did, and when it was read; else NULL. */
    struct snapshot *running;
    double running_at;
    bool passed_over; /* the snapshot written is RUNNING: later ones showed no Python code */
    bool gone;             /* the target exited */
    bool ended;            /* it exec()ed a program pytop cannot follow: END_WHY says */
    char end_why[256];
    char execed_to[PATH_MAX]; /* the program the target exec()ed and pytop followed; "" none */
    char note[512];
};

static bool is_gone(const struct pt_error *err)
{
    return err->code == PT_E_GONE || err->code == PT_E_NOPROC;
}

/* The target exec()ed: goes on with the new program when pytop can read it (the snapshots
 * read after say so). Returns 0 then, else -1 with GONE or ENDED set. */
static int follow(struct dump *d)
{
    struct pt_error err = {0};
    if (sampler_follow_exec(d->sampler, &d->t.rt, &err) == 0) {
        if (proc_exe(d->t.proc, d->execed_to, sizeof d->execed_to, NULL) < 0) {
            snprintf(d->execed_to, sizeof d->execed_to, "?");
        }
        return 0;
    }
    if (is_gone(&err)) {
        d->gone = true;
    } else {
        d->ended = true;
        snprintf(d->end_why, sizeof d->end_why, "%s", err.msg);
    }
    return -1;
}

/* Whether some thread of S runs Python code. */
static bool runs_code(const struct snapshot *s)
{
    for (size_t i = 0; s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            if (s->interps[i].threads[j].n_frames > 0) {
                return true;
            }
        }
    }
    return false;
}

/* Keeps SNAP (read at AT) as the newest, and the newest that ran Python code beside it. */
static void keep(struct dump *d, struct snapshot *snap, double at)
{
    if (snap == NULL) {
        return;
    }
    if (runs_code(snap)) {
        snapshot_free(d->running);
        d->running = NULL;
        snapshot_free(d->last);
    } else if (d->running == NULL && runs_code(d->last)) {
        d->running = d->last;
        d->running_at = d->last_at;
    } else {
        snapshot_free(d->last);
    }
    d->last = snap;
    d->last_at = at;
}

/* The target is lost: what to write is the newest snapshot in which Python code ran, when a
 * later one showed none (the interpreter shutting down after it). */
static void prefer_running(struct dump *d)
{
    if (d->running == NULL) {
        return;
    }
    snapshot_free(d->last);
    d->last = d->running;
    d->last_at = d->running_at;
    d->running = NULL;
    d->passed_over = true;
}

/* Reads a full snapshot (the task graph too) and keeps it as the newest. Returns 0, or -1
 * with ERR set (GONE or ENDED set when that is why). */
static int keep_snapshot(struct dump *d, struct pt_error *err)
{
    const struct snapshot *snap = sampler_snapshot(d->sampler, true, err);
    if (snap == NULL && err->code == PT_E_EXEC && follow(d) == 0) {
        snap = sampler_snapshot(d->sampler, true, err);
    }
    if (snap == NULL) {
        d->gone |= is_gone(err);
        return -1;
    }
    keep(d, sampler_take_latest(d->sampler), clock_now());
    if (d->last != NULL && d->execed_to[0] != '\0') {
        snapshot_warn(d->last, "process %d exec()ed %s while it was read: this is the new program",
                      (int)d->t.pid, d->execed_to);
    }
    return 0;
}

/* Samples at the rate until END (INFINITY: until the target ends or a signal), reading a full
 * snapshot every -d SECS so that the newest is at most that old when the target goes. */
static void sample_until(struct dump *d, double end)
{
    const struct cli_options *o = d->o;
    double now = clock_now();
    struct schedule sched;
    schedule_start(&sched, o->rate_hz, now, schedule_seed());
    double next_snap = now;
    while (!stopsig_requested() && now < end) {
        struct pt_error err = {0};
        if (sampler_sample(d->sampler, now, &err) < 0) {
            if (is_gone(&err) || (err.code == PT_E_EXEC && follow(d) < 0)) {
                return;
            }
        }
        now = clock_now();
        /* At a random point of each period of the rate; after a stall, on from now rather
         * than catch up in a burst (schedule.h). */
        double next = schedule_next(&sched, now);
        if (now >= next_snap) {
            struct pt_error serr = {0};
            if (keep_snapshot(d, &serr) < 0 && (d->gone || d->ended)) {
                return;
            }
            now = clock_now();
            next_snap = now + o->delay;
        }
        next = sampler_due(d->sampler, next);
        stopsig_sleep_until(next < end ? next : end);
        now = clock_now();
    }
}

/* The note of a dump whose snapshot is not of the moment it was written: the target ended,
 * or the wait for it was cut short. Empty when there is nothing to say. */
static void make_note(struct dump *d, double now)
{
    char how[96];
    char ended[112] = "";
    double age = now - d->last_at;
    const char *what = d->o->at_exit ? "--at-exit: " : "";
    if (d->gone) {
        if (target_ended(&d->t, END_WAIT_S, how, sizeof how)) {
            snprintf(ended, sizeof ended, " (%s)", how);
        }
        snprintf(d->note, sizeof d->note,
                 "%sprocess %d exited%s; this is the last snapshot pytop read%s, %.2f s before "
                 "it found the process gone (one is read every %g s, -d)",
                 what, (int)d->t.pid, ended,
                 d->passed_over ? " in which Python code ran (later ones showed the interpreter "
                                  "shutting down)"
                                : "",
                 age, d->o->delay);
    } else if (d->ended) {
        snprintf(d->note, sizeof d->note,
                 "%s%s; this is the last snapshot of the Python program, read %.2f s before", what,
                 d->end_why, age);
    } else if (stopsig_requested() && d->o->at_exit) {
        snprintf(d->note, sizeof d->note,
                 "--at-exit: interrupted while process %d still ran; this snapshot was read then",
                 (int)d->t.pid);
    }
}

/* Writes D's snapshot with ST (NULL: no statistics). Returns 0 or -1 after saying why. */
static int write_dump(struct dump *d, const struct sampler_stats *st, FILE *out)
{
    const struct cli_options *o = d->o;
    struct pt_error err = {0};
    int rc;
    if (o->json) {
        if (d->note[0] != '\0') {
            snapshot_warn(d->last, "%s", d->note);
        }
        rc = st != NULL ? sampler_write_json(d->last, st, out, true, &err)
                        : snapshot_write_json(d->last, out, true, &err);
    } else {
        char by[512];
        double window = st != NULL ? st->window_limit : 0;
        cli_settings_text(o, window, o->delay, o->sample_mode, NULL, by, sizeof by);
        struct report_opts ro = {
            .by = by,
            .note = d->note,
            .window = o->at_exit && isinf(window) ? "the whole run" : NULL,
            .no_stats = "a single --dump reads one snapshot; --window SECS samples that long "
                        "first, --at-exit the whole run",
            .top_functions = DUMP_TOP_FUNCTIONS,
        };
        struct source_cache *src = d->gone ? NULL : source_cache_new(d->t.proc);
        struct snapshot_source lines = source_cache_lines(src);
        rc = report_write_text(d->last, NULL, st, out, src != NULL ? &lines : NULL, &ro, &err);
        source_cache_free(src);
    }
    if (rc < 0 || fflush(out) != 0) {
        fprintf(stderr, "pytop: writing the snapshot failed: %s\n",
                rc < 0 ? err.msg : strerror(errno));
        return -1;
    }
    return 0;
}

/* The window of the statistics: --window, or the whole run for --at-exit; 0: none. */
static double stats_window(const struct cli_options *o)
{
    return o->window_s > 0 ? o->window_s : o->at_exit ? INFINITY : 0;
}

/* Says why there is no snapshot to write. Returns the exit status. */
static int no_snapshot(struct dump *d, const struct pt_error *err)
{
    if (d->gone || d->ended) {
        fprintf(stderr, "pytop: process %d %s before a snapshot could be read\n", (int)d->t.pid,
                d->ended ? d->end_why : "exited");
        return CLI_EXIT_TARGET;
    }
    return cli_target_error(err, d->t.pid);
}

/* Closes OUT; STATUS, or a failure when closing says the writes did not make it. */
static int close_output(const struct cli_options *o, FILE *out, int status)
{
    if (out != NULL && out != stdout && fclose(out) != 0 && status == CLI_EXIT_OK) {
        fprintf(stderr, "pytop: writing %s failed: %s\n", o->output, strerror(errno));
        return CLI_EXIT_TARGET;
    }
    return status;
}

/* After the target was opened: samples, reads the snapshot and writes it into *OUT (NULL:
 * opens -o there first). Returns the exit status. */
static int dump_target(struct dump *d, FILE **out)
{
    const struct cli_options *o = d->o;
    struct pt_error err = {0};
    double window = stats_window(o);
    struct sampler_opts so = {.rate_hz = window > 0 ? o->rate_hz : 0,
                              .window_s = window > 0 ? window : 1,
                              .blocking = o->blocking,
                              .mode = o->sample_mode,
                              .active_only = o->active_only,
                              .no_gc_frames = o->no_gc_frames,
                              .opcodes = o->opcodes,
                              .native = o->native,
                              .once = true};
    if ((d->sampler = sampler_new(d->t.proc, &d->t.rt, &so, &err)) == NULL) {
        return cli_target_error(&err, d->t.pid);
    }
    if (window > 0) {
        double start = clock_now();
        sample_until(d, o->at_exit || isinf(window) ? INFINITY : start + window);
    }
    /* The snapshot of the end of the window, unless the target went meanwhile: then the last
     * one read during it. */
    if (!d->gone && !d->ended && keep_snapshot(d, &err) < 0 && d->last == NULL) {
        return no_snapshot(d, &err);
    }
    if (d->last == NULL) {
        return no_snapshot(d, &err);
    }
    if (d->gone || d->ended) {
        prefer_running(d);
    }
    double now = clock_now();
    make_note(d, now);
    struct sampler_stats *st = NULL;
    if (window > 0) {
        sampler_update_cpu(d->sampler, now);
        if ((st = sampler_stats(d->sampler, now)) == NULL) {
            fprintf(stderr, "pytop: out of memory for the statistics\n");
            return CLI_EXIT_TARGET;
        }
    } else {
        /* The snapshot owns all it says: the reader's caches and buffers are done with, and
         * freed now they are the memory the writer takes (its tree, source lines, text)
         * instead of fresh pages, each of which costs more than the bytes written to it. */
        sampler_free(d->sampler);
        d->sampler = NULL;
    }
    int status = CLI_EXIT_TARGET;
    if (*out == NULL) {
        *out = cli_open_output(o->output, o->force);
    }
    if (*out != NULL && write_dump(d, st, *out) == 0) {
        status = CLI_EXIT_OK;
    }
    sampler_stats_free(st);
    return status;
}

int dump_run(const struct cli_options *o)
{
    struct dump d = {.o = o};
    /* Only a dump that waits or samples answers a signal by dumping: a single one is quick,
     * and stops at the first signal as any program does. */
    if (o->command != NULL || stats_window(o) > 0) {
        stopsig_catch();
    }
    int status = target_open(&d.t, o, stopsig_flag());
    if (status != 0) {
        return status;
    }
    /* A dump that samples for long learns at once whether it can write. */
    FILE *out = NULL;
    if (stats_window(o) > 0 && (out = cli_open_output(o->output, o->force)) == NULL) {
        target_close(&d.t);
        return CLI_EXIT_TARGET;
    }
    status = dump_target(&d, &out);
    status = close_output(o, out, status);
    snapshot_free(d.last);
    snapshot_free(d.running);
    sampler_free(d.sampler);
    target_close(&d.t);
    return status;
}
