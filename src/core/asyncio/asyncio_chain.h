/* asyncio_chain: stage 3 of the asyncio pipeline, the one walker of coroutine chains: a task's
 * coroutine stack down its await chain, for every version pytop reads tasks of (frame objects up
 * to 3.10, embedded interpreter frames from 3.11), many chains side by side in batched reads. */
#ifndef PYTOP_CORE_ASYNCIO_CHAIN_H
#define PYTOP_CORE_ASYNCIO_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct layout_asyncio;
struct asyncio_common;
struct snapshot;
struct snap_frame;
struct pt_error;

struct asyncio_chain;

/* A walker for the target of L: its coroutines as A (the version's asyncio table) describes
 * them, or, A NULL, as L's debug offsets do (3.14+, embedded frames only). P, L and COMMON must
 * outlive it; A is copied. Errors: PT_E_BADLAYOUT (the layout cannot describe a chain),
 * PT_E_NOMEM. */
struct asyncio_chain *asyncio_chain_new(struct proc *p, const struct py_layout *L,
                                        const struct layout_asyncio *A,
                                        struct asyncio_common *common, struct pt_error *err);
void asyncio_chain_free(struct asyncio_chain *c);

/* Starts a count of coroutines followed, all chains together: at most LIMIT_CORO_LEVELS until
 * the next call. Stacks from here on are allocated in S. */
void asyncio_chain_begin(struct asyncio_chain *c, struct snapshot *s);

/* How many chains one asyncio_chain_walk() takes at most. */
size_t asyncio_chain_batch(const struct asyncio_chain *c);

/* Where the first coroutine of chain J (J < asyncio_chain_batch()) may be read ahead, and how
 * many bytes: a caller that reads it with other things sets the job's HAVE_HEAD. */
uint8_t *asyncio_chain_head(struct asyncio_chain *c, size_t j);
size_t asyncio_chain_head_len(const struct asyncio_chain *c);

/* One chain to walk. */
struct asyncio_chain_job {
    uint64_t coro;  /* the task's coroutine; 0: none */
    bool build;     /* false: left alone (its stack is known already) */
    bool have_head; /* its coroutine's bytes are at asyncio_chain_head() already */
    /* set by the walk where BUILD: the coroutine frames, innermost first, in the snapshot
     * (shared by the chains with the same stack since asyncio_chain_begin()) */
    const struct snap_frame *frames;
    size_t n_frames;
    bool truncated;
};

/* Walks JOBS[0..M) (M <= asyncio_chain_batch()) side by side, as _PyGen_yf finds what a
 * coroutine awaits: coroutine CORO and each coroutine it awaits while that is of the same type
 * (a coroutine awaiting a coroutine, a generator delegating to a generator), at most
 * LIMIT_CORO_DEPTH deep. Each level costs a few batched reads for all of them. A chain that
 * loops (Brent's check), goes past a limit or whose coroutine cannot be read is cut and marked
 * truncated. Returns 0, or -1 when memory ran out. */
int asyncio_chain_walk(struct asyncio_chain *c, struct asyncio_chain_job *jobs, size_t m);

/* The same for one chain, through a slot of its own: it may run while the results of a batch
 * are still in use (their first coroutines' bytes are not overwritten). */
int asyncio_chain_walk_one(struct asyncio_chain *c, struct asyncio_chain_job *job);

#endif
