/* sampler_window_int: what sampler_window.c (counting into time buckets) and
 * sampler_window_view.c (reading the window out) share: the buckets. */
#ifndef PYTOP_CORE_SAMPLER_WINDOW_INT_H
#define PYTOP_CORE_SAMPLER_WINDOW_INT_H

#include <stdint.h>

#include "core/sampler/sampler_window.h"

struct thread_delta {
    uint32_t thread;
    uint32_t samples; /* matched the mode */
    uint32_t seen;
    uint32_t gil;
    uint32_t cpu;
    uint32_t cpu_known; /* samples whose CPU state was read */
    uint32_t gc;
    uint64_t cpu_ns;
};

struct pair_delta {
    uint32_t pair;
    uint32_t own;
    uint32_t total;
    uint32_t own_state;  /* own samples whose CPU state was read */
    uint32_t own_on_cpu;
};

struct sampler_window_bucket {
    int64_t number; /* INT64_MIN: holds nothing */
    struct sampler_window_counts c;
    struct thread_delta *threads;
    uint32_t n_threads;
    uint32_t cap_threads;
    struct pair_delta *pairs;
    uint32_t n_pairs;
    uint32_t cap_pairs;
};

/* floor(NOW / width) of W's buckets, clamped far from overflow; not-a-number counts as the
 * distant past. */
int64_t sampler_window_bucket_number(const struct sampler_window *w, double now);

/* A -= B. */
void sampler_window_counts_sub(struct sampler_window_counts *a,
                               const struct sampler_window_counts *b);

#endif
