/* cpyrec: reads the binary recordings of CPython 3.15's sampling profiler
 * (python -m profiling.sampling ... --binary), plain or zstd-compressed, into rec_samples. */
#ifndef PYTOP_CORE_CPYREC_H
#define PYTOP_CORE_CPYREC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/record/recsample.h"

struct pt_error;
struct cpyrec;

/* True when HEAD (the file's first N bytes) starts like CPython's binary profile format. */
bool cpyrec_sniff(const void *head, size_t n);

/* Opens PATH; reads the header, the footer, the statistics trailer if any, and the string and
 * frame tables (at most CPYREC_TABLE_BYTES). The sample data is not read until a scan.
 * Errors: PT_E_IO, PT_E_FORMAT (with a one-line reason), PT_E_NOMEM. */
struct cpyrec *cpyrec_open(const char *path, struct pt_error *err);
/* The same over LEN bytes at BUF, which must stay valid until cpyrec_close(). */
struct cpyrec *cpyrec_open_mem(const void *buf, size_t len, struct pt_error *err);
void cpyrec_close(struct cpyrec *r);

/* Format "cpython N" (N the file's format version). Valid until cpyrec_close(). */
const struct rec_header *cpyrec_header(const struct cpyrec *r);
/* Seconds from first to last sample as far as known: the duration the profiler measured (its
 * statistics trailer), else the span the last complete scan saw, else 0. */
double cpyrec_duration(const struct cpyrec *r);

/* Calls FN for every sample with FROM <= t <= TO, in time order: the threads sampled at one
 * time come together in one rec_sample (CPython writes a record per thread). The writer holds
 * a run of one thread's identical stacks back until the run ends, so the reader holds samples
 * back too, until no later record can come before them, at most CPYREC_REORDER thread-samples
 * (cpyrec_int.h); past that the earliest are delivered anyway, and a run held back longer (a
 * thread that stopped being sampled keeps its last run until the file's end) comes late, out
 * of order. The sample data is streamed (zstd through ZSTD_decompressStream): memory does not
 * grow with the file. A file cut short or corrupt part-way: the samples before the damage are
 * delivered, then -1 with PT_E_FORMAT saying where (cpyrec_damage() keeps the sentence).
 * Returns 0, FN's non-zero, or -1 (PT_E_FORMAT, PT_E_IO, PT_E_NOMEM). */
int cpyrec_scan(struct cpyrec *r, double from, double to, rec_sample_fn fn, void *ctx,
                struct pt_error *err);
/* What a rec_thread gets from the format: tid is the thread id the profiler recorded (the
 * kernel's on Linux; a larger one goes to thread_id), interp_id, main, gil, gil_requested and
 * has_exception from the status byte, on_cpu unless the status says it was not determined
 * (wall mode), in_gc from <GC> frames when the file says they were captured. The format has no
 * thread names, first lines, instruction offsets (it may hold opcodes and columns, which are
 * not handed on), pid, command line or wall-clock start. Its function names are qualified
 * names (rec_code.function; name stays unknown), one rec_code per (function, file). */

/* The last scan's damage, "" when none found. Valid until the next scan or cpyrec_close(). */
const char *cpyrec_damage(const struct cpyrec *r);

#endif
