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
#include "core/write/report.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "app/live.h"

enum {
    DUMP_TRIES = 100,
    DUMP_TOP_FUNCTIONS = 20, /* rows of the report's functions table */
};

/* Creates a file named after S that did not exist. Returns its fd, with its name in NAME. */
static int create(const struct snapshot *s, char *name, size_t size, struct pt_error *err)
{
    char stamp[32];
    time_t t = s->time > 0 ? (time_t)s->time : time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm) == 0) {
        snprintf(stamp, sizeof stamp, "%lld", (long long)t);
    }
    for (int i = 1; i <= DUMP_TRIES; i++) {
        if (i == 1) {
            snprintf(name, size, "pytop-%d-%s.txt", (int)s->pid, stamp);
        } else {
            snprintf(name, size, "pytop-%d-%s-%d.txt", (int)s->pid, stamp, i);
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

int ui_dump_write(const struct snapshot *s, const struct snapshot *tasks,
                  const struct sampler_stats *st, const struct snapshot_source *src,
                  const struct report_opts *opts, char *name, size_t size, struct pt_error *err)
{
    int fd = create(s, name, size, err);
    if (fd < 0) {
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        int e = errno;
        close(fd);
        unlink(name);
        return pt_error_set(err, PT_E_IO, e, "cannot write %s: %s", name, strerror(e));
    }
    int rc = report_write_text(s, tasks, st, f, src, opts, err);
    if (fclose(f) != 0 && rc == 0) {
        rc = pt_error_set(err, PT_E_IO, errno, "writing %s: %s", name, strerror(errno));
    }
    if (rc < 0) {
        unlink(name);
        return pt_error_prefix(err, "%s", name);
    }
    return 0;
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
