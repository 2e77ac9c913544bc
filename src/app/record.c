/* record: pytop --record FILE, the batch loop writing a recording instead of documents. */
#include "config.h"

#include "app/record.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/model/snapshot.h"
#include "core/record/recwrite.h"
#include "core/sampler/sampler.h"
#include "core/util/clock.h"
#include "core/util/error.h"

struct recording_app {
    const struct cli_options *o;
    struct sampler *sampler;
    struct recwriter *w;
    double start;
    bool tty;         /* a progress line on stderr */
    bool failed;      /* the first write error was said; nothing more is recorded */
    uint64_t errors;  /* failed samples */
    double last_progress;
};

static void say_failure(struct recording_app *r, const struct pt_error *e)
{
    if (!r->failed) {
        r->failed = true;
        fprintf(stderr, "%spytop: %s: %s; the recording ends here\n", r->tty ? "\n" : "",
                r->o->record, e->msg);
    }
}

static void on_sample(void *ctx, const struct sample *smp, const enum snap_bool *on_cpu,
                      const struct py_layout *L, double now)
{
    struct recording_app *r = ctx;
    struct pt_error err = {0};
    if (!r->failed && recwriter_sample(r->w, now - r->start, smp, on_cpu, L, &err) < 0) {
        say_failure(r, &err);
    }
}

static void on_error(void *ctx, const struct pt_error *why, double now)
{
    struct recording_app *r = ctx;
    struct pt_error err = {0};
    r->errors++;
    if (!r->failed && recwriter_error(r->w, now - r->start, why->msg, &err) < 0) {
        say_failure(r, &err);
    }
}

/* The header's account of the target, from its first snapshot. */
static void header_from(struct rec_header *h, const struct snapshot *s, double rate,
                        double interval)
{
    *h = (struct rec_header){0};
    h->pid = s->pid;
    h->cmdline = s->cmdline;
    h->n_cmdline = s->n_cmdline;
    h->python_version = s->python.version;
    h->hexversion = s->python.hexversion;
    h->free_threaded = s->python.free_threaded;
    h->debug_build = s->python.debug_build;
    h->binary = s->python.binary;
    h->rate_hz = rate;
    h->interval_s = interval;
    h->start_wall = s->time;
    h->started = s->started;
}

struct recording_app *record_start(const struct cli_options *o, struct sampler *sampler,
                                   double start)
{
    struct pt_error err = {0};
    const struct snapshot *snap = sampler_snapshot(sampler, true, &err);
    if (snap == NULL) {
        snap = sampler_snapshot(sampler, true, &err);
    }
    if (snap == NULL) {
        fprintf(stderr, "pytop: cannot start recording: %s\n", err.msg);
        return NULL;
    }
    FILE *f = cli_open_output(o->record, o->force);
    if (f == NULL) {
        return NULL;
    }
    struct recording_app *r = calloc(1, sizeof *r);
    int fd = f != stdout ? dup(fileno(f)) : dup(STDOUT_FILENO);
    if (f != stdout) {
        fclose(f);
    }
    if (r == NULL || fd < 0) {
        fprintf(stderr, "pytop: cannot record to %s: %s\n", o->record, strerror(errno));
        free(r);
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    r->o = o;
    r->sampler = sampler;
    r->start = start;
    r->tty = isatty(STDERR_FILENO) == 1;
    struct rec_header h;
    header_from(&h, snap, o->rate_hz, o->delay);
    if ((r->w = recwriter_open(fd, &h, &err)) == NULL ||
        recwriter_snapshot(r->w, clock_now() - start, snap, &err) < 0) {
        fprintf(stderr, "pytop: cannot record to %s: %s\n", o->record, err.msg);
        recwriter_close(r->w, 0, NULL);
        free(r);
        return NULL;
    }
    struct sampler_hook hook = {on_sample, on_error, r};
    sampler_set_hook(sampler, &hook);
    return r;
}

/* "1.2 MB", "830 kB", "512 B". */
static void put_size(char *buf, size_t size, uint64_t bytes)
{
    if (bytes >= 1000 * 1000) {
        snprintf(buf, size, "%.1f MB", (double)bytes / 1e6);
    } else if (bytes >= 1000) {
        snprintf(buf, size, "%.0f kB", (double)bytes / 1e3);
    } else {
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    }
}

/* "elapsed 0:41  samples 4 093  rate 99.8 Hz  size 1.2 MB". */
static void status_text(const struct recording_app *r, double now, char *buf, size_t size)
{
    double t = now - r->start;
    uint64_t n = recwriter_samples(r->w);
    char bytes[32];
    put_size(bytes, sizeof bytes, recwriter_bytes(r->w));
    unsigned secs = t > 0 && t < 1e9 ? (unsigned)t : 0;
    snprintf(buf, size, "%u:%02u:%02u, %" PRIu64 " samples (%.1f/s), %" PRIu64 " failed, %s",
             secs / 3600, secs / 60 % 60, secs % 60, n, t > 0 ? (double)n / t : 0.0, r->errors,
             bytes);
}

int record_interval(struct recording_app *r, const struct snapshot *snap, double now)
{
    struct pt_error err = {0};
    if (snap != NULL && !r->failed && recwriter_snapshot(r->w, now - r->start, snap, &err) < 0) {
        say_failure(r, &err);
    }
    if (r->tty && !r->failed) {
        char line[160];
        status_text(r, now, line, sizeof line);
        fprintf(stderr, "\rpytop: recording %s: %s\033[K", r->o->record, line);
        fflush(stderr);
    }
    return r->failed ? -1 : 0;
}

void record_exec(struct recording_app *r, const char *program, double now)
{
    struct pt_error err = {0};
    if (!r->failed && recwriter_exec(r->w, now - r->start, program, &err) < 0) {
        say_failure(r, &err);
    }
}

int record_finish(struct recording_app *r, double now)
{
    if (r == NULL) {
        return 0;
    }
    sampler_set_hook(r->sampler, NULL);
    char line[160];
    status_text(r, now, line, sizeof line);
    struct pt_error err = {0};
    int rc = recwriter_close(r->w, now - r->start, &err);
    if (r->tty) {
        fputs("\r\033[K", stderr);
    }
    if (rc < 0 && !r->failed) {
        fprintf(stderr, "pytop: %s: %s\n", r->o->record, err.msg);
    }
    fprintf(stderr, "pytop: recorded %s: %s%s\n", r->o->record, line,
            rc < 0 || r->failed ? " (cut short by the error above)" : "");
    rc = rc < 0 || r->failed ? -1 : 0;
    free(r);
    return rc;
}
