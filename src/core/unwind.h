/* unwind: walk a target's interpreters, threads and frames into a snapshot. */
#ifndef PYTOP_CORE_UNWIND_H
#define PYTOP_CORE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

struct proc;
struct runtime;
struct snapshot;
struct pt_error;

/* Read statistics of the unwinder, for benchmarks. */
struct unwind_stats {
    uint64_t code_cache_entries;
    uint64_t code_cache_hits;
};

struct unwind;

/* Prepares to walk the target P whose runtime RT was located; both must outlive the unwinder.
 * Errors: PT_E_NOMEM. */
struct unwind *unwind_new(struct proc *p, const struct runtime *rt, struct pt_error *err);
void unwind_free(struct unwind *u);

/* Takes one snapshot of every interpreter, thread and frame. Parts that cannot be read are
 * left unknown with a warning in the snapshot; the call fails only when nothing can be read
 * (PT_E_GONE, PT_E_PERM, PT_E_READ of the runtime itself, PT_E_NOMEM). The caller frees the
 * result with snapshot_free(). */
struct snapshot *unwind_snapshot(struct unwind *u, struct pt_error *err);

struct unwind_stats unwind_get_stats(const struct unwind *u);

/* Whether snapshots also read the asyncio task graph (3.14+ targets with _asyncio loaded;
 * elsewhere "tasks" stays null). Off by default: the stack-only path costs nothing more. */
void unwind_set_tasks(struct unwind *u, bool on);
/* Whether snapshots read the GC's generations and records ("gc"; on by default). Off, "gc" is
 * null, though each thread's in_gc is still known: the sampler's per-sample path. */
void unwind_set_gc(struct unwind *u, bool on);

#endif
