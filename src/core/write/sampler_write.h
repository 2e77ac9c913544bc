/* sampler_write: a batch document: a snapshot with the sampler's statistics over its window, as
 * JSON or as top(1)'s batch text (sampler_write.c). */
#ifndef PYTOP_CORE_SAMPLER_WRITE_H
#define PYTOP_CORE_SAMPLER_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/sampler/sampler.h"
#include "core/write/snapshot_write.h"

/* Writes SNAP (may be NULL: no snapshot this interval) as one JSON document carrying ST
 * (DESIGN.md, batch mode): a top-level "sampling" object (rate_hz, "max" at --rate max;
 * achieved_hz, samples, errors, window_s, thread_samples, gc_samples), gil_pct, cpu_pct, gc_pct
 * in each thread object (null for a thread ST does not know), "reader" (reads, bytes,
 * failed_reads, code_cache: hits, misses, entries) when ST has it, and a top-level "functions"
 * table in ST's order, whose "line" is the function's first line. "threads_truncated" and
 * "functions_truncated" appear when true. A trailing newline when NEWLINE. Errors: PT_E_IO,
 * PT_E_NOMEM. */
int sampler_write_json(const struct snapshot *snap, const struct sampler_stats *st, FILE *out,
                       bool newline, struct pt_error *err);

/* Writes ST as sampler_write_text() does between its first line and the snapshot: the
 * sampling line ("Samples: 100 in 1.00 s, 99.7/s achieved of 100/s requested, errors: 0
 * (0.0%)"), the last error and an exec when there are, one line per thread with %GIL %CPU %GC,
 * and the TOP_FUNCTIONS functions with the most own samples. Errors: PT_E_IO, PT_E_NOMEM. */
int sampler_write_stats_text(const struct sampler_stats *st, FILE *out, size_t top_functions,
                             struct pt_error *err);

/* Writes ST as top(1)'s batch mode does: a header (time, samples, achieved rate, errors), one
 * line per thread with %GIL %CPU %GC, the TOP_FUNCTIONS functions with the most own samples,
 * then the traceback-like dump of SNAP (may be NULL) with source lines from SRC (may be NULL),
 * and a blank line. Errors: PT_E_IO, PT_E_NOMEM. */
int sampler_write_text(const struct snapshot *snap, const struct sampler_stats *st, FILE *out,
                       const struct snapshot_source *src, size_t top_functions,
                       struct pt_error *err);

#endif
