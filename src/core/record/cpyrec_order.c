/* cpyrec_order: puts CPython's thread-samples back in time order, bounded. The writer holds a
 * run of one thread's identical stacks back until the run ends (its stack changes, its 16 KiB
 * buffer fills, or the file is finished), so a run's samples follow later samples of other
 * threads. No later record can hold a sample earlier than the least of the threads' last
 * times (each thread's samples are in order), so samples up to it are delivered, those of one
 * time together; past CPYREC_REORDER held back, the earliest go anyway. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/record/cpyrec.h"
#include "core/record/cpyrec_int.h"
#include "core/util/error.h"

/* The heap of threads, by prev_us: times only grow, so a thread only moves down. */
static uint64_t tkey(const struct cpyrec *r, size_t i)
{
    return r->threads[r->theap[i]].prev_us;
}

static void tswap(struct cpyrec *r, size_t a, size_t b)
{
    size_t t = r->theap[a];
    r->theap[a] = r->theap[b];
    r->theap[b] = t;
    r->threads[r->theap[a]].hpos = a;
    r->threads[r->theap[b]].hpos = b;
}

void cpyrec_order_thread_added(struct cpyrec *r, struct cpy_thread *t)
{
    size_t i = r->n_threads - 1;
    r->theap[i] = (size_t)(t - r->threads);
    t->hpos = i;
    t->snap = UINT32_MAX;
    while (i > 0 && tkey(r, (i - 1) / 2) > tkey(r, i)) {
        tswap(r, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

void cpyrec_order_thread_advanced(struct cpyrec *r, struct cpy_thread *t)
{
    size_t i = t->hpos;
    for (;;) {
        size_t least = i;
        size_t l = 2 * i + 1;
        size_t rr = l + 1;
        if (l < r->n_threads && tkey(r, l) < tkey(r, least)) {
            least = l;
        }
        if (rr < r->n_threads && tkey(r, rr) < tkey(r, least)) {
            least = rr;
        }
        if (least == i) {
            return;
        }
        tswap(r, i, least);
        i = least;
    }
}

static void snap_release(struct cpyrec *r, uint32_t i)
{
    struct cpy_snap *s = &r->snaps[i];
    if (--s->refs > 0) {
        return;
    }
    r->snap_frames -= s->depth;
    free(s->idx);
    s->idx = NULL;
    s->next_free = r->free_snap;
    r->free_snap = i;
}

void cpyrec_order_stack_changed(struct cpyrec *r, struct cpy_thread *t)
{
    if (t->snap != UINT32_MAX) {
        snap_release(r, t->snap);
        t->snap = UINT32_MAX;
    }
}

/* A snapshot of T's stack, held by T until its stack changes. */
static int snap_take(struct cpyrec *r, struct cpy_thread *t, struct pt_error *err)
{
    if (r->free_snap == UINT32_MAX) {
        /* one snapshot per held sample and per thread at most */
        size_t n = r->n_snaps > 0 ? r->n_snaps * 2 : 64;
        struct cpy_snap *s = realloc(r->snaps, n * sizeof *s);
        if (s == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "%zu stack snapshots", n);
        }
        r->snaps = s;
        for (size_t i = n; i-- > r->n_snaps;) {
            s[i] = (struct cpy_snap){NULL, 0, 0, r->free_snap};
            r->free_snap = (uint32_t)i;
        }
        r->n_snaps = n;
    }
    uint32_t i = r->free_snap;
    struct cpy_snap *s = &r->snaps[i];
    s->idx = malloc((t->depth > 0 ? t->depth : 1) * sizeof *s->idx);
    if (s->idx == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "a stack of %zu frames", t->depth);
    }
    if (t->depth > 0) {
        /* a thread's first record may be a repeat of its empty stack: no stack yet */
        memcpy(s->idx, t->stack, t->depth * sizeof *s->idx);
    }
    r->free_snap = s->next_free;
    s->depth = (uint32_t)t->depth;
    s->refs = 1;
    r->snap_frames += t->depth;
    t->snap = i;
    return 0;
}

static bool before(const struct cpy_pending *a, const struct cpy_pending *b)
{
    return a->us < b->us || (a->us == b->us && a->seq < b->seq);
}

int cpyrec_order_add(struct cpyrec *r, struct cpy_thread *t, uint64_t us, uint8_t status,
                     struct pt_error *err)
{
    if (t->snap == UINT32_MAX && snap_take(r, t, err) < 0) {
        return -1;
    }
    if (r->n_pending == r->cap_pending) {
        size_t n = r->cap_pending > 0 ? r->cap_pending * 2 : 256;
        struct cpy_pending *p = realloc(r->pending, n * sizeof *p);
        if (p == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "%zu samples held back", n);
        }
        r->pending = p;
        r->cap_pending = n;
    }
    r->snaps[t->snap].refs++;
    struct cpy_pending e = {us, r->seq++, (uint32_t)(t - r->threads), t->snap, status};
    size_t i = r->n_pending++;
    while (i > 0 && before(&e, &r->pending[(i - 1) / 2])) {
        r->pending[i] = r->pending[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->pending[i] = e;
    return 0;
}

static struct cpy_pending pop(struct cpyrec *r)
{
    struct cpy_pending top = r->pending[0];
    struct cpy_pending last = r->pending[--r->n_pending];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= r->n_pending) {
            break;
        }
        size_t c = l + 1 < r->n_pending && before(&r->pending[l + 1], &r->pending[l]) ? l + 1 : l;
        if (!before(&r->pending[c], &last)) {
            break;
        }
        r->pending[i] = r->pending[c];
        i = c;
    }
    if (r->n_pending > 0) {
        r->pending[i] = last;
    }
    return top;
}

static enum snap_bool flag(uint8_t status, unsigned bit, bool known)
{
    if (!known) {
        return SNAP_UNKNOWN;
    }
    return (status & bit) != 0 ? SNAP_YES : SNAP_NO;
}

static int grow(void **p, size_t *cap, size_t n, size_t size, struct pt_error *err)
{
    if (n <= *cap) {
        return 0;
    }
    size_t c = *cap > 0 ? *cap : 64;
    while (c < n) {
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (q == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "%zu items of %zu bytes", c, size);
    }
    *p = q;
    *cap = c;
    return 0;
}

static void fill_thread(const struct cpyrec *r, const struct cpy_pending *e,
                        struct rec_frame *frames, struct rec_thread *th)
{
    const struct cpy_thread *t = &r->threads[e->thread];
    const struct cpy_snap *s = &r->snaps[e->snap];
    bool gc = false;
    for (uint32_t i = 0; i < s->depth; i++) {
        const struct cpy_frame *f = &r->frames[s->idx[i]];
        frames[i] = (struct rec_frame){f->code != UINT32_MAX ? &r->codes[f->code] : NULL, f->line,
                                       UINT32_MAX, f->kind, SNAP_UNREADABLE_NONE};
        gc = gc || f->kind == SNAP_FRAME_GC;
    }
    uint8_t status = e->status;
    /* THREAD_STATUS_UNKNOWN says the CPU state was not determined (wall mode sets it on
     * every sample); the GIL bits are set beside it. */
    bool cpu_known = (status & STATUS_UNKNOWN) == 0;
    *th = (struct rec_thread){
        .interp_id = t->interp,
        /* On Linux the profiler records the kernel's thread id (ThreadInfo.thread_id). */
        .tid = t->thread_id > 0 && t->thread_id <= INT32_MAX ? (pid_t)t->thread_id : 0,
        .thread_id = t->thread_id > INT32_MAX ? t->thread_id : 0,
        .main = (status & STATUS_MAIN_THREAD) != 0,
        .gil = flag(status, STATUS_HAS_GIL, true),
        .gil_requested = flag(status, STATUS_GIL_REQUESTED, true),
        .on_cpu = flag(status, STATUS_ON_CPU, cpu_known),
        .has_exception = flag(status, STATUS_HAS_EXCEPTION, true),
        .in_gc = r->gc_frames_known ? (gc ? SNAP_YES : SNAP_NO) : SNAP_UNKNOWN,
        .frames = frames,
        .n_frames = s->depth,
    };
}

/* Delivers the earliest time's samples, as many threads as one sample may hold. */
static int deliver_group(struct cpyrec *r, double from, double to, rec_sample_fn fn, void *ctx,
                         struct pt_error *err)
{
    uint64_t us = r->pending[0].us;
    size_t n = 0;
    size_t frames = 0;
    while (r->n_pending > 0 && r->pending[0].us == us && n < CPYREC_THREADS) {
        size_t depth = r->snaps[r->pending[0].snap].depth;
        if (n > 0 && frames + depth > CPYREC_GROUP_FRAMES) {
            break;
        }
        if (grow((void **)&r->group, &r->group_cap, n + 1, sizeof *r->group, err) < 0 ||
            /* one more, so that scratch exists for threads without frames too */
            grow((void **)&r->scratch, &r->scratch_cap, frames + depth + 1, sizeof *r->scratch,
                 err) < 0) {
            return -1;
        }
        struct cpy_pending e = pop(r);
        fill_thread(r, &e, r->scratch + frames, &r->group[n]);
        snap_release(r, e.snap);
        frames += depth;
        n++;
    }
    /* scratch may have moved as it grew: point the threads at their frames now */
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        r->group[i].frames = r->scratch + off;
        off += r->group[i].n_frames;
    }
    double t = ((double)us - (double)r->start_us) / 1e6;
    if (!(t >= from && t <= to)) {
        return 0;
    }
    struct rec_sample s = {.t = t, .threads = r->group, .n_threads = n};
    return fn(ctx, &s);
}

int cpyrec_order_flush(struct cpyrec *r, bool all, double from, double to, rec_sample_fn fn,
                       void *ctx, struct pt_error *err)
{
    while (r->n_pending > 0) {
        bool over = r->n_pending > CPYREC_REORDER || r->snap_frames > CPYREC_REORDER_FRAMES;
        bool safe = r->n_threads > 0 && r->pending[0].us <= r->threads[r->theap[0]].prev_us;
        if (!all && !over && !safe) {
            return 0;
        }
        int rc = deliver_group(r, from, to, fn, ctx, err);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

void cpyrec_order_reset(struct cpyrec *r)
{
    for (size_t i = 0; i < r->n_snaps; i++) {
        free(r->snaps[i].idx);
    }
    free(r->snaps);
    r->snaps = NULL;
    r->n_snaps = 0;
    r->free_snap = UINT32_MAX;
    r->snap_frames = 0;
    r->n_pending = 0;
    r->seq = 0;
}
