/* unwind_verify: a snapshot's stacks checked against a later copy of what their walk read.
 *
 * One process_vm_readv is no atomic copy: while it copies, a running thread returns from frames
 * and calls others at the same addresses, and the copy can join pieces of several moments into
 * a chain the thread never had, which no check of the chain alone can always tell (the same
 * function at the same address, called from the same line, is a stale activation just as
 * well). So a snapshot reads again, once the walk is over, what the walk used: the thread
 * state's newest-frame pointer and every header it took (address, code, instruction, caller
 * link, owner). A thread that went on running between the copies leaves them different; one
 * whose copies agree was in that chain when the later copy was taken, unless between the two
 * it went through other states and came back to exactly the mixture the torn copy shows, in
 * every field of every frame. That is not a proof, but a torn mixture is a state the thread
 * never had, and for a later copy to reproduce it exactly is not a realistic coincidence.
 * The newest frame's instruction pointer is the one field not compared: a thread running in
 * that frame moves it with every instruction, and the value read is one a frame of that code
 * held at that place of the chain (check_torn() in unwind.c checks it lies in its code). */
#include "config.h"

#include "core/walk/unwind_verify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/walk/frames.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/walk/unwind_threads.h"

/* Headers that lie close together are read as one region (a chunk's frames sit side by side,
 * and so do frame objects of one pool, before 3.11): at most SPAN_MAX bytes, none of it more
 * than GAP bytes from a header. Fewer regions cost the kernel less than the bytes between them
 * (manythreads on 3.9: one more read a snapshot, where a region a header took two more). A
 * batch's copies take at most BATCH_BYTES. */
enum {
    VERIFY_GAP = 512,
    VERIFY_SPAN_MAX = 16 * 1024,
    VERIFY_BATCH_BYTES = 32 * 1024, /* a buffer reused, not fresh pages for every stack */
};

enum region_kind { REGION_TSTATE, REGION_CFRAME, REGION_LINKS };

/* What one region of a batch holds: the thread state, its _PyCFrame's newest frame, or the
 * headers of links FIRST..LAST of the thread's walk (at OFF in u->verify_buf). */
struct region {
    struct thread_ctx *t;
    enum region_kind kind;
    size_t first;
    size_t last;
    size_t off;
};

struct copy_batch {
    struct proc_iov iov[PROC_IOV_MAX];
    struct region r[PROC_IOV_MAX];
    size_t n;
    size_t bytes; /* of u->verify_buf */
};

/* Compares link K of T's walk with the copy of its fields in HDR (at u->link_lo). */
static void compare_link(const struct unwind *u, struct thread_ctx *t, size_t k, const uint8_t *hdr)
{
    struct frames_link later;
    frames_link_parse(u->L, hdr, t->fr.links[k].addr, &later);
    t->copy_differs |= !frames_link_same(&t->fr.links[k], &later, k != 0);
}

/* A region of headers that could not be read as one (the bytes between them may not be
 * readable where a header is, as in a memory image): its headers one by one, up to the first
 * that cannot be read either. */
static void compare_one_by_one(struct unwind *u, const struct region *r)
{
    uint8_t hdr[LAYOUT_FRAME_HEADER_MAX] = {0};
    for (size_t k = r->first; k <= r->last && !r->t->copy_differs; k++) {
        struct proc_iov one = {r->t->fr.links[k].addr + u->link_lo, hdr + u->link_lo, u->link_len};
        if (proc_read_now(u->proc, &one, 1, NULL) < 0) {
            r->t->copy_differs = true;
            return;
        }
        compare_link(u, r->t, k, hdr);
    }
}

/* Compares one region of the later copy with what T's walk read. */
static void compare(const struct unwind *u, const struct region *r, const struct proc_iov *iov)
{
    const struct py_layout *L = u->L;
    struct thread_ctx *t = r->t;
    const struct frames_thread *fr = &t->fr;
    if (r->kind == REGION_TSTATE) {
        const uint8_t *ts = (const uint8_t *)iov->dst - u->ts_lo;
        uint64_t ident = 0;
        uint64_t newest = 0;
        bool cf = layout_has(L->thread.cframe);
        layout_read_u64(ts, L->thread.size, L->thread.thread_id, &ident);
        layout_read_u64(ts, L->thread.size, cf ? L->thread.cframe : L->thread.current_frame,
                        &newest);
        t->copy_gone = ident != t->thread_id;
        t->copy_differs |= t->copy_gone || newest != (cf ? t->cframe : fr->current_frame);
    } else if (r->kind == REGION_CFRAME) {
        t->copy_differs |= t->copy_cframe_frame != fr->current_frame;
    } else {
        /* Each header's fields, copied to where frames_link_parse() looks for them. */
        uint8_t hdr[LAYOUT_FRAME_HEADER_MAX] = {0};
        const uint8_t *buf = iov->dst;
        for (size_t k = r->first; k <= r->last; k++) {
            memcpy(hdr + u->link_lo, buf + (fr->links[k].addr + u->link_lo - iov->addr),
                   u->link_len);
            compare_link(u, t, k, hdr);
        }
    }
}

/* Reads the batch's regions in one system call (region by region when that fails: a region
 * that cannot be read now is of a stack that changed) and compares them. */
static void flush(struct unwind *u, struct copy_batch *b)
{
    if (b->n == 0) {
        return;
    }
    bool room = b->bytes <= u->verify_cap;
    if (!room) {
        uint8_t *fresh = realloc(u->verify_buf, b->bytes);
        if (fresh != NULL) {
            u->verify_buf = fresh;
            u->verify_cap = b->bytes;
            room = true;
        }
    }
    for (size_t j = 0; j < b->n; j++) {
        if (b->r[j].kind == REGION_LINKS) {
            b->iov[j].dst = room ? u->verify_buf + b->r[j].off : NULL;
            b->iov[j].len = room ? b->iov[j].len : 0;
        }
    }
    bool ok = proc_read_now(u->proc, b->iov, b->n, NULL) == 0;
    for (size_t j = 0; j < b->n; j++) {
        if (b->iov[j].len == 0 || (!ok && proc_read_now(u->proc, &b->iov[j], 1, NULL) < 0)) {
            /* Out of memory, or unreadable now; a thread state gone cannot be walked again. */
            if (b->r[j].kind == REGION_LINKS && b->iov[j].len > 0 && b->r[j].last > b->r[j].first) {
                compare_one_by_one(u, &b->r[j]);
                continue;
            }
            b->r[j].t->copy_differs = true;
            b->r[j].t->copy_gone |= b->r[j].kind == REGION_TSTATE;
            continue;
        }
        compare(u, &b->r[j], &b->iov[j]);
    }
    b->n = 0;
    b->bytes = 0;
}

static void add(struct unwind *u, struct copy_batch *b, struct proc_iov iov, struct region r)
{
    bool links = r.kind == REGION_LINKS;
    if (b->n == PROC_IOV_MAX || (links && b->bytes + iov.len > VERIFY_BATCH_BYTES)) {
        flush(u, b);
    }
    if (links) {
        r.off = b->bytes;
        b->bytes += iov.len;
    }
    b->iov[b->n] = iov;
    b->r[b->n++] = r;
}

/* The span [*LO, *HI) grown to take the header at ADDR, if that keeps it one close region. */
static bool grow_span(uint64_t *lo, uint64_t *hi, uint64_t addr, uint64_t size)
{
    uint64_t end;
    if (__builtin_add_overflow(addr, size, &end)) {
        return false;
    }
    uint64_t nlo = addr < *lo ? addr : *lo;
    uint64_t nhi = end > *hi ? end : *hi;
    bool near =
        (addr <= *hi || addr - *hi <= VERIFY_GAP) && (end >= *lo || *lo - end <= VERIFY_GAP);
    if (!near || nhi - nlo > VERIFY_SPAN_MAX) {
        return false;
    }
    *lo = nlo;
    *hi = nhi;
    return true;
}

/* Adds what T's walk used to the batch: its thread state (into its slot of u->ts_buf, where a
 * walk again takes its start from), its _PyCFrame's newest frame, and its headers. */
static void add_thread(struct unwind *u, struct copy_batch *b, struct thread_ctx *t)
{
    const struct py_layout *L = u->L;
    const struct frames_thread *fr = &t->fr;
    uint8_t *ts = u->ts_buf + (size_t)(t - u->ts) * L->thread.size;
    t->copy_differs = false;
    t->copy_gone = false;
    t->copy_cframe_frame = 0;
    add(u, b, (struct proc_iov){t->addr + u->ts_lo, ts + u->ts_lo, u->ts_len},
        (struct region){t, REGION_TSTATE, 0, 0, 0});
    if (layout_has(L->thread.cframe) && t->cframe != 0) {
        add(u, b, (struct proc_iov){t->cframe + L->thread.current_frame, &t->copy_cframe_frame, 8},
            (struct region){t, REGION_CFRAME, 0, 0, 0});
    }
    for (size_t k = 0; k < fr->n_links;) {
        uint64_t lo = 0;
        uint64_t hi = 0;
        if (__builtin_add_overflow(fr->links[k].addr, u->link_lo, &lo) || (hi = lo) != lo ||
            !grow_span(&lo, &hi, lo, u->link_len)) {
            t->copy_differs = true; /* a header at the end of the address space */
            return;
        }
        size_t last = k;
        uint64_t next;
        while (last + 1 < fr->n_links &&
               !__builtin_add_overflow(fr->links[last + 1].addr, u->link_lo, &next) &&
               grow_span(&lo, &hi, next, u->link_len)) {
            last++;
        }
        add(u, b, (struct proc_iov){lo, NULL, (size_t)(hi - lo)},
            (struct region){t, REGION_LINKS, k, last, 0});
        k = last + 1;
    }
}

/* The later copy of every thread still open, all in as few system calls as can be. */
static void copy_again(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    struct copy_batch *b = malloc(sizeof *b);
    if (b == NULL) {
        for (size_t i = 0; i < n; i++) {
            ts[i].copy_differs = ts[i].copy_open;
        }
        return;
    }
    b->n = 0;
    b->bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].copy_open) {
            add_thread(u, b, &ts[i]);
        }
    }
    flush(u, b);
    free(b);
}

/* Reads the newest frame of each of the N threads OWNER[] names from their _PyCFrame, which
 * changed between the copies. */
static void read_cframes_now(struct unwind *u, struct thread_ctx **owner, size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t j = 0; j < n; j++) {
        iov[j] = (struct proc_iov){owner[j]->cframe + u->L->thread.current_frame,
                                   &owner[j]->fr.current_frame, 8};
    }
    if (n == 0 || proc_read_now(u->proc, iov, n, NULL) == 0) {
        return;
    }
    for (size_t j = 0; j < n; j++) {
        if (proc_read_now(u->proc, &iov[j], 1, NULL) < 0) {
            owner[j]->fr.current_frame = 0;
        }
    }
}

/* Walks the open threads again from where their later copy says their chain starts. */
static void walk_again(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    const struct py_layout *L = u->L;
    struct thread_ctx *owner[PROC_IOV_MAX];
    size_t m = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct thread_ctx *t = &ts[i];
        if (!t->copy_open) {
            continue;
        }
        uint64_t cframe = t->cframe;
        frames_begin(&t->fr, t->addr);
        unwind_threads_frame_inputs(L, u->ts_buf + (size_t)(t - u->ts) * L->thread.size, t);
        if (layout_has(L->thread.cframe)) {
            t->last_cframe = t->cframe;
            if (t->cframe == cframe) {
                t->fr.current_frame = t->copy_cframe_frame;
            } else if (t->cframe != 0) {
                if (m == PROC_IOV_MAX) {
                    read_cframes_now(u, owner, m);
                    m = 0;
                }
                owner[m++] = t;
            }
        }
        t->fr.keep_links = true;
        unwind_threads_give_hints(u, t, 1);
        u->fr_ptrs[k++] = &t->fr;
    }
    read_cframes_now(u, owner, m);
    frames_walk_now(u->proc, L, u->fr_ptrs, k);
}

void unwind_verify_stacks(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    frames_link_span(u->L, &u->link_lo, &u->link_len);
    for (size_t i = 0; i < n; i++) {
        ts[i].copy_open = true;
    }
    for (unsigned attempt = 0;; attempt++) {
        size_t open = 0;
        copy_again(u, ts, n);
        for (size_t i = 0; i < n; i++) {
            struct thread_ctx *t = &ts[i];
            if (!t->copy_open) {
                continue;
            }
            if (!t->copy_differs && !t->fr.torn) {
                t->copy_open = false;
            } else if (t->copy_gone || attempt == UNWIND_VERIFY_RETRIES) {
                t->copy_open = false;
                if (!t->fr.torn) {
                    t->fr.torn = true;
                    if (t->copy_gone) {
                        snprintf(t->fr.error, sizeof t->fr.error,
                                 "its thread state is unreadable or another thread's now");
                    } else {
                        snprintf(t->fr.error, sizeof t->fr.error,
                                 "%u walks of it, each differed from a later copy", attempt + 1);
                    }
                }
            } else {
                open++;
            }
        }
        if (open == 0) {
            return;
        }
        walk_again(u, ts, n);
    }
}
