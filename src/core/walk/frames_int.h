/* frames_int: what frames.c (the walk along the chains) and frames_start.c (where each walk
 * starts, and what it reads ahead) share. Not for the rest of the core: it sees frames.h. */
#ifndef PYTOP_CORE_WALK_FRAMES_INT_H
#define PYTOP_CORE_WALK_FRAMES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/target/proc.h"
#include "core/walk/frames.h"

struct py_layout;

/* A data-stack chunk starts with previous, size and top (Include/cpython/pystate.h); an older
 * chunk's top counts the pointer-sized slots in use when the next chunk was pushed. Chunks are
 * at least 16 KiB (_PY_DATA_STACK_CHUNK_SIZE), so that much can be read from one at once. */
enum {
    CHUNK_PREVIOUS_AT = 0,
    CHUNK_SIZE_AT = 8,
    CHUNK_TOP_AT = 16,
    CHUNK_HEADER = 24,
    CHUNK_MIN_SIZE = 16 * 1024,
};

/* Clears T's outputs and inputs, keeping its buffers. */
void frames_clear_walk(struct frames_thread *t);
/* Reads for a walk: with NOW from the target itself, else possibly from the read-ahead copy. */
int frames_read_regions(struct proc *p, bool now, const struct proc_iov *iov, size_t n);
int frames_read_one(struct proc *p, bool now, uint64_t addr, void *dst, size_t len);
/* The buffer of T's next chunk, at least LEN bytes; NULL on out of memory. */
uint8_t *frames_chunk_buffer(struct frames_thread *t, size_t len);
/* The span of the newest chunk that holds frames: from its start to the end of the newest
 * frame. */
size_t frames_newest_span(const struct py_layout *L, const struct frames_thread *t);
/* The chunk this walk copied that starts at ADDR, or NULL. */
const struct frames_chunk *frames_copied(const struct frames_thread *t, uint64_t addr);
/* The region a frame read on its own takes: its header and the PRE bytes before it. */
struct proc_iov frames_frame_region(const struct py_layout *L, uint64_t addr, size_t pre,
                                    uint8_t *buf);

/* frames_start.c. Reads, in one batch for all of TS[0..N), where each chain starts: the used
 * part of each newest chunk, the older chunks the last walk copied, the frames the hints name. */
void frames_read_starts(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                        size_t n);
/* Remembers the older chunks this walk copied, for the next walk's start batch. */
void frames_keep_guess(struct frames_thread *t);

#endif
