/* unwind_ids: who each thread state is: its kernel thread id where the state holds none (before
 * 3.11, through pthreadtid), and which states have not been taken over by their thread yet (they
 * share the ids of the thread that made them). */
#include "config.h"

#include "core/walk/unwind_threads.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/target/pthreadtid.h"

/* Before 3.11 thread states hold no kernel thread id; pthreadtid finds it. */
void unwind_threads_read_tids(struct unwind *u, struct thread_ctx *ts, size_t n,
                              const struct interp_fields *in)
{
    if (u->tids == NULL || n == 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        u->idents[i] = ts[i].thread_id;
        /* Read ahead by the head batch when this is still the thread it was read for. */
        bool pre = ts[i].tid_pre && ts[i].thread_id == ts[i].last_ident;
        u->tid_pre[i] = pre ? ts[i].tid_guess : 0;
        ts[i].tid_pre = false;
        ts[i].last_ident = ts[i].thread_id;
    }
    pthreadtid_fill(u->tids, u->proc, in->main_thread_ident, u->idents, u->tid_pre, u->tid_out,
                    n);
    for (size_t i = 0; i < n; i++) {
        ts[i].native_id = (uint64_t)u->tid_out[i];
    }
}

/* Adds KEY (not 0) to the open-addressed set SET of MASK + 1 slots; false when it was there. */
static bool id_insert(uint64_t *set, size_t mask, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
    while (set[i] != 0) {
        if (set[i] == key) {
            return false;
        }
        i = (i + 1) & mask;
    }
    set[i] = key;
    return true;
}

/* Tids are tagged apart from idents (pthread addresses, below 2^63 in user space). */
static const uint64_t TID_KEY = 1ULL << 63;

void unwind_threads_unshare(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    if (n < 2) {
        return;
    }
    /* Room for the 2n keys, at least one slot always free: the greatest power of two not
     * above 4n (<= 4 * CAP_TS, the room there is). */
    size_t mask = 1;
    while (mask * 2 <= 4 * n) {
        mask *= 2;
    }
    mask -= 1;
    memset(u->id_seen, 0, (mask + 1) * sizeof *u->id_seen);
    /* New thread states are put at the head of the list: the oldest comes last. */
    for (size_t i = n; i-- > 0;) {
        struct thread_ctx *t = &ts[i];
        if (t->thread_id != 0 && !id_insert(u->id_seen, mask, t->thread_id)) {
            t->thread_id = 0;
            t->native_id = 0;
        }
        if (t->native_id != 0 && !id_insert(u->id_seen, mask, t->native_id | TID_KEY)) {
            t->native_id = 0;
        }
    }
}
