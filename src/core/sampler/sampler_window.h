/* sampler_window: the sampler's sliding window of per-thread and per-function sample counts. */
#ifndef PYTOP_CORE_SAMPLER_WINDOW_H
#define PYTOP_CORE_SAMPLER_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/sampler/sampler.h"
#include "core/sampler/sampler_table.h"

struct py_layout;
struct sample;
struct sampler_heat_state;
struct snapshot;

/* Counters of whole samples, per bucket and summed over the window. */
struct sampler_window_counts {
    uint64_t samples;
    uint64_t errors;
    uint64_t thread_samples;
    uint64_t gc_samples;         /* some thread was collecting (known or not which) */
    uint64_t gc_unknown_samples; /* a collection ran, and which thread ran it was unknown */
    uint64_t dropped_threads; /* threads left out: a table was full */
    uint64_t dropped_frames;  /* frames left out: a table was full */
};

struct sampler_window_bucket;

/* The window is SAMPLER_BUCKETS buckets of window_s / SAMPLER_BUCKETS seconds each. Fields are
 * read by sampler.c; only sampler_window.c changes them. */
struct sampler_window {
    double width;                          /* seconds per bucket */
    struct sampler_window_bucket *buckets; /* SAMPLER_BUCKETS of them */
    int64_t newest;                        /* number of the newest bucket; INT64_MIN before any */
    double started;                        /* first sample or error since the reset; NAN before */
    double last_now;
    struct sampler_window_counts counts;
    struct sampler_table table; /* the entries' counts are the window's */
    enum sampler_mode mode;     /* which thread-samples count (sampler.h) */
    uint64_t stack_serial;      /* numbers the stacks counted, for recursion */
    struct sampler_heat_state *heat; /* the source heat view's function; NULL: none */
};

/* Sets up an empty window reaching WINDOW_S seconds back (INFINITY: back to the last clear,
 * nothing slides out). Errors: PT_E_NOMEM. */
int sampler_window_init(struct sampler_window *w, double window_s, struct pt_error *err);
void sampler_window_free(struct sampler_window *w);
/* Forgets every count. */
void sampler_window_clear(struct sampler_window *w);
/* Makes the window reach WINDOW_S seconds back from now on (INFINITY: since the last clear).
 * A longer window keeps the counts, re-bucketed: they reach back to the start of the old
 * window's oldest bucket at NOW, and slide out as the new window says (up to one old bucket
 * late); a shorter one forgets every count, as the buckets kept are too coarse to cut. Errors:
 * PT_E_NOMEM (the window is then the new one, emptied). */
int sampler_window_resize(struct sampler_window *w, double window_s, double now,
                          struct pt_error *err);

/* Counts the lines and instructions of the function (FUNCTION, FILE, FIRST_LINE) from NOW on,
 * forgetting any other's (FUNCTION NULL: none). L: the layout of compact samples' code
 * objects (NULL for snapshots only). Errors: PT_E_NOMEM (then none is counted). */
int sampler_window_set_heat(struct sampler_window *w, const char *function, size_t function_len,
                            const char *file, size_t file_len, int first_line,
                            const struct py_layout *L, double now, struct pt_error *err);

/* How long the window at NOW reaches back: to the start of its oldest bucket, or to the first
 * sample since the reset when that came later. */
double sampler_window_span(const struct sampler_window *w, double now);

/* Counts SNAP (which the caller keeps) as a sample at NOW, sliding the window up to NOW. */
void sampler_window_add(struct sampler_window *w, const struct snapshot *snap, double now);
/* Counts the compact sample SMP as a sample at NOW. ON_CPU (NULL: none read) gives, per thread
 * of SMP, whether the kernel had it on a CPU, where its state was read with the sample. */
void sampler_window_add_sample(struct sampler_window *w, const struct sample *smp,
                               const enum snap_bool *on_cpu, double now);
/* Adds NS nanoseconds of CPU time of thread entry TI to the bucket of NOW (an entry no
 * longer in use is ignored). */
void sampler_window_add_cpu(struct sampler_window *w, uint32_t ti, uint64_t ns, double now);
/* Counts a failed sample at NOW. */
void sampler_window_add_error(struct sampler_window *w, double now);

struct sampler_window_thread_counts {
    uint64_t samples;
    uint64_t seen;
    uint64_t gil;
    uint64_t cpu;
    uint64_t cpu_known;
    uint64_t gc;
    uint64_t cpu_ns;
};

struct sampler_window_func_counts {
    uint64_t own;
    uint64_t total;
    uint64_t own_state;
    uint64_t own_on_cpu;
};

/* The window's counts as seen at NOW, by table index: the entries' counts less the buckets
 * NOW has left behind (the window slides only when a sample is added). FUNCS counts every
 * thread, or only the thread with index ONLY when ONE is set (none when ONLY is
 * SAMPLER_TABLE_NONE). */
struct sampler_window_view {
    struct sampler_window_counts counts;
    struct sampler_window_thread_counts *threads; /* table->threads.n of them */
    struct sampler_window_func_counts *funcs;     /* table->funcs.n of them */
    double span;                                  /* seconds the window at NOW covers */
    bool one;
    uint32_t only;
};

/* Fills V (whose ONE and ONLY the caller set). False on out of memory. */
bool sampler_window_view(const struct sampler_window *w, double now, struct sampler_window_view *v);
void sampler_window_view_free(struct sampler_window_view *v);

#endif
