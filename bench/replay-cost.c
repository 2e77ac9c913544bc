/* replay-cost: what --replay costs on a long recording (make bench, section 6): opening FILE,
 * then at COUNT moments T drawn at random (a fixed seed), the moment as a snapshot
 * (recording_snapshot_at(): a seek) and the Functions view over the WINDOW_S seconds ending at T
 * (those samples fed to a fresh sampler, as --replay -b does, and its statistics at T), each
 * timed, and the same window's samples read alone (decoded, not counted); and the process's max
 * RSS. Prints one JSON line.
 * Usage: replay-cost FILE [COUNT WINDOW_S] */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/model/snapshot.h"
#include "core/record/recconv.h"
#include "core/record/recording.h"
#include "core/sampler/sampler.h"
#include "core/util/error.h"

enum { MAX_COUNT = 1000 };

struct feed {
    struct sampler *sampler;
    struct recconv *conv;
    struct pt_error err;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the N values of V (sorted in place); its maximum in *MAX. */
static double median(double *v, size_t n, double *max)
{
    qsort(v, n, sizeof *v, by_value);
    *max = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int feed_sample(void *ctx, const struct rec_sample *rs)
{
    struct feed *f = ctx;
    if (rs->failed) {
        sampler_add_error(f->sampler, rs->t);
        return 0;
    }
    const enum snap_bool *on_cpu = NULL;
    const struct sample *smp = recconv_compact(f->conv, rs, &on_cpu, &f->err);
    if (smp == NULL) {
        return -1;
    }
    sampler_add_sample(f->sampler, smp, on_cpu, rs->t);
    return 0;
}

static int count_sample(void *ctx, const struct rec_sample *rs)
{
    (*(uint64_t *)ctx)++;
    return 0;
}

/* The Functions view over [T - WINDOW, T]: its statistics' samples and functions in *SAMPLES
 * and *FUNCTIONS. */
static int functions_at(struct recording *r, struct recconv *conv, double t, double window,
                        uint64_t *samples, size_t *functions, struct pt_error *err)
{
    struct sampler_opts opts = {.rate_hz = recording_header(r)->rate_hz, .window_s = window};
    struct feed f = {sampler_new(NULL, NULL, &opts, err), conv, {0}};
    if (f.sampler == NULL) {
        return -1;
    }
    int rc = recording_scan(r, t - window, t, feed_sample, &f, err);
    if (rc != 0) {
        if (f.err.code != PT_OK) {
            *err = f.err;
        }
        sampler_free(f.sampler);
        return -1;
    }
    struct sampler_stats *st = sampler_stats(f.sampler, t);
    sampler_free(f.sampler);
    if (st == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the statistics");
    }
    *samples = st->samples;
    *functions = st->n_functions;
    sampler_stats_free(st);
    return 0;
}

int main(int argc, char **argv)
{
    int count = argc == 4 ? atoi(argv[2]) : 20;
    double window = argc == 4 ? atof(argv[3]) : 10;
    if ((argc != 2 && argc != 4) || count < 1 || count > MAX_COUNT || !(window > 0)) {
        fprintf(stderr, "usage: replay-cost FILE [COUNT WINDOW_S]\n");
        return 2;
    }
    static double seek_ms[MAX_COUNT], view_ms[MAX_COUNT], read_ms[MAX_COUNT];
    static double view_samples[MAX_COUNT];
    struct pt_error err = {0};
    struct recconv *conv = NULL;
    int status = 1;
    double t0 = now();
    struct recording *r = recording_open(argv[1], &err);
    double open_ms = (now() - t0) * 1e3;
    if (r == NULL || (conv = recconv_new(&err)) == NULL) {
        goto out;
    }
    double length = recording_duration(r);
    uint64_t rng = 88172645463325252ULL;
    size_t functions = 0;
    for (int i = 0; i < count; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        double u = (double)(rng >> 11) / (double)(1ULL << 53);
        double t = length > window ? window + u * (length - window) : u * length;
        double a = now();
        struct snapshot *s = recording_snapshot_at(r, t, &err);
        double b = now();
        if (s == NULL) {
            pt_error_prefix(&err, "at %.3f s", t);
            goto out;
        }
        snapshot_free(s);
        uint64_t samples = 0;
        double c = now();
        if (functions_at(r, conv, t, window, &samples, &functions, &err) < 0) {
            pt_error_prefix(&err, "window ending at %.3f s", t);
            goto out;
        }
        double d = now();
        uint64_t read = 0;
        if (recording_scan(r, t - window, t, count_sample, &read, &err) < 0) {
            pt_error_prefix(&err, "window ending at %.3f s", t);
            goto out;
        }
        seek_ms[i] = (b - a) * 1e3;
        view_ms[i] = (d - c) * 1e3;
        read_ms[i] = (now() - d) * 1e3;
        view_samples[i] = (double)samples;
    }
    double seek_max, view_max, samples_max;
    double seek_med = median(seek_ms, (size_t)count, &seek_max);
    double view_med = median(view_ms, (size_t)count, &view_max);
    double read_max, read_med = median(read_ms, (size_t)count, &read_max);
    double samples_med = median(view_samples, (size_t)count, &samples_max);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"seconds\": %.3f, \"open_ms\": %.3f, \"seek_ms\": [%.3f, %.3f], "
           "\"functions_ms\": [%.3f, %.3f], \"read_ms\": [%.3f, %.3f], \"window_samples\": %.0f, "
           "\"functions\": %zu, \"maxrss_kib\": %ld}\n",
           length, open_ms, seek_med, seek_max, view_med, view_max, read_med, read_max, samples_med,
           functions, ru.ru_maxrss);
    status = 0;
out:
    if (status != 0) {
        fprintf(stderr, "replay-cost: %s: %s\n", argv[1], err.msg);
    }
    recconv_free(conv);
    recording_close(r);
    return status;
}
