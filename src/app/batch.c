/* batch: pytop -b, a stream of snapshots with the sampler's statistics (text or JSON lines). */
#include "config.h"

#include "app/batch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/sampler/sampler.h"
#include "core/sampler/schedule.h"
#include "core/write/sampler_write.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "core/walk/unwind.h"
#include "core/target/source.h"
#include "app/target.h"
#include "app/stopsig.h"
#include "app/record.h"

enum { BATCH_TOP_FUNCTIONS = 20 }; /* rows of the text report's functions table */

/* How long an exited command may take to be reaped, for its exit status. */
static const double END_WAIT_S = 0.5;

/* Set by SIGINT and SIGTERM: finish the interval in hand, write it, and stop. */

struct batch {
    const struct cli_options *o;
    struct target t;
    struct sampler *sampler;
    struct source_cache *src;
    FILE *out;
    struct recording_app *rec; /* --record: the intervals go into a recording, not documents */
    bool gone;  /* the target exited */
    bool ended; /* the target exec()ed a program pytop cannot follow: END_WHY says */
    char end_why[256];
    /* The target as the last snapshot named it, for a document without one: its arguments
     * (each NUL-terminated; ARGC 0 when unknown) and start. */
    char args[LIMIT_CMDLINE];
    size_t args_len;
    size_t argc;
    bool args_cut;
    double started;
};

/* The target exec()ed: goes on with the new program when it is a Python pytop can read, else
 * ends the batch saying why. Returns 0 when sampling goes on. */
static int follow(struct batch *b)
{
    struct pt_error err = {0};
    char exe[PATH_MAX];
    if (sampler_follow_exec(b->sampler, &b->t.rt, &err) == 0) {
        if (proc_exe(b->t.proc, exe, sizeof exe, NULL) < 0) {
            snprintf(exe, sizeof exe, "?");
        }
        fprintf(stderr, "pytop: process %d exec()ed %s; following the new program\n", (int)b->t.pid,
                exe);
        if (b->rec != NULL) {
            record_exec(b->rec, exe, clock_now());
        }
        return 0;
    }
    if (err.code == PT_E_GONE || err.code == PT_E_NOPROC) {
        b->gone = true;
    } else {
        b->ended = true;
        snprintf(b->end_why, sizeof b->end_why, "%s", err.msg);
    }
    return -1;
}

/* Samples from START until END: one at a random point of each period of the rate from START
 * (schedule.h; a late sample is taken at once, but periods missed beyond it are skipped, never
 * made up in a burst), or back to back at --rate max; failed samples in a row back off
 * (sampler_due()). Stops early when the target exits, exec()s a program that cannot be
 * followed, or a signal asks. */
static void sample_interval(struct batch *b, double start, double end)
{
    struct schedule sched;
    schedule_start(&sched, b->o->rate_hz, start, schedule_seed());
    double now = clock_now();
    /* At least one sample, even when pytop itself did not run until the interval was over (a
     * loaded machine): an empty document would say the target could not be read. */
    bool first = true;
    while (!stopsig_requested() && (now < end || first)) {
        struct pt_error err = {0};
        first = false;
        if (sampler_sample(b->sampler, now, &err) < 0) {
            if (err.code == PT_E_GONE || err.code == PT_E_NOPROC) {
                b->gone = true;
                return;
            }
            if (err.code == PT_E_EXEC && follow(b) < 0) {
                return;
            }
        }
        now = clock_now();
        double next = sampler_due(b->sampler, schedule_next(&sched, now));
        if (next > now) {
            stopsig_sleep_until(next < end ? next : end);
            now = clock_now();
        }
    }
}

/* Stands in for the snapshot of an interval in which no sample succeeded. */
static struct snapshot *empty_snapshot(pid_t pid, const char *why, struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    if (s == NULL) {
        return NULL;
    }
    s->pid = pid;
    s->time = clock_wall();
    if (why != NULL) {
        snapshot_warn(s, "the interval's snapshot could not be read: %s", why);
    } else {
        snapshot_warn(s, "no sample succeeded in this interval");
    }
    return s;
}

/* Keeps what SNAP says of the target, for the documents that will have no snapshot. */
static void remember_target(struct batch *b, const struct snapshot *snap)
{
    b->started = snap->started;
    b->argc = 0;
    b->args_len = 0;
    b->args_cut = snap->cmdline_cut;
    for (size_t i = 0; snap->cmdline != NULL && i < snap->n_cmdline; i++) {
        const struct snap_str *a = &snap->cmdline[i];
        if (a->len >= sizeof b->args - b->args_len) {
            b->args_cut = true;
            break;
        }
        memcpy(b->args + b->args_len, a->ptr, a->len);
        b->args_len += a->len;
        b->args[b->args_len++] = '\0';
        b->argc++;
    }
}

/* Names the target in EMPTY as the last snapshot did, and its Python as located (the program
 * it exec()ed, when followed: its first interval may end before it can be read). */
static void name_target(const struct batch *b, struct snapshot *empty)
{
    empty->started = b->started;
    if (!b->ended) {
        unwind_name_python(&b->t.rt, empty);
    }
    if (b->argc > 0) {
        snapshot_set_cmdline(empty, b->args, b->args_len, b->args_cut, NULL);
    }
}

/* Writes the interval that ends at NOW, unless it has no sample and SKIP_EMPTY. Returns 0, or
 * -1 after saying why on stderr. */
static int write_interval(struct batch *b, double now, bool skip_empty)
{
    struct pt_error err = {0};
    struct snapshot *empty = NULL;
    sampler_update_cpu(b->sampler, now);
    struct sampler_stats *st = sampler_stats(b->sampler, now);
    if (st == NULL) {
        fprintf(stderr, "pytop: out of memory for the statistics\n");
        return -1;
    }
    /* The document's snapshot is read in full once, at the end of its interval, task graph
     * included as --dump and the live view read it; the samples before it were compact (names,
     * lines and the GC only where shown). */
    struct pt_error snap_err = {0};
    const struct snapshot *snap = NULL;
    /* A snapshot that fails while samples succeed met the target changing under it (or a
     * passing failure): it is read again once before the document says it could not be. */
    for (int attempt = 0; snap == NULL && attempt < 2 && st->samples > 0 && !b->gone && !b->ended;
         attempt++) {
        snap = sampler_snapshot(b->sampler, true, &snap_err);
    }
    int rc = -1;
    if (snap == NULL && skip_empty && st->samples == 0) {
        rc = 0;
        goto out;
    }
    const char *why = b->ended           ? b->end_why
                      : st->samples == 0 ? NULL
                      : b->gone          ? "the process exited"
                                         : snap_err.msg;
    if (snap == NULL && (snap = empty = empty_snapshot(b->t.pid, why, &err)) == NULL) {
        goto out;
    }
    if (empty != NULL) {
        name_target(b, empty);
    } else {
        remember_target(b, snap);
    }
    if (b->rec != NULL) {
        rc = record_interval(b->rec, empty == NULL ? snap : NULL, now);
        if (rc < 0) {
            snprintf(err.msg, sizeof err.msg, "%s: %s", record_name(b->rec),
                     record_failure(b->rec));
        }
        record_progress_cli(b->rec, now);
        goto out;
    }
    if (b->o->json) {
        rc = sampler_write_json(snap, st, b->out, true, &err);
    } else {
        struct snapshot_source lines = source_cache_lines(b->src);
        rc = sampler_write_text(snap, st, b->out, b->src != NULL ? &lines : NULL,
                                BATCH_TOP_FUNCTIONS, &err);
    }
out:
    if (rc < 0 && err.msg[0] != '\0') {
        fprintf(stderr, "pytop: %s\n", err.msg);
    }
    snapshot_free(empty);
    sampler_stats_free(st);
    return rc;
}

/* One interval of -d SECS after another, each written as it ends; the intervals keep to their
 * grid unless writing took longer than one. */
static int batch_loop(struct batch *b)
{
    const struct cli_options *o = b->o;
    double start = clock_now();
    for (int i = 0; o->iterations == 0 || i < o->iterations; i++) {
        double end = start + o->delay;
        /* Each document covers its own interval only, unless --window says how far back. */
        if (o->window_s <= 0) {
            sampler_reset(b->sampler);
        }
        sample_interval(b, start, end);
        double now = clock_now();
        /* A target that exited before this interval's first sample leaves nothing to say. */
        if (write_interval(b, now, b->gone) < 0) {
            return CLI_EXIT_TARGET;
        }
        if (b->gone) {
            char how[96];
            if (target_ended(&b->t, END_WAIT_S, how, sizeof how)) {
                fprintf(stderr, "pytop: process %d exited (%s); stopping\n", (int)b->t.pid, how);
            } else {
                fprintf(stderr, "pytop: process %d exited; stopping\n", (int)b->t.pid);
            }
            return CLI_EXIT_OK;
        }
        if (b->ended) {
            fprintf(stderr, "pytop: %s\n", b->end_why);
            return CLI_EXIT_TARGET;
        }
        if (stopsig_requested()) {
            return CLI_EXIT_OK;
        }
        /* Writing that ate half an interval or more starts the next one afresh: on the grid
         * it would be short, or empty. */
        start = now - end >= o->delay / 2 ? now : end;
    }
    return CLI_EXIT_OK;
}

int batch_run(const struct cli_options *o)
{
    struct pt_error err = {0};
    struct batch b = {.o = o, .started = -1};
    struct sampler_opts so = {
        .rate_hz = o->rate_hz,
        /* Reset at every interval, so the window only has to be long enough not to slide;
         * with --window the documents' statistics slide over it instead. */
        .window_s = o->window_s > 0 ? o->window_s : 2 * o->delay,
        .blocking = o->blocking,
        .mode = o->sample_mode,
        .active_only = o->active_only,
        .no_gc_frames = o->no_gc_frames,
        .opcodes = o->opcodes,
        .native = o->native,
    };
    /* A command being waited for is given up at the first signal, as the batch is. */
    stopsig_catch();
    int status = target_open(&b.t, o, stopsig_flag());
    if (status != 0) {
        return status;
    }
    status = CLI_EXIT_TARGET;
    if ((b.sampler = sampler_new(b.t.proc, &b.t.rt, &so, &err)) == NULL) {
        status = cli_target_error(&err, b.t.pid);
        goto out;
    }
    if (o->record != NULL) {
        if ((b.rec = record_open_cli(o, b.sampler, clock_now())) == NULL) {
            goto out;
        }
    } else if ((b.out = cli_open_output(o->output, o->force)) == NULL) {
        goto out;
    }
    if (!o->json && b.rec == NULL) {
        b.src = source_cache_new(b.t.proc);
    }
    status = batch_loop(&b);
    if (b.rec != NULL && record_finish_cli(b.rec, clock_now()) < 0 && status == CLI_EXIT_OK) {
        status = CLI_EXIT_TARGET;
    }
out:
    if (b.out != NULL && b.out != stdout && fclose(b.out) != 0 && status == CLI_EXIT_OK) {
        fprintf(stderr, "pytop: writing %s failed: %s\n", o->output, strerror(errno));
        status = CLI_EXIT_TARGET;
    }
    source_cache_free(b.src);
    sampler_free(b.sampler);
    target_close(&b.t);
    return status;
}
