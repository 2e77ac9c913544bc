/* rec-stretch: a long recording made from a short one (make bench, section 6): IN's samples
 * written COUNT times end to end into OUT, each copy's times shifted by IN's length, with a full
 * snapshot (IN's at that moment) every interval of OUT. Samples go back through the compact form
 * (recconv_compact(), then recwriter_sample()), which carries no line: OUT's frames keep their
 * function but not their line, so OUT is a little smaller than a recording of that length.
 * Prints one JSON line. Usage: rec-stretch IN COUNT OUT */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/model/snapshot.h"
#include "core/record/recconv.h"
#include "core/record/recording.h"
#include "core/record/recwrite.h"
#include "core/util/error.h"

enum { MAX_COUNT = 1000, MAX_SNAPSHOTS = 100000 };

struct stretch {
    struct recwriter *w;
    struct recconv *conv;
    struct snapshot **snaps; /* IN at 0, INTERVAL, 2 INTERVAL, ... */
    size_t n_snaps;
    double interval;
    double shift;     /* added to IN's times: the copy's start in OUT */
    double next_snap; /* OUT's time of the next snapshot */
    struct pt_error err;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes the snapshots due before OUT's time T: IN's at the same point of its copy. */
static int put_snapshots(struct stretch *st, double t)
{
    while (st->next_snap <= t) {
        double at = (st->next_snap - st->shift) / st->interval + 1e-9;
        size_t k = at > 0 ? (size_t)at : 0;
        k = k < st->n_snaps ? k : st->n_snaps - 1;
        if (recwriter_snapshot(st->w, st->next_snap, st->snaps[k], &st->err) < 0) {
            return -1;
        }
        st->next_snap += st->interval;
    }
    return 0;
}

static int copy_sample(void *ctx, const struct rec_sample *rs)
{
    struct stretch *st = ctx;
    double t = st->shift + rs->t;
    if (put_snapshots(st, t) < 0) {
        return -1;
    }
    if (rs->failed) {
        char why[256];
        snprintf(why, sizeof why, "%.*s", (int)rs->error.len, rs->error.ptr ? rs->error.ptr : "");
        return recwriter_error(st->w, t, why, &st->err) < 0 ? -1 : 0;
    }
    const enum snap_bool *on_cpu = NULL;
    const struct sample *smp = recconv_compact(st->conv, rs, &on_cpu, &st->err);
    if (smp == NULL || recwriter_sample(st->w, t, smp, on_cpu, NULL, &st->err) < 0) {
        return -1;
    }
    return 0;
}

/* IN's snapshots, one per interval of its length. */
static int take_snapshots(struct stretch *st, struct recording *r, double length)
{
    size_t n = (size_t)(length / st->interval) + 1;
    if (n > MAX_SNAPSHOTS) {
        return pt_error_set(&st->err, PT_E_LIMIT, 0, "%zu snapshots to keep", n);
    }
    if ((st->snaps = calloc(n, sizeof *st->snaps)) == NULL) {
        return pt_error_set(&st->err, PT_E_NOMEM, 0, "out of memory for the snapshots");
    }
    for (size_t k = 0; k < n; k++) {
        double at = (double)k * st->interval;
        if ((st->snaps[k] = recording_snapshot_at(r, at, &st->err)) == NULL) {
            return pt_error_prefix(&st->err, "snapshot at %g s", at);
        }
        st->n_snaps = k + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_COUNT) {
        fprintf(stderr, "usage: rec-stretch IN COUNT OUT (COUNT 1 to %d)\n", MAX_COUNT);
        return 2;
    }
    int count = atoi(argv[2]);
    struct stretch st = {0};
    int status = 1;
    double t0 = now();
    struct recording *r = recording_open(argv[1], &st.err);
    if (r == NULL) {
        goto out;
    }
    const struct rec_header *h = recording_header(r);
    double length = recording_duration(r);
    double period = h->rate_hz > 0 ? 1 / h->rate_hz : 0.001;
    st.interval = h->interval_s > 0 ? h->interval_s : 1;
    if (take_snapshots(&st, r, length) < 0 || (st.conv = recconv_new(&st.err)) == NULL) {
        goto out;
    }
    int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        pt_error_set(&st.err, PT_E_IO, 0, "cannot create %s", argv[3]);
        goto out;
    }
    if ((st.w = recwriter_open(fd, h, &st.err)) == NULL) {
        goto out;
    }
    recwriter_set_offsets(st.w, false);
    for (int i = 0; i < count; i++) {
        st.shift = (double)i * (length + period);
        if (recording_scan(r, 0, length, copy_sample, &st, &st.err) != 0) {
            goto out;
        }
    }
    double end = (double)count * (length + period);
    uint64_t samples = recwriter_samples(st.w);
    int rc = recwriter_close(st.w, end, &st.err);
    st.w = NULL;
    struct stat sb;
    if (rc < 0 || stat(argv[3], &sb) < 0) {
        goto out;
    }
    printf("{\"seconds\": %.3f, \"samples\": %llu, \"bytes\": %lld, \"wall_s\": %.3f}\n", end,
           (unsigned long long)samples, (long long)sb.st_size, now() - t0);
    status = 0;
out:
    if (status != 0) {
        fprintf(stderr, "rec-stretch: %s\n", st.err.msg[0] != '\0' ? st.err.msg : "failed");
    }
    if (st.w != NULL) {
        recwriter_close(st.w, 0, NULL);
    }
    for (size_t k = 0; k < st.n_snaps; k++) {
        snapshot_free(st.snaps[k]);
    }
    free(st.snaps);
    recconv_free(st.conv);
    recording_close(r);
    return status;
}
