/* frames: the interpreter-frame chains of a set of threads, copied with as few reads as possible. */
#include "config.h"

#include "core/frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/layout/layout.h"
#include "core/proc.h"

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

void frames_release(struct frames_thread *t)
{
    free(t->pref);
    t->pref = NULL;
    free(t->read_addrs);
    t->read_addrs = NULL;
    t->n_read = 0;
    for (size_t i = 0; i < t->n_chunks; i++) {
        free(t->chunks[i].data);
    }
    t->n_chunks = 0;
    free(t->frames);
    t->frames = NULL;
    t->n_frames = 0;
}

static void fail(struct frames_thread *t, const char *why, uint64_t addr)
{
    t->failed = true;
    t->done = true;
    snprintf(t->error, sizeof t->error, "%s at 0x%" PRIx64, why, addr);
}

/* The span of the newest chunk that holds frames: from its start to the end of the newest
 * frame's header. Zero when the newest frame is not in it. */
static size_t newest_span(const struct py_layout *L, const struct frames_thread *t)
{
    uint64_t end;
    if (t->chunk_addr == 0 || t->current_frame < t->chunk_addr + CHUNK_HEADER ||
        __builtin_add_overflow(t->current_frame, L->frame.size, &end) ||
        end - t->chunk_addr > LIMIT_CHUNK_READ) {
        return 0;
    }
    return (size_t)(end - t->chunk_addr);
}

/* Copies the newest chunk of every thread in one system call (a batch that fails is retried
 * one by one, so one bad thread costs only itself). */
static void copy_newest_chunks(struct proc *p, const struct py_layout *L,
                               struct frames_thread *ts, size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct frames_thread *owner[PROC_IOV_MAX];
    size_t k = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t len = i < n ? newest_span(L, &ts[i]) : 0;
        uint8_t *buf = len ? malloc(len) : NULL;
        if (buf != NULL) {
            iov[k] = (struct proc_iov){ts[i].chunk_addr, buf, len};
            owner[k++] = &ts[i];
        }
        if (k == PROC_IOV_MAX || (i == n && k > 0)) {
            bool batch = proc_read_many(p, iov, k, NULL) == 0;
            for (size_t j = 0; j < k; j++) {
                uint64_t size = 0;
                struct frames_thread *t = owner[j];
                bool ok = batch || proc_read_bytes(p, iov[j].addr, iov[j].dst, iov[j].len,
                                                   NULL) == 0;
                /* The chunk must be as large as the span taken from it. */
                if (!ok || !layout_read_u64(iov[j].dst, iov[j].len, CHUNK_SIZE_AT, &size) ||
                    size < iov[j].len) {
                    free(iov[j].dst);
                    continue;
                }
                t->chunks[t->n_chunks++] = (struct frames_chunk){iov[j].addr, iov[j].dst,
                                                                 iov[j].len};
                layout_read_u64(iov[j].dst, iov[j].len, CHUNK_PREVIOUS_AT, &t->next_older);
            }
            k = 0;
        }
    }
}

/* Copies T's next older chunk: its first CHUNK_MIN_SIZE bytes in one read, the rest of its used
 * part (header + top slots) only when it holds more. */
static void copy_older_chunk(struct proc *p, struct frames_thread *t)
{
    uint64_t addr = t->next_older;
    uint64_t size = 0;
    uint64_t top = 0;
    uint64_t used = 0;
    uint8_t *buf = malloc(CHUNK_MIN_SIZE);
    t->next_older = 0;
    if (buf == NULL || proc_read_bytes(p, addr, buf, CHUNK_MIN_SIZE, NULL) < 0) {
        free(buf);
        return;
    }
    layout_read_u64(buf, CHUNK_MIN_SIZE, CHUNK_SIZE_AT, &size);
    layout_read_u64(buf, CHUNK_MIN_SIZE, CHUNK_TOP_AT, &top);
    if (top <= LIMIT_CHUNK_READ / 8) {
        used = CHUNK_HEADER + top * 8;
    }
    if (used == 0 || used > size || used > LIMIT_CHUNK_READ) {
        free(buf);
        return;
    }
    if (used > CHUNK_MIN_SIZE) {
        uint8_t *big = realloc(buf, used);
        if (big == NULL || proc_read_bytes(p, addr + CHUNK_MIN_SIZE, big + CHUNK_MIN_SIZE,
                                           used - CHUNK_MIN_SIZE, NULL) < 0) {
            free(big != NULL ? big : buf);
            return;
        }
        buf = big;
    }
    t->chunks[t->n_chunks++] = (struct frames_chunk){addr, buf, (size_t)used};
    layout_read_u64(buf, used, CHUNK_PREVIOUS_AT, &t->next_older);
}

/* The header of the frame at ADDR if it lies in a copied chunk. A frame outside them may be in
 * the next older chunk, which is copied once (its caller frames will be there too). */
static const uint8_t *in_chunks(struct proc *p, const struct py_layout *L,
                                struct frames_thread *t, uint64_t addr)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        for (size_t i = 0; i < t->n_chunks; i++) {
            const struct frames_chunk *c = &t->chunks[i];
            if (addr >= c->addr && addr - c->addr <= c->len &&
                c->len - (addr - c->addr) >= L->frame.size) {
                return c->data + (addr - c->addr);
            }
        }
        if (t->next_older == 0 || t->n_chunks > LIMIT_CHUNKS) {
            return NULL;
        }
        copy_older_chunk(p, t);
    }
    return NULL;
}

static bool push_frame(struct frames_thread *t, uint64_t addr, uint64_t code, uint64_t instr)
{
    if (t->n_frames == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        struct frames_raw *nf = realloc(t->frames, ncap * sizeof *nf);
        if (nf == NULL) {
            return false;
        }
        t->frames = nf;
        t->cap = ncap;
    }
    t->frames[t->n_frames++] = (struct frames_raw){addr, code, instr};
    return true;
}

/* Takes one frame header H at ADDR: keeps it if it is a Python frame, moves to its caller. */
static void take_frame(const struct py_layout *L, struct frames_thread *t, const uint8_t *h)
{
    uint64_t prev = 0;
    uint64_t owner = 0;
    uint64_t exec = 0;
    uint64_t instr = 0;
    layout_read_u64(h, L->frame.size, L->frame.previous, &prev);
    layout_read_uint(h, L->frame.size, L->frame.owner, 1, &owner);
    layout_read_u64(h, L->frame.size, L->frame.executable, &exec);
    layout_read_uint(h, L->frame.size, L->frame.instr_ptr, L->frame.instr_width, &instr);
    exec &= ~L->frame.executable_tag_mask;
    /* Frames the interpreter owns (entry shims on the C stack) are not Python frames; CPython's
     * own unwinder skips them too. */
    bool shim = (int)owner == L->frame.owner_cstack || (int)owner == L->frame.owner_interpreter;
    if (!shim && exec != 0 && !push_frame(t, t->pending, exec, instr)) {
        fail(t, "out of memory for frame", t->pending);
        return;
    }
    t->pending = prev;
}

/* Remembers that the frame at ADDR had to be read outside the chunks. */
static void note_read(struct frames_thread *t, uint64_t addr)
{
    if (t->read_addrs == NULL) {
        t->read_addrs = malloc(FRAMES_HINT_MAX * sizeof *t->read_addrs);
    }
    if (t->read_addrs != NULL && t->n_read < FRAMES_HINT_MAX) {
        t->read_addrs[t->n_read++] = addr;
    }
}

/* The prefetched header of the frame at ADDR, if the hint named it: usually the next one. */
static const uint8_t *prefetched(const struct py_layout *L, struct frames_thread *t,
                                 uint64_t addr)
{
    for (size_t k = 0; k < t->n_pref; k++) {
        size_t i = (t->pref_at + k) % t->n_pref;
        if (t->hint[i] == addr) {
            t->pref_at = i + 1;
            return t->pref + i * L->frame.size;
        }
    }
    return NULL;
}

/* Follows T's chain through copied chunks until it ends or needs a read. */
static void advance(struct proc *p, const struct py_layout *L, struct frames_thread *t)
{
    while (!t->done) {
        if (t->pending == 0 || t->pending == t->base_frame) {
            t->done = true;
            return;
        }
        if (t->steps++ == LIMIT_FRAMES) {
            t->truncated = true;
            t->done = true;
            return;
        }
        const uint8_t *h = in_chunks(p, L, t, t->pending);
        if (h == NULL && (h = prefetched(L, t, t->pending)) != NULL) {
            note_read(t, t->pending);
        }
        if (h == NULL) {
            t->steps--;
            return;
        }
        take_frame(L, t, h);
    }
}

static void prefetch_flush(struct proc *p, const struct proc_iov *iov,
                           struct frames_thread *const *owner, size_t *k)
{
    if (*k > 0 && proc_read_many(p, iov, *k, NULL) < 0) {
        for (size_t m = 0; m < *k; m++) {
            owner[m]->pref_failed = true;
        }
    }
    *k = 0;
}

/* Reads the headers of every thread's hinted frames, PROC_IOV_MAX to a system call. A batch
 * that fails leaves its threads without prefetch: their rounds read what they need. */
static void prefetch(struct proc *p, const struct py_layout *L, struct frames_thread *ts,
                     size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct frames_thread *owner[PROC_IOV_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct frames_thread *t = &ts[i];
        size_t want = t->n_hint <= FRAMES_HINT_MAX ? t->n_hint : 0;
        if (want == 0 || (t->pref = malloc(want * L->frame.size)) == NULL) {
            continue;
        }
        for (size_t j = 0; j < want; j++) {
            if (k == PROC_IOV_MAX) {
                prefetch_flush(p, iov, owner, &k);
            }
            iov[k] = (struct proc_iov){t->hint[j], t->pref + j * L->frame.size, L->frame.size};
            owner[k++] = t;
        }
        t->n_pref = want;
    }
    prefetch_flush(p, iov, owner, &k);
    for (size_t i = 0; i < n; i++) {
        if (ts[i].pref_failed) {
            ts[i].n_pref = 0;
        }
    }
}

void frames_walk(struct proc *p, const struct py_layout *L, struct frames_thread *ts, size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct frames_thread *owner[PROC_IOV_MAX];
    size_t waiting = 0;
    copy_newest_chunks(p, L, ts, n);
    prefetch(p, L, ts, n);
    for (size_t i = 0; i < n; i++) {
        ts[i].pending = ts[i].current_frame;
        advance(p, L, &ts[i]);
        waiting += !ts[i].done;
    }
    /* One header slot per thread still walking (at most PROC_IOV_MAX read per round); none
     * at all when every chain ended inside the copied chunks. */
    size_t slots = waiting < PROC_IOV_MAX ? waiting : PROC_IOV_MAX;
    uint8_t(*hdrs)[LAYOUT_FRAME_HEADER_MAX] = slots ? malloc(slots * sizeof *hdrs) : NULL;
    if (hdrs == NULL) {
        for (size_t i = 0; i < n; i++) {
            if (!ts[i].done) {
                fail(&ts[i], "out of memory reading frame", ts[i].pending);
            }
        }
    }
    /* Each round reads, for every unfinished thread, the one frame it waits for. Every round
     * moves each unfinished thread at least one frame, so LIMIT_FRAMES bounds the rounds. */
    for (size_t round = 0; round <= LIMIT_FRAMES; round++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!ts[i].done && k < slots) {
                iov[k] = (struct proc_iov){ts[i].pending, hdrs[k], L->frame.size};
                owner[k++] = &ts[i];
            }
        }
        if (k == 0) {
            break;
        }
        bool batch = proc_read_many(p, iov, k, NULL) == 0;
        for (size_t j = 0; j < k; j++) {
            struct frames_thread *t = owner[j];
            if (!batch && proc_read_bytes(p, iov[j].addr, hdrs[j], iov[j].len, NULL) < 0) {
                fail(t, "unreadable frame", iov[j].addr);
                continue;
            }
            t->steps++;
            note_read(t, iov[j].addr);
            take_frame(L, t, hdrs[j]);
            advance(p, L, t);
        }
    }
    free(hdrs);
}
