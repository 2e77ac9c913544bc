/* sampler: snapshots taken at a rate, and what they add up to over a sliding window. */
#ifndef PYTOP_CORE_SAMPLER_H
#define PYTOP_CORE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/snapshot.h"

struct proc;
struct runtime;
struct pt_error;

struct sampler_opts {
    double rate_hz;      /* samples per second; 0 = as fast as possible */
    double window_s;     /* how far back the statistics reach */
    bool blocking;       /* pause the target while each sample is read */
};

/* One thread over the window. Shares are of that thread's own samples (0-100). */
struct sampler_thread {
    pid_t tid;
    uint64_t thread_id;
    struct snap_str name;
    uint64_t samples;    /* samples in which the thread was seen */
    double gil_pct;
    double cpu_pct;
    double gc_pct;
};

/* One function over the window. OWN counts thread-samples whose innermost frame it was, TOTAL
 * those in which it was anywhere on the stack (counted once per stack even when recursive). */
struct sampler_function {
    struct snap_str function;
    struct snap_str file;
    int first_line;      /* the function's first line; -1 unknown */
    uint64_t own;
    uint64_t total;
};

/* The statistics at one moment: a self-contained copy the caller owns (strings included). */
struct sampler_stats {
    double rate_hz;          /* requested; 0 = max */
    double achieved_hz;      /* samples per second actually taken over the window */
    uint64_t samples;        /* successful samples in the window */
    uint64_t errors;         /* failed samples in the window */
    double window_s;         /* the span the window really covers (shorter at start) */
    uint64_t thread_samples; /* sum over samples of the threads seen: the base of own/total % */
    struct sampler_thread *threads;
    size_t n_threads;
    struct sampler_function *functions;  /* sorted by own, then total, descending */
    size_t n_functions;
    uint64_t gc_samples;     /* samples in which some thread was in GC */
    struct snapshot *store;  /* owns the arrays and strings above */
};

struct sampler;

/* Prepares to sample P (whose runtime RT was located; both outlive the sampler).
 * Errors: PT_E_NOMEM. */
struct sampler *sampler_new(struct proc *p, const struct runtime *rt,
                            const struct sampler_opts *opts, struct pt_error *err);
void sampler_free(struct sampler *s);

/* Takes one sample now and adds it to the window; a failed sample is counted as an error and
 * its error returned (-1). NOW is a monotonic time in seconds. */
int sampler_sample(struct sampler *s, double now, struct pt_error *err);

/* Adds an already-taken snapshot to the window (for tests and replays); the sampler takes
 * ownership of SNAP. */
void sampler_add(struct sampler *s, struct snapshot *snap, double now);

/* Counts one failed sample at NOW. */
void sampler_add_error(struct sampler *s, double now);

/* The most recent successful snapshot, or NULL; owned by the sampler, valid until the next
 * sampler_sample()/sampler_add(). */
const struct snapshot *sampler_latest(const struct sampler *s);

/* A copy of the statistics over the window ending at NOW, for the caller to keep (free with
 * sampler_stats_free). NULL on out of memory. */
struct sampler_stats *sampler_stats(const struct sampler *s, double now);
void sampler_stats_free(struct sampler_stats *st);

/* Forgets everything counted so far (the `r` key). */
void sampler_reset(struct sampler *s);

/* Monotonic seconds, the clock the sampler's NOW arguments use. */
double sampler_now(void);

#endif
