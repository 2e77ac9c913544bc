/* gc: the garbage collector's state of an interpreter: its generations (count, threshold,
 * collections, collected, uncollectable), whether a collection runs now and, where the target
 * keeps them (3.15+), its records of recent collections. */
#ifndef PYTOP_CORE_GC_H
#define PYTOP_CORE_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/layout/gen.h"

struct proc;
struct py_layout;
struct snapshot;
struct snap_gc;
struct pt_error;

/* The most bytes of a GC state struct pytop reads. */
enum { GC_STATE_MAX = 1024, GC_STATS_MAX = 4096, GC_COUNTS_MAX = 256 };

/* One target's GC reader: which of its version's build families matched. */
struct gc_reader;

/* L must outlive the reader. NULL on out of memory. */
struct gc_reader *gc_reader_new(struct proc *p, const struct py_layout *L);
void gc_reader_free(struct gc_reader *g);

/* Bytes of the GC state to read at its address (the largest variant); 0 when pytop has no GC
 * layout for the target's version. */
size_t gc_state_len(const struct gc_reader *g);

/* Where a GC state keeps its generations' collection counts (before 3.15, an array in the
 * state): *LEN (at most GC_COUNTS_MAX) bytes at *OFF from the state's address. False when G is
 * NULL, the counts are elsewhere (3.15), or the version's build families disagree and none
 * has fitted the target yet. */
bool gc_collections_span(const struct gc_reader *g, uint64_t *off, size_t *len);

/* The total of the collection counts in BUF[0..LEN), read at that span: it grows by one in
 * each collection, before the collection ends. -1 when unreadable. */
int64_t gc_collections_sum(const struct gc_reader *g, const uint8_t *buf, size_t len);

/* Where the collection records of the GC state at STATE were last time (3.15+), so that the
 * caller can read *LEN bytes at *ADDR into *BUF in the same batch as the state, and then call
 * gc_records_prefetched(). False when there is nothing to read ahead. */
bool gc_records_hint(struct gc_reader *g, uint64_t state, uint64_t *addr, void **buf,
                     size_t *len);
void gc_records_prefetched(struct gc_reader *g);

/* Fills OUT from the GC state BUF[0..LEN) that was read at ADDR: picks the build family whose
 * invariants hold (generation0 points at the first generation's list head, every list head is
 * linked, totals are not negative), reads the collection records the state points to (3.15+;
 * one more read unless read ahead), and allocates in S. When no family fits, OUT->present
 * stays false and a warning in S says why. Returns -1 only on out of memory (PT_E_NOMEM in ERR). */
int gc_parse(struct gc_reader *g, struct snapshot *s, int64_t interp_id, uint64_t addr,
             const uint8_t *buf, size_t len, struct snap_gc *out, struct pt_error *err);

/* The same for one given variant V, with the collection records' bytes STATS[0..STATS_LEN)
 * already read (NULL when none); for tests and fuzzing. Returns 1 when V fits (OUT filled),
 * 0 when it does not, -1 on out of memory. */
int gc_parse_variant(const struct layout_gc_gen *v, struct snapshot *s, uint64_t addr,
                     const uint8_t *buf, size_t len, const uint8_t *stats, size_t stats_len,
                     struct snap_gc *out);

#endif
