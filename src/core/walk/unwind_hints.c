/* unwind_hints: what one walk tells the next: the frames a thread's chain was read through one
 * by one, to be read in one batch next time. */
#include "config.h"

#include "core/walk/unwind_threads.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/walk/frames.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"

/* Hints stay in the order the walk took its threads, which the next walk takes again: a
 * lookup tries the hint at the place the thread had (every thread leaves one), and only when
 * that misses (a thread came or went) searches an index by thread state, made then, once a
 * walk. A sort of every walk's hints was a fifth of a 1 000-thread sample. */

static int cmp_index(const void *a, const void *b)
{
    const struct hint_key *x = a;
    const struct hint_key *y = b;
    return x->tstate < y->tstate ? -1 : x->tstate > y->tstate;
}

/* The hints this walk gathered become the next one's (the arrays swap; buffers stay). */
void unwind_threads_commit_hints(struct unwind *u)
{
    struct chain_hint *t = u->hints;
    size_t cap = u->cap_hints;
    u->hints = u->next_hints;
    u->cap_hints = u->cap_next_hints;
    u->n_hints = u->n_next_hints;
    u->next_hints = t;
    u->cap_next_hints = cap;
    u->n_next_hints = 0;
    u->hint_indexed = false;
}

/* Makes u->hint_index: the hints' positions by thread state. False on out of memory. */
static bool index_hints(struct unwind *u)
{
    if (u->cap_hint_index < u->n_hints) {
        struct hint_key *fresh = realloc(u->hint_index, u->n_hints * sizeof *fresh);
        if (fresh == NULL) {
            return false;
        }
        u->hint_index = fresh;
        u->cap_hint_index = u->n_hints;
    }
    for (size_t i = 0; i < u->n_hints; i++) {
        u->hint_index[i] = (struct hint_key){u->hints[i].tstate, (uint32_t)i};
    }
    qsort(u->hint_index, u->n_hints, sizeof *u->hint_index, cmp_index);
    u->hint_indexed = true;
    return true;
}

const struct chain_hint *unwind_threads_hint(struct unwind *u, uint64_t tstate, size_t at)
{
    if (at < u->n_hints && u->hints[at].tstate == tstate) {
        return &u->hints[at];
    }
    if (u->n_hints == 0 || (!u->hint_indexed && !index_hints(u))) {
        return NULL;
    }
    struct hint_key key = {tstate, 0};
    const struct hint_key *k =
        bsearch(&key, u->hint_index, u->n_hints, sizeof *u->hint_index, cmp_index);
    return k != NULL ? &u->hints[k->at] : NULL;
}

/* Hands each thread the frames its walk read one by one last time. */
void unwind_threads_give_hints(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n && u->n_hints > 0; i++) {
        const struct chain_hint *h = unwind_threads_hint(u, ts[i].addr, i);
        if (h != NULL) {
            ts[i].fr.hint = h->addrs;
            ts[i].fr.n_hint = h->n;
        }
    }
}

/* Keeps this walk's one-by-one reads as the next walk's hints (copied into kept buffers). */
void unwind_threads_keep_hints(struct unwind *u, const struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n && u->n_next_hints < LIMIT_THREADS; i++) {
        const struct frames_thread *fr = &ts[i].fr;
        /* A thread that read nothing one by one has a hint too, an empty one: the next walk's
         * lookups then meet the hints in the order they ask for them. */
        /* The arrays grow with the threads that need hints (zeroed: no buffers yet). */
        if (u->n_next_hints == u->cap_next_hints) {
            size_t ncap = u->cap_next_hints ? u->cap_next_hints * 2 : 16;
            ncap = ncap < LIMIT_THREADS ? ncap : LIMIT_THREADS;
            struct chain_hint *fresh = realloc(u->next_hints, ncap * sizeof *fresh);
            if (fresh == NULL) {
                return;
            }
            memset(fresh + u->cap_next_hints, 0, (ncap - u->cap_next_hints) * sizeof *fresh);
            u->next_hints = fresh;
            u->cap_next_hints = ncap;
        }
        struct chain_hint *h = &u->next_hints[u->n_next_hints];
        size_t want = fr->n_read < FRAMES_HINT_MAX ? fr->n_read : FRAMES_HINT_MAX;
        if (want > 0 && h->cap < want) {
            uint64_t *fresh = realloc(h->addrs, want * sizeof *fresh);
            if (fresh == NULL) {
                return;
            }
            h->addrs = fresh;
            h->cap = want;
        }
        h->tstate = ts[i].addr;
        h->n = want;
        if (want > 0) {
            memcpy(h->addrs, fr->read_addrs, want * sizeof *h->addrs);
        }
        u->n_next_hints++;
    }
}

void unwind_threads_free_hints(struct chain_hint *h, size_t cap)
{
    for (size_t i = 0; h != NULL && i < cap; i++) {
        free(h[i].addrs);
    }
    free(h);
}
