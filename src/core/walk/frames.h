/* frames: the interpreter-frame chains of a set of threads, copied in as few reads as can be. */
#ifndef PYTOP_CORE_FRAMES_H
#define PYTOP_CORE_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util/limits.h"

struct code_info;
struct proc;
struct proc_iov;
struct py_layout;

/* One Python frame of a chain: its code object and instruction pointer, not yet decoded. */
struct frames_raw {
    uint64_t addr;            /* the frame's own address */
    uint64_t code_addr;
    uint64_t instr_ptr;
    struct code_info *code; /* its code-cache entry: NULL from the walk, set by unwind.c */
    uint32_t offset;        /* its bytecode offset (sample.h), set with CODE */
    /* A generator's frame read on its own (3.11+) brings its generator's exception state,
     * the item of the thread's handled-exception chain at addr - exc_state_before_frame. */
    uint64_t exc_value;
    uint64_t exc_previous;
    bool generator; /* owned by a generator or coroutine (embedded in it) */
    bool native_below; /* an entry shim (C code calling into Python) lies between this frame and
                        * its caller, or below it (with the chain going on) when it is the
                        * oldest */
    bool exc_known; /* exc_value and exc_previous were read */
};

/* One frame header as a walk took it, shims included: where it is and what it says. A later
 * copy of the same header is compared with it (unwind_verify.c). */
struct frames_link {
    uint64_t addr;
    uint64_t previous;
    uint64_t code_addr; /* tag bits cleared */
    uint64_t instr_ptr;
    uint64_t owner;
    uint64_t state; /* a frame object's running state (3.8-3.10); 0 elsewhere */
};

/* Takes the fields of the frame header H (L->frame.size bytes) at ADDR into OUT; fields the
 * version lacks are 0. */
void frames_link_parse(const struct py_layout *L, const uint8_t *h, uint64_t addr,
                       struct frames_link *out);

/* The part of a frame header that holds what frames_link_parse() takes: LEN bytes from
 * offset LO. */
void frames_link_span(const struct py_layout *L, uint64_t *lo, size_t *len);

/* Whether two copies of one header say the same, the instruction pointer compared only when
 * WITH_INSTR. */
bool frames_link_same(const struct frames_link *a, const struct frames_link *b, bool with_instr);

/* How many bytes before a frame read on its own are read with it: those of its generator's
 * exception state, where generators embed their frames (3.11+); else 0. */
size_t frames_prefix(const struct py_layout *L);

/* A copy of the used part of one data-stack chunk. DATA holds CAP bytes and is kept from one
 * walk to the next. */
struct frames_chunk {
    uint64_t addr;
    uint8_t *data;
    size_t len;
    size_t cap;
};

/* A span of target memory. */
struct frames_span {
    uint64_t addr;
    size_t len;
};

/* One thread's chain. A zeroed struct is ready; before each walk frames_begin() (or
 * frames_guess() and frames_guessed(), then frames_begin()) clears the last walk's outputs and
 * the caller fills the inputs; frames_walk() fills the outputs. The buffers are kept for the
 * next walk (a steady walk allocates nothing); frames_release() frees them. */
struct frames_thread {
    /* What each walk starts afresh: frames_clear_walk() zeroes everything before FRAMES. */
    /* inputs, from the thread state */
    uint64_t current_frame;
    uint64_t chunk_addr;      /* newest data-stack chunk; 0 when unknown */
    uint64_t base_frame;      /* the chain's sentinel frame, not read; 0 when unknown */
    const uint64_t *hint;     /* frames read one by one last time, in chain order (a guess) */
    size_t n_hint;
    bool keep_links; /* fill LINKS (snapshots verify their stacks with them) */
    /* outputs: Python frames newest first (in FRAMES, below); shims skipped */
    size_t n_frames;
    bool truncated;           /* deeper than LIMIT_FRAMES */
    bool failed;              /* a frame could not be read; ERROR says why */
    bool torn;                /* the chain read is not one the thread can have had (it changed
                               * while read): the walk stopped there; ERROR says why */
    char error[160];
    size_t n_links;           /* in LINKS */
    size_t n_read;            /* in READ_ADDRS */
    size_t n_same;            /* frames taken as the same frame in the same slot of FRAMES as
                               * N_KEPT says the last walk left (see frames_same_as_kept()) */
    /* private */
    size_t n_chunks;          /* in CHUNKS, whose addresses and lengths are this walk's */
    uint64_t next_older;
    uint64_t pending;
    uint64_t pre_tstate;            /* the thread state frames_guess() read ahead for */
    bool pre_read;                  /* the chunks and prefetched headers are already read */
    bool older_planned;             /* ... all the older chunks guessed (room allowed) */
    bool hints_planned;             /* ... all the hinted headers */
    size_t newest_slot;             /* the chunk slot that holds the newest chunk */
    size_t last_chunk;              /* the chunk the last frame was found in */
    size_t n_pref;
    size_t pref_at;
    bool pref_failed;
    size_t steps;
    int last_owner; /* the owner of the last frame taken */
    bool now;       /* this walk reads with proc_read_now() */
    bool done;
    /* Kept from one walk to the next, from here on: the buffers, and what the last walk
     * read. */
    struct frames_raw *frames;
    size_t cap;
    size_t n_kept; /* FRAMES[0..N_KEPT) hold what the last walk took, settled (code and offset
                    * set by the caller, who sets N_KEPT); 0: nothing kept */
    struct frames_link *links; /* with KEEP_LINKS: every header taken, newest first */
    size_t cap_links;
    uint64_t *read_addrs;     /* frames read outside the chunks this time: next time's hint */
    size_t cap_read;
    uint8_t *pref;            /* the hinted frames' headers, read in one batch */
    size_t pref_cap;
    uint8_t *hdr; /* LAYOUT_FRAME_HEADER_MAX bytes: the frame a round reads */
    struct frames_span guess[LIMIT_CHUNKS]; /* older chunks the last walk copied */
    size_t n_guess;
    struct frames_span last_newest; /* the newest chunk's span the last walk read */
    uint64_t last_newest_size;      /* and that chunk's size */
    struct frames_chunk chunks[LIMIT_CHUNKS + 1]; /* buffers kept; addresses, lengths cleared */
};

enum { FRAMES_HINT_MAX = 1024 }; /* frames remembered per thread for the next walk */

/* Walks the chains of threads *TS[0..N) side by side. What a thread's walk starts with and was
 * not read ahead (frames_guess()) is read for all of them in one system call: the used part of
 * its newest chunk, the older chunks its last walk copied, and the frames its hint names (those
 * read one by one last time: frame objects before 3.11, C-stack shims, generator frames); then
 * each round of frames still missing (a chain that changed) costs one more. */
void frames_walk(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                 size_t n);

/* As frames_walk(), but every read is taken from the target itself (proc_read_now()), never
 * from the read-ahead copy: for walking again a stack that changed while it was read. */
void frames_walk_now(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                     size_t n);

/* Read-ahead, so that a steady walk needs no read of its own: adds to IOV[0..ROOM) the regions
 * the next walk of the thread whose state is at TSTATE will probably start with (what its last
 * walk copied, the newest chunk a little longer, and the frames HINT[0..N_HINT) names), to be
 * read in the caller's batch; frames_guessed() then says whether that batch was read. Returns
 * how many regions it added (0: nothing to guess; the thread is then walked as usual). */
size_t frames_guess(const struct py_layout *L, struct frames_thread *t, uint64_t tstate,
                    const uint64_t *hint, size_t n_hint, struct proc_iov *iov, size_t room);
void frames_guessed(struct frames_thread *t, bool ok);

/* Starts T for the walk of the thread state at TSTATE: keeps what frames_guess() read ahead
 * for that thread state, otherwise clears its last walk (keeping its buffers). */
void frames_begin(struct frames_thread *t, uint64_t tstate);

void frames_release(struct frames_thread *t);

/* Leaves T without frames this walk, and nothing kept for the next: a thread whose stack is
 * not read (unwind_set_active_only()). */
void frames_skip(struct frames_thread *t);

/* Whether T's walk, which ended cleanly, took the very frames FRAMES[0..N_KEPT) held before it
 * (address, code object, instruction pointer, owner kind and generator exception state, in
 * order): their CODE and OFFSET are then still the ones the caller gave them. */
bool frames_same_as_kept(const struct frames_thread *t);

#endif
