/* frames: the interpreter-frame chains of a set of threads, copied with as few reads as possible. */
#ifndef PYTOP_CORE_FRAMES_H
#define PYTOP_CORE_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"

struct proc;
struct py_layout;

/* One Python frame of a chain: its code object and instruction pointer, not yet decoded. */
struct frames_raw {
    uint64_t addr;            /* the frame's own address */
    uint64_t code_addr;
    uint64_t instr_ptr;
};

/* A copy of the used part of one data-stack chunk. */
struct frames_chunk {
    uint64_t addr;
    uint8_t *data;
    size_t len;
};

/* One thread's chain. The caller fills the inputs (zero the rest); frames_walk() fills the
 * outputs; frames_release() frees what it allocated. */
struct frames_thread {
    /* inputs, from the thread state */
    uint64_t current_frame;
    uint64_t chunk_addr;      /* newest data-stack chunk; 0 when unknown */
    uint64_t base_frame;      /* the chain's sentinel frame, not read; 0 when unknown */
    const uint64_t *hint;     /* frames read one by one last time, in chain order (a guess) */
    size_t n_hint;
    /* outputs: Python frames newest first; shims skipped */
    struct frames_raw *frames;
    size_t n_frames;
    bool truncated;           /* deeper than LIMIT_FRAMES */
    bool failed;              /* a frame could not be read; ERROR says why */
    char error[160];
    uint64_t *read_addrs;     /* frames read outside the chunks this time: next time's hint */
    size_t n_read;
    /* private */
    struct frames_chunk chunks[LIMIT_CHUNKS + 1];
    size_t n_chunks;
    uint64_t next_older;
    uint64_t pending;
    size_t cap;
    uint8_t *pref;            /* the hinted frames' headers, read in one batch */
    size_t n_pref;
    size_t pref_at;
    bool pref_failed;
    size_t steps;
    bool done;
};

enum { FRAMES_HINT_MAX = 1024 }; /* frames remembered per thread for the next walk */

/* Walks the chains of threads TS[0..N) side by side: the used parts of their newest chunks are
 * copied in one system call, the frames a thread's hint names (those read one by one last
 * time: frame objects before 3.11, C-stack shims, generator frames) in one more, and each
 * round of frames still missing (a chain that changed) in one more. */
void frames_walk(struct proc *p, const struct py_layout *L, struct frames_thread *ts, size_t n);

void frames_release(struct frames_thread *t);

#endif
