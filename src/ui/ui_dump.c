/* ui_dump: the `d` key: the incident report written to a new text file in the current
 * directory. */
#include "config.h"

#include "ui/ui_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/util/error.h"
#include "core/write/heat_text.h"
#include "core/write/report.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "app/live.h"

enum {
    DUMP_TRIES = 100,
    DUMP_TOP_FUNCTIONS = 20, /* rows of the report's functions table */
};

int ui_dump_create(pid_t pid, double when, const char *suffix, const char *ext, char *name,
                   size_t size, struct pt_error *err)
{
    char stamp[32];
    time_t t = when > 0 ? (time_t)when : time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm) == 0) {
        snprintf(stamp, sizeof stamp, "%lld", (long long)t);
    }
    for (int i = 1; i <= DUMP_TRIES; i++) {
        if (i == 1) {
            snprintf(name, size, "pytop-%d-%s%s.%s", (int)pid, stamp, suffix, ext);
        } else {
            snprintf(name, size, "pytop-%d-%s%s-%d.%s", (int)pid, stamp, suffix, i, ext);
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            return fd;
        }
        if (errno != EEXIST) {
            return pt_error_set(err, PT_E_IO, errno, "cannot create %s: %s", name, strerror(errno));
        }
    }
    return pt_error_set(err, PT_E_IO, EEXIST, "%s and %d more exist already", name, DUMP_TRIES);
}

static int create(const struct snapshot *s, char *name, size_t size, struct pt_error *err)
{
    return ui_dump_create(s->pid, s->time, "", "txt", name, size, err);
}

/* Writes to the new file FD (named NAME) with WRITE, then closes it; a failure removes it. */
static int write_file(int fd, const char *name,
                      int (*write)(const void *ctx, FILE *f, struct pt_error *err),
                      const void *ctx, struct pt_error *err)
{
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        int e = errno;
        close(fd);
        unlink(name);
        return pt_error_set(err, PT_E_IO, e, "cannot write %s: %s", name, strerror(e));
    }
    int rc = write(ctx, f, err);
    if (fclose(f) != 0 && rc == 0) {
        rc = pt_error_set(err, PT_E_IO, errno, "writing %s: %s", name, strerror(errno));
    }
    if (rc < 0) {
        unlink(name);
        return pt_error_prefix(err, "%s", name);
    }
    return 0;
}

struct heat_dump {
    const struct sampler_heat *heat;
    const struct snapshot_source *src;
    const char *who;
};

static int write_heat(const void *ctx, FILE *f, struct pt_error *err)
{
    const struct heat_dump *d = ctx;
    return heat_write_text(d->heat, d->src, d->who, f, err);
}

struct report_dump {
    const struct snapshot *s;
    const struct snapshot *tasks;
    const struct sampler_stats *st;
    const struct snapshot_source *src;
    const struct report_opts *opts;
};

static int write_report(const void *ctx, FILE *f, struct pt_error *err)
{
    const struct report_dump *d = ctx;
    return report_write_text(d->s, d->tasks, d->st, f, d->src, d->opts, err);
}

int ui_dump_heat(const struct live_frame *f, pid_t pid, const struct sampler_heat *h,
                 const struct snapshot_source *src, char *name, size_t size, struct pt_error *err)
{
    const struct snapshot *s = f != NULL ? f->snap : NULL;
    char who[768];
    char when[32] = "?";
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) != NULL) {
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    snprintf(who, sizeof who, "Process %d (%.400s), Python %.*s, dumped at %s by pytop's source "
             "heat view", (int)pid, f != NULL && f->command[0] != '\0' ? f->command : "?",
             s != NULL && s->python.version.ptr != NULL ? (int)s->python.version.len : 1,
             s != NULL && s->python.version.ptr != NULL ? s->python.version.ptr : "?", when);
    int fd = ui_dump_create(pid, 0, "-source", "txt", name, size, err);
    if (fd < 0) {
        return -1;
    }
    struct heat_dump d = {h, src, who};
    return write_file(fd, name, write_heat, &d, err);
}

int ui_dump_write(const struct snapshot *s, const struct snapshot *tasks,
                  const struct sampler_stats *st, const struct snapshot_source *src,
                  const struct report_opts *opts, char *name, size_t size, struct pt_error *err)
{
    int fd = create(s, name, size, err);
    if (fd < 0) {
        return -1;
    }
    struct report_dump d = {s, tasks, st, src, opts};
    return write_file(fd, name, write_report, &d, err);
}

int ui_dump_frame(const struct live_frame *f, const struct cli_options *opts, double window,
                  double delay, bool frozen, const struct snapshot_source *src, char *name,
                  size_t size, struct pt_error *err)
{
    char by[512];
    /* The statistics of the picture's own refresh: a frozen picture's window may differ from
     * the one now asked for. */
    enum sampler_mode mode = opts->sample_mode;
    if (f->stats != NULL) {
        window = f->stats->window_limit;
        mode = f->stats->mode;
    }
    cli_settings_text(opts, window, delay, mode,
                      frozen ? "live view, d on the frozen picture" : "live view, d", by,
                      sizeof by);
    struct report_opts ro = {
        .by = by,
        .no_stats = "no sample counted yet",
        .top_functions = DUMP_TOP_FUNCTIONS,
    };
    return ui_dump_write(f->snap, f->tasks, f->stats, src, &ro, name, size, err);
}
