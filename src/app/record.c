/* record: samples and snapshots into a .pyrec as they are taken (--record, the live view's R). */
#include "config.h"

#include "app/record.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/model/snapshot.h"
#include "core/record/recwrite.h"
#include "core/sampler/sampler.h"
#include "core/util/clock.h"
#include "core/util/error.h"

struct recording_app {
    struct sampler *sampler;
    struct recwriter *w;
    char name[1024];
    double start;
    uint64_t errors;       /* failed samples */
    char failure[320];     /* why it stopped early; "" while it goes on */
    bool tty;              /* --record on a terminal: a progress line */
};

static void note_failure(struct recording_app *r, const struct pt_error *e)
{
    if (r->failure[0] == '\0') {
        snprintf(r->failure, sizeof r->failure, "%s", e->msg[0] != '\0' ? e->msg : "write failed");
    }
}

static void on_sample(void *ctx, const struct sample *smp, const enum snap_bool *on_cpu,
                      const struct py_layout *L, double now)
{
    struct recording_app *r = ctx;
    struct pt_error err = {0};
    if (r->failure[0] == '\0' && recwriter_sample(r->w, now - r->start, smp, on_cpu, L, &err) < 0) {
        note_failure(r, &err);
    }
}

static void on_error(void *ctx, const struct pt_error *why, double now)
{
    struct recording_app *r = ctx;
    struct pt_error err = {0};
    r->errors++;
    if (r->failure[0] == '\0' && recwriter_error(r->w, now - r->start, why->msg, &err) < 0) {
        note_failure(r, &err);
    }
}

struct recording_app *record_start(int fd, const char *name, struct sampler *sampler, double rate,
                                   double interval, bool offsets, double start,
                                   struct pt_error *err)
{
    const struct snapshot *snap = sampler_snapshot(sampler, true, err);
    if (snap == NULL) {
        snap = sampler_snapshot(sampler, true, err);
    }
    struct recording_app *r = snap != NULL ? calloc(1, sizeof *r) : NULL;
    if (r == NULL) {
        if (snap != NULL) {
            pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        }
        close(fd);
        return NULL;
    }
    r->sampler = sampler;
    r->start = start;
    snprintf(r->name, sizeof r->name, "%s", name);
    struct rec_header h;
    recwriter_header_from(&h, snap, rate, interval);
    if ((r->w = recwriter_open(fd, &h, err)) == NULL) {
        free(r);
        return NULL;
    }
    recwriter_set_offsets(r->w, offsets);
    if (recwriter_snapshot(r->w, clock_now() - start, snap, err) < 0) {
        recwriter_close(r->w, 0, NULL);
        free(r);
        return NULL;
    }
    struct sampler_hook hook = {on_sample, on_error, r};
    sampler_set_hook(sampler, &hook);
    return r;
}

int record_interval(struct recording_app *r, const struct snapshot *snap, double now)
{
    struct pt_error err = {0};
    if (snap != NULL && r->failure[0] == '\0' &&
        recwriter_snapshot(r->w, now - r->start, snap, &err) < 0) {
        note_failure(r, &err);
    }
    return r->failure[0] == '\0' ? 0 : -1;
}

void record_exec(struct recording_app *r, const char *program, double now)
{
    struct pt_error err = {0};
    if (r->failure[0] == '\0' && recwriter_exec(r->w, now - r->start, program, &err) < 0) {
        note_failure(r, &err);
    }
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

void record_size(const struct recording_app *r, double now, uint64_t *bytes, double *secs)
{
    *bytes = recwriter_bytes(r->w);
    *secs = now - r->start;
}

void record_status(const struct recording_app *r, double now, char *buf, size_t size)
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

const char *record_failure(const struct recording_app *r)
{
    return r->failure;
}

const char *record_name(const struct recording_app *r)
{
    return r->name;
}

int record_finish(struct recording_app *r, double now, char *summary, size_t size,
                  struct pt_error *err)
{
    sampler_set_hook(r->sampler, NULL);
    int rc = recwriter_close(r->w, now - r->start, err);
    r->w = NULL;
    double t = now - r->start;
    unsigned secs = t > 0 && t < 1e9 ? (unsigned)t : 0;
    snprintf(summary, size, "%u:%02u:%02u", secs / 3600, secs / 60 % 60, secs % 60);
    if (rc == 0 && r->failure[0] != '\0') {
        pt_error_set(err, PT_E_IO, 0, "%s", r->failure);
        rc = -1;
    }
    free(r);
    return rc;
}

struct recording_app *record_open_cli(const struct cli_options *o, struct sampler *sampler,
                                      double start)
{
    FILE *f = cli_open_output(o->record, o->force);
    if (f == NULL) {
        return NULL;
    }
    int fd = dup(fileno(f));
    if (f != stdout) {
        fclose(f);
    }
    struct pt_error err = {0};
    if (fd < 0) {
        fprintf(stderr, "pytop: cannot record to %s: %s\n", o->record, strerror(errno));
        return NULL;
    }
    struct recording_app *r =
        record_start(fd, o->record, sampler, o->rate_hz, o->delay, o->opcodes, start, &err);
    if (r == NULL) {
        fprintf(stderr, "pytop: cannot record to %s: %s\n", o->record, err.msg);
        return NULL;
    }
    r->tty = isatty(STDERR_FILENO) == 1;
    return r;
}

void record_progress_cli(const struct recording_app *r, double now)
{
    if (r->tty && r->failure[0] == '\0') {
        char line[160];
        record_status(r, now, line, sizeof line);
        fprintf(stderr, "\rpytop: recording %s: %s\033[K", r->name, line);
        fflush(stderr);
    }
}

int record_finish_cli(struct recording_app *r, double now)
{
    char line[160];
    char name[sizeof r->name];
    record_status(r, now, line, sizeof line);
    /* The size said is the whole file's, once closed (the status counts whole chunks). */
    char *size_at = strrchr(line, ',');
    snprintf(name, sizeof name, "%s", r->name);
    bool tty = r->tty;
    struct pt_error err = {0};
    char when[32];
    int rc = record_finish(r, now, when, sizeof when, &err);
    struct stat st;
    if (size_at != NULL && strcmp(name, "-") != 0 && stat(name, &st) == 0) {
        char bytes[32];
        put_size(bytes, sizeof bytes, (uint64_t)st.st_size);
        snprintf(size_at, sizeof line - (size_t)(size_at - line), ", %s", bytes);
    }
    if (tty) {
        fputs("\r\033[K", stderr);
    }
    if (rc < 0) {
        fprintf(stderr, "pytop: %s: %s\n", name, err.msg);
    }
    fprintf(stderr, "pytop: recorded %s: %s%s\n", name, line,
            rc < 0 ? " (cut short by the error above: readable up to it)" : "");
    return rc;
}
