/* corowalk: a coroutine's stack down its await chain, read from the coroutine objects of
 * Python 3.8+ (frame objects up to 3.10, embedded interpreter frames from 3.11). */
#ifndef PYTOP_CORE_COROWALK_H
#define PYTOP_CORE_COROWALK_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct layout_asyncio;
struct taskcommon;
struct snapshot;
struct snap_task;
struct pt_error;

struct corowalk;

/* P, L, A and COMMON must outlive it. Errors: PT_E_NOMEM. */
struct corowalk *corowalk_new(struct proc *p, const struct py_layout *L,
                              const struct layout_asyncio *A, struct taskcommon *common,
                              struct pt_error *err);
void corowalk_free(struct corowalk *w);

/* Names the coroutines CORO[0..N) that corowalk_stack() will be asked for by index, so that
 * their first objects are read in batches ahead; CORO must stay valid until the next call.
 * N 0 forgets them. Also starts the count of coroutines followed, at most LIMIT_CORO_LEVELS
 * until the next call. */
void corowalk_prefetch(struct corowalk *w, const uint64_t *coros, size_t n);

/* Sets ST's coroutine stack (frames, n_frames, frames_truncated), innermost first, allocated in
 * S: coroutine CORO (0: none; index I of the prefetched ones, or SIZE_MAX) and each coroutine it
 * awaits, as _PyGen_yf finds it, while it is of the same type (a coroutine awaiting a coroutine,
 * a generator delegating to a generator), at most LIMIT_CORO_DEPTH deep; a chain that loops or
 * goes past a limit is marked truncated. Returns 0, or -1 when memory ran out. */
int corowalk_stack(struct corowalk *w, struct snapshot *s, size_t i, uint64_t coro,
                   struct snap_task *st);

#endif
