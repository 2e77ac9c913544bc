/* export-cost: what an export of a long recording costs: SECONDS at RATE_HZ against THREADS
 * threads (default 60 s, 1 kHz, 50 threads: 3M thread-samples) of synthetic stacks, 30 frames
 * deep, whose inner frames change every few samples, through one format into FILE.
 * Usage: export-cost FORMAT FILE [SECONDS RATE_HZ THREADS] */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/export/export.h"
#include "core/util/error.h"

enum { DEPTH = 30, N_CODES = 400 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 6) {
        fprintf(stderr, "usage: export-cost FORMAT FILE [SECONDS RATE_HZ THREADS]\n");
        return 2;
    }
    int format = export_format_parse(argv[1]);
    double seconds = argc == 6 ? atof(argv[3]) : 60;
    double rate = argc == 6 ? atof(argv[4]) : 1000;
    size_t n_threads = argc == 6 ? (size_t)atol(argv[5]) : 50;
    if (format < 0 || seconds <= 0 || rate <= 0 || n_threads == 0 || n_threads > 10000) {
        fprintf(stderr, "export-cost: bad arguments\n");
        return 2;
    }
    static struct rec_code codes[N_CODES];
    static char names[N_CODES][32];
    for (size_t i = 0; i < N_CODES; i++) {
        snprintf(names[i], sizeof names[i], "module.function_%zu", i);
        codes[i] = (struct rec_code){(uint32_t)i + 1,
                                     {names[i], strlen(names[i])},
                                     {names[i], strlen(names[i])},
                                     {"/srv/app/module.py", 18},
                                     (int)i * 10};
    }
    struct rec_frame *frames = calloc(n_threads * DEPTH, sizeof *frames);
    struct rec_thread *threads = calloc(n_threads, sizeof *threads);
    if (frames == NULL || threads == NULL) {
        return 1;
    }
    struct export_opts opts = {.from = 0, .to = INFINITY, .period_s = 1 / rate};
    struct pt_error err = {0};
    struct exporter *x = exporter_new(format, &opts, &err);
    FILE *out = fopen(argv[2], "wb");
    if (x == NULL || out == NULL) {
        fprintf(stderr, "export-cost: %s\n", x == NULL ? err.msg : argv[2]);
        return 1;
    }
    size_t n_samples = (size_t)(seconds * rate);
    uint64_t rng = 88172645463325252ULL;
    double t0 = now();
    for (size_t s = 0; s < n_samples; s++) {
        for (size_t k = 0; k < n_threads; k++) {
            struct rec_frame *f = &frames[k * DEPTH];
            if (s == 0) {
                for (size_t d = 0; d < DEPTH; d++) {
                    f[d] = (struct rec_frame){&codes[(k * 7 + d) % N_CODES], (int)d + 1, 0,
                                              SNAP_FRAME_PYTHON, 0};
                }
            }
            /* The outer 25 frames are the thread's own; the inner 5 are one of 20 variants
             * that change about one sample in four: a few hundred distinct stacks a thread. */
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if (s == 0 || rng % 4 == 0) {
                size_t v = (rng >> 8) % 20;
                for (size_t d = 0; d < 5; d++) {
                    f[d].code = &codes[(v * 5 + d) % 40];
                    f[d].line = (int)((v * 7 + d * 3) % 50);
                }
            }
            threads[k] = (struct rec_thread){.tid = (pid_t)(1000 + k),
                                             .name = {"worker", 6},
                                             .gil = SNAP_YES,
                                             .on_cpu = SNAP_YES,
                                             .frames = f,
                                             .n_frames = DEPTH};
        }
        struct rec_sample sample = {
            .t = (double)s / rate, .threads = threads, .n_threads = n_threads};
        if (exporter_add(x, &sample, &err) < 0) {
            fprintf(stderr, "export-cost: %s\n", err.msg);
            return 1;
        }
    }
    double t1 = now();
    if (exporter_finish(x, out, &err) < 0) {
        fprintf(stderr, "export-cost: %s\n", err.msg);
        return 1;
    }
    fclose(out);
    double t2 = now();
    printf("%s: %zu thread-samples: add %.3f s, write %.3f s, total %.3f s\n", argv[1],
           n_samples * n_threads, t1 - t0, t2 - t1, t2 - t0);
    exporter_free(x);
    free(frames);
    free(threads);
    return 0;
}
