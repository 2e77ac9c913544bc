/* sampler_fixture: the samplers, synthetic snapshots and code entries of the sampler's tests. */
#ifndef PYTOP_TESTS_UNIT_SAMPLER_FIXTURE_H
#define PYTOP_TESTS_UNIT_SAMPLER_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/pyobj/code.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"

extern const char *const FILE_NAME;

/* Without libm: the tests compare with what the sampler computes, for positive times. */
bool near(double a, double b);
int64_t bucket_of(double t, double width);
struct snap_str str(const char *c);
struct sampler *new_sampler(double window_s);
/* A snapshot of one interpreter holding N_THREADS idle threads without frames: thread K has
 * tid 100 + K and thread_id 1000 + K. */
struct snapshot *snap_threads(size_t n_threads);
struct snap_thread *thread_of(struct snapshot *s, size_t k);
/* Gives thread T the stack FUNCTIONS[0..N) (innermost first), all in FILE_NAME; a function's
 * first line is its name's first letter, so equal names are one function. */
void set_stack(struct snapshot *s, struct snap_thread *t, const char *const *functions, size_t n);
const struct sampler_function *find_function(const struct sampler_stats *st, const char *name);
/* A code cache entry of QUALNAME (first line FIRST_LINE, in FILE_NAME, at 0x1000 * SERIAL),
 * as compact samples name their frames; no line table. */
struct code_info code_entry(uint64_t serial, const char *qualname, int first_line);

#endif
