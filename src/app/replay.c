/* replay: a recording written back as pytop writes a target (--dump, -b), or as a profile
 * (--export); and a live target sampled straight into a profile (-p PID --export). */
#include "config.h"

#include "app/replay.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/stopsig.h"
#include "app/target.h"
#include "core/export/export.h"
#include "core/model/snapshot.h"
#include "core/record/recconv.h"
#include "core/record/recording.h"
#include "core/sampler/sampler.h"
#include "core/sampler/schedule.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/write/sampler_write.h"
#include "core/write/snapshot_write.h"

/* Says on stderr what part of R could not be read, if any. */
static void say_damage(const struct recording *r, const char *path)
{
    const char *d = recording_damage(r);
    if (d[0] != '\0') {
        fprintf(stderr, "pytop: %s: %s\n", path, d);
    }
}

static int replay_dump(const struct cli_options *o, struct recording *r, FILE *out)
{
    struct pt_error err = {0};
    double t = isnan(o->at) ? recording_duration(r) : o->at;
    struct snapshot *s = recording_snapshot_at(r, t, &err);
    if (s == NULL) {
        fprintf(stderr, "pytop: %s: %s\n", o->replay, err.msg);
        return CLI_EXIT_TARGET;
    }
    int rc = o->json ? snapshot_write_json(s, out, true, &err)
                     : snapshot_write_text(s, out, NULL, &err);
    snapshot_free(s);
    if (rc < 0) {
        fprintf(stderr, "pytop: %s\n", err.msg);
        return CLI_EXIT_TARGET;
    }
    return CLI_EXIT_OK;
}

static struct exporter *new_exporter(const struct cli_options *o, const struct rec_header *h,
                                     double from, double to)
{
    struct pt_error err = {0};
    struct export_opts eo = {.from = from,
                             .to = to,
                             .mode = o->sample_mode,
                             .thread = o->thread,
                             .period_s = h != NULL && h->rate_hz > 0 ? 1.0 / h->rate_hz : 0,
                             .header = h};
    struct exporter *x = exporter_new((enum export_format)o->export_format, &eo, &err);
    if (x == NULL) {
        fprintf(stderr, "pytop: %s\n", err.msg);
    }
    return x;
}

static int finish_export(const struct cli_options *o, struct exporter *x, FILE *out)
{
    struct pt_error err = {0};
    if (exporter_finish(x, out, &err) < 0) {
        fprintf(stderr, "pytop: %s: %s\n", o->output != NULL ? o->output : "stdout", err.msg);
        return CLI_EXIT_TARGET;
    }
    return CLI_EXIT_OK;
}

static int replay_export(const struct cli_options *o, struct recording *r, FILE *out)
{
    struct pt_error err = {0};
    struct exporter *x = new_exporter(o, recording_header(r), o->from, o->to);
    if (x == NULL) {
        return CLI_EXIT_TARGET;
    }
    int status = CLI_EXIT_OK;
    if (recording_scan(r, o->from, o->to, exporter_add_fn, x, &err) < 0) {
        /* What came before the damage is exported; the damage is said. */
        fprintf(stderr, "pytop: %s: %s\n", o->replay, err.msg);
    }
    status = finish_export(o, x, out);
    exporter_free(x);
    return status;
}

/* -p PID --export: samples for -d SECS, each converted and counted as it is taken. */
struct live_export {
    struct exporter *x;
    struct recconv *conv;
    double start;
    bool failed;
    char why[256];
};

static void live_sample(void *ctx, const struct sample *smp, const enum snap_bool *on_cpu,
                        const struct py_layout *L, double now)
{
    struct live_export *e = ctx;
    struct pt_error err = {0};
    const struct rec_sample *rs = recconv_sample(e->conv, smp, on_cpu, L, now - e->start, &err);
    if (e->failed) {
        return;
    }
    if (rs == NULL || exporter_add(e->x, rs, &err) < 0) {
        e->failed = true;
        snprintf(e->why, sizeof e->why, "%s", err.msg);
    }
}

static int export_live(const struct cli_options *o, FILE *out)
{
    struct pt_error err = {0};
    struct target t = {0};
    struct sampler *sampler = NULL;
    struct live_export e = {0};
    stopsig_catch();
    int status = target_open(&t, o, stopsig_flag());
    if (status != 0) {
        return status;
    }
    status = CLI_EXIT_TARGET;
    struct sampler_opts so = {.rate_hz = o->rate_hz,
                              .window_s = 1,
                              .blocking = o->blocking,
                              .mode = o->sample_mode,
                              .active_only = o->active_only,
                              .no_gc_frames = o->no_gc_frames,
                              .native = o->native};
    if ((sampler = sampler_new(t.proc, &t.rt, &so, &err)) == NULL) {
        status = cli_target_error(&err, t.pid);
        goto out;
    }
    struct rec_header h = {.format = {"pytop live", 10},
                           .pid = t.pid,
                           .rate_hz = o->rate_hz,
                           .start_wall = clock_wall(),
                           .started = -1};
    if ((e.x = new_exporter(o, &h, 0, INFINITY)) == NULL ||
        (e.conv = recconv_new(&err)) == NULL) {
        if (e.x != NULL) {
            fprintf(stderr, "pytop: %s\n", err.msg);
        }
        goto out;
    }
    e.start = clock_now();
    struct sampler_hook hook = {live_sample, NULL, &e};
    sampler_set_hook(sampler, &hook);
    double end = e.start + o->delay;
    double now = e.start;
    /* At a random point of each period of the rate (schedule.h). */
    struct schedule sched;
    schedule_start(&sched, o->rate_hz, now, schedule_seed());
    while (!stopsig_requested() && now < end && !e.failed) {
        if (sampler_sample(sampler, now, &err) < 0 &&
            (err.code == PT_E_GONE || err.code == PT_E_NOPROC || err.code == PT_E_EXEC)) {
            fprintf(stderr, "pytop: %s; exporting what was sampled\n", err.msg);
            break;
        }
        now = clock_now();
        double next = sampler_due(sampler, schedule_next(&sched, now));
        if (next > now) {
            stopsig_sleep_until(next < end ? next : end);
            now = clock_now();
        }
    }
    sampler_set_hook(sampler, NULL);
    if (e.failed) {
        fprintf(stderr, "pytop: %s\n", e.why);
        goto out;
    }
    status = finish_export(o, e.x, out);
out:
    exporter_free(e.x);
    recconv_free(e.conv);
    sampler_free(sampler);
    target_close(&t);
    return status;
}

/* -b on a recording: the documents it would have written live, one per -d SECS of it. */
struct feed {
    struct sampler *sampler;
    struct recconv *conv;
    int rc;
    char why[256];
};

static int feed_sample(void *ctx, const struct rec_sample *rs)
{
    struct feed *f = ctx;
    if (rs->failed) {
        sampler_add_error(f->sampler, rs->t);
        return 0;
    }
    struct pt_error err = {0};
    const enum snap_bool *on_cpu = NULL;
    const struct sample *smp = recconv_compact(f->conv, rs, &on_cpu, &err);
    if (smp == NULL) {
        snprintf(f->why, sizeof f->why, "%s", err.msg);
        return f->rc = -1;
    }
    sampler_add_sample(f->sampler, smp, on_cpu, rs->t);
    return 0;
}

static int replay_interval(const struct cli_options *o, struct recording *r, struct feed *f,
                           double from, double to, FILE *out)
{
    struct pt_error err = {0};
    sampler_reset(f->sampler);
    if (recording_scan(r, from, to, feed_sample, f, &err) < 0 || f->rc < 0) {
        fprintf(stderr, "pytop: %s: %s\n", o->replay, f->rc < 0 ? f->why : err.msg);
        if (f->rc < 0) {
            return -1;
        }
    }
    struct sampler_stats *st = sampler_stats(f->sampler, to);
    /* The tail after the last sample (the recorder's closing) is no interval of its own. */
    if (st != NULL && st->samples == 0 && st->errors == 0 && from > 0) {
        sampler_stats_free(st);
        return 0;
    }
    struct snapshot *s = recording_snapshot_at(r, to, &err);
    int rc = -1;
    if (st == NULL) {
        fprintf(stderr, "pytop: out of memory for the statistics\n");
    } else if (o->json) {
        rc = sampler_write_json(s, st, out, true, &err);
    } else {
        rc = sampler_write_text(s, st, out, NULL, 20, &err);
    }
    if (st != NULL && rc < 0) {
        fprintf(stderr, "pytop: %s\n", err.msg);
    }
    snapshot_free(s);
    sampler_stats_free(st);
    return rc;
}

static int replay_batch(const struct cli_options *o, struct recording *r, FILE *out)
{
    struct pt_error err = {0};
    const struct rec_header *h = recording_header(r);
    struct sampler_opts so = {.rate_hz = h->rate_hz, .window_s = 2 * o->delay,
                              .mode = o->sample_mode};
    struct feed f = {0};
    int status = CLI_EXIT_TARGET;
    if ((f.sampler = sampler_new(NULL, NULL, &so, &err)) == NULL ||
        (f.conv = recconv_new(&err)) == NULL) {
        fprintf(stderr, "pytop: %s\n", err.msg);
        goto out;
    }
    double end = recording_duration(r);
    double from = 0;
    for (int i = 0; (o->iterations == 0 || i < o->iterations) && (i == 0 || from < end); i++) {
        double to = from + o->delay;
        /* The last interval ends with the recording. */
        if (replay_interval(o, r, &f, i == 0 ? -INFINITY : from, to < end ? to : end, out) < 0) {
            goto out;
        }
        from = to;
    }
    status = CLI_EXIT_OK;
out:
    recconv_free(f.conv);
    sampler_free(f.sampler);
    return status;
}

int replay_run(const struct cli_options *o)
{
    if (o->replay == NULL) {
        FILE *out = cli_open_output(o->output, o->force);
        if (out == NULL) {
            return CLI_EXIT_TARGET;
        }
        int status = export_live(o, out);
        if (out != stdout && fclose(out) != 0 && status == CLI_EXIT_OK) {
            fprintf(stderr, "pytop: writing %s failed: %s\n", o->output, strerror(errno));
            status = CLI_EXIT_TARGET;
        }
        return status;
    }
    struct pt_error err = {0};
    struct recording *r = recording_open(o->replay, &err);
    if (r == NULL) {
        fprintf(stderr, "pytop: %s\n", err.msg);
        return CLI_EXIT_TARGET;
    }
    say_damage(r, o->replay);
    FILE *out = cli_open_output(o->output, o->force);
    int status = CLI_EXIT_TARGET;
    if (out != NULL) {
        status = o->mode == CLI_MODE_DUMP     ? replay_dump(o, r, out)
                 : o->mode == CLI_MODE_EXPORT ? replay_export(o, r, out)
                                              : replay_batch(o, r, out);
        if (out != stdout && fclose(out) != 0 && status == CLI_EXIT_OK) {
            fprintf(stderr, "pytop: writing %s failed: %s\n", o->output, strerror(errno));
            status = CLI_EXIT_TARGET;
        }
    }
    recording_close(r);
    return status;
}
