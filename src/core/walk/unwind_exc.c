/* unwind_exc: whether each thread has an exception, as sys.exc_info() in it would answer:
 * the thread's exception-info chain, through the generators and coroutines it runs. */
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

/* An exception is being raised (current_exception) or handled: sys.exc_info() answers from
 * the newest item of the chain tstate->exc_info -> previous_item holding one (Python/errors.c,
 * _PyErr_GetTopmostException). The chain ends in the thread's own item (exc_state, in TS at
 * ADDR); when a generator runs, it starts in that generator's, and T->exc_item says where
 * for unwind_threads_exc_chains(). */
enum snap_bool unwind_threads_exception(const struct unwind *u, const uint8_t *ts, uint64_t addr,
                                       struct thread_ctx *t)
{
    const struct py_layout *L = u->L;
    uint64_t cur = 0;
    uint64_t top = 0;
    t->exc_item = 0;
    t->own_exc = 0;
    bool know_cur = layout_read_u64(ts, L->thread.size, L->thread.current_exception, &cur);
    bool know_own = layout_read_u64(ts, L->thread.size, L->thread.exc_state_value, &t->own_exc);
    if (t->own_exc == u->rt->none_addr) {
        t->own_exc = 0;
    }
    if (cur != 0) {
        return SNAP_YES;
    }
    if (layout_has(L->thread.exc_state) &&
        layout_read_u64(ts, L->thread.size, L->thread.exc_info, &top) && top != 0 &&
        top != addr + L->thread.exc_state) {
        t->exc_item = top;
        return SNAP_UNKNOWN;
    }
    if (!know_cur && !know_own) {
        return SNAP_UNKNOWN;
    }
    return t->own_exc != 0 ? SNAP_YES : SNAP_NO;
}

/* The chain item at ITEM as the frame walk read it with a generator's frame: searched from
 * *AT on (the chain meets the generators in the order of their frames), wrapping. */
static bool gen_item(const struct py_layout *L, const struct frames_thread *fr, uint64_t item,
                     size_t *at, uint64_t *value, uint64_t *previous)
{
    size_t pre = frames_prefix(L);
    for (size_t k = 0; pre > 0 && k < fr->n_frames; k++) {
        const struct frames_raw *f = &fr->frames[(*at + k) % fr->n_frames];
        if (f->generator && f->exc_known && f->addr - pre == item) {
            *at = (*at + k) % fr->n_frames + 1;
            *value = f->exc_value;
            *previous = f->exc_previous;
            return true;
        }
    }
    return false;
}

/* Reads the chain item at ITEM (snapshots only). */
static bool read_item(struct unwind *u, const struct thread_ctx *t, uint64_t item, uint64_t *value,
                      uint64_t *previous)
{
    const struct py_layout *L = u->L;
    uint8_t buf[LAYOUT_FRAME_PREFIX_MAX];
    size_t len = (size_t)L->errstack.size;
    if (u->snap == NULL || len > sizeof buf) {
        return false;
    }
    if (proc_read_bytes(u->proc, item, buf, len, NULL) < 0 ||
        !layout_read_u64(buf, len, L->errstack.value, value) ||
        !layout_read_u64(buf, len, L->errstack.previous, previous)) {
        unwind_warn(u, "thread %" PRIu64 ": exception state at 0x%" PRIx64 " unreadable",
                    t->native_id, item);
        return false;
    }
    return true;
}

/* has_exception of T, following its chain from T->exc_item. */
static enum snap_bool exc_chain(struct unwind *u, const struct thread_ctx *t)
{
    const struct py_layout *L = u->L;
    uint64_t item = t->exc_item;
    uint64_t own = t->addr + L->thread.exc_state;
    /* A loop is met again at MARK, which moves to where the walk is at each power of two. */
    uint64_t mark = 0;
    size_t lap = 1;
    size_t since = 0;
    size_t at = 0;
    for (size_t steps = 0; steps <= LIMIT_FRAMES; steps++) {
        uint64_t value = 0;
        uint64_t previous = 0;
        if (item == 0) {
            return SNAP_NO;
        }
        if (item == own) {
            return t->own_exc != 0 ? SNAP_YES : SNAP_NO;
        }
        if (!gen_item(L, &t->fr, item, &at, &value, &previous) &&
            !read_item(u, t, item, &value, &previous)) {
            return SNAP_UNKNOWN;
        }
        if (value != 0 && value != u->rt->none_addr) {
            return SNAP_YES;
        }
        if (previous != 0 && previous == mark) {
            break;
        }
        if (++since == lap) {
            mark = item;
            lap *= 2;
            since = 0;
        }
        item = previous;
    }
    unwind_warn(u, "thread %" PRIu64 ": its exception chain loops or is too long", t->native_id);
    return SNAP_UNKNOWN;
}

void unwind_threads_exc_chains(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ts[i].exc_item != 0) {
            ts[i].has_exception = exc_chain(u, &ts[i]);
        }
    }
}
