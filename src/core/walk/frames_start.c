/* frames_start: where each walk of a frame chain starts: the head batch's guesses
 * (frames_guess()), then one batch for every thread's newest chunk, the older chunks its last
 * walk copied and the frames its hint names (frames_read_starts()); what a walk keeps for the
 * next one's guess. */
#include "config.h"

#include "core/walk/frames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/walk/frames_int.h"

/* One region the start of a walk reads: a chunk (into chunk slot SLOT) or a hinted frame's
 * header (SLOT < 0). */
struct start_item {
    struct frames_thread *t;
    int slot;
};

/* The chunk in slot I of T was read: keep it if it is as large as the span taken from it. */
static void chunk_read(struct frames_thread *t, size_t i, bool ok)
{
    struct frames_chunk *c = &t->chunks[i];
    uint64_t size = 0;
    if (!ok || !layout_read_u64(c->data, c->len, CHUNK_SIZE_AT, &size) || size < c->len) {
        c->len = 0;
        return;
    }
    /* The chain of older chunks goes on from the newest (copies of older ones are skipped
     * as the walk reaches them). */
    if (i == t->newest_slot) {
        layout_read_u64(c->data, c->len, CHUNK_PREVIOUS_AT, &t->next_older);
    }
}

/* The regions gathered for one system call. */
struct start_batch {
    bool now;
    struct proc_iov iov[PROC_IOV_MAX];
    struct start_item item[PROC_IOV_MAX];
    size_t k;
};

static void start_flush(struct proc *p, struct start_batch *sb)
{
    const struct proc_iov *iov = sb->iov;
    const struct start_item *item = sb->item;
    size_t *k = &sb->k;
    if (*k == 0) {
        return;
    }
    bool batch = frames_read_regions(p, sb->now, iov, *k) == 0;
    for (size_t j = 0; j < *k; j++) {
        struct frames_thread *t = item[j].t;
        bool ok = batch || frames_read_one(p, sb->now, iov[j].addr, iov[j].dst, iov[j].len) == 0;
        if (item[j].slot >= 0) {
            chunk_read(t, (size_t)item[j].slot, ok);
        } else if (!ok) {
            t->pref_failed = true;
        }
    }
    *k = 0;
}

/* Adds one region to the start batch, flushing it when full. */
static void start_add(struct proc *p, struct start_batch *sb, struct proc_iov want,
                      struct frames_thread *t, int slot)
{
    if (sb->k == PROC_IOV_MAX) {
        start_flush(p, sb);
    }
    sb->iov[sb->k] = want;
    sb->item[sb->k++] = (struct start_item){t, slot};
}

/* Plans the regions T's walk starts with into IOV[0..ROOM) (SLOT[i]: the chunk slot region i
 * fills, -1 for a prefetched header): the newest chunk's NEWEST_LEN bytes at NEWEST (none when
 * 0), the older chunks its last walk copied (when WITH_OLDER), and the headers of the frames
 * T's hint names (when WITH_HINTS). Returns how many regions, at most ROOM. */
static size_t plan_start(const struct py_layout *L, struct frames_thread *t, uint64_t newest,
                         size_t newest_len, bool with_older, bool with_hints, struct proc_iov *iov,
                         int *slot, size_t room)
{
    size_t k = 0;
    bool room_left = newest_len && k < room && t->n_chunks <= LIMIT_CHUNKS;
    uint8_t *buf = room_left ? frames_chunk_buffer(t, newest_len) : NULL;
    if (buf != NULL) {
        t->newest_slot = t->n_chunks;
        t->chunks[t->n_chunks] =
            (struct frames_chunk){newest, buf, newest_len, t->chunks[t->n_chunks].cap};
        iov[k] = (struct proc_iov){newest, buf, newest_len};
        slot[k++] = (int)t->n_chunks++;
    }
    size_t g = 0;
    for (; with_older && g < t->n_guess && k < room && t->n_chunks <= LIMIT_CHUNKS; g++) {
        if (frames_copied(t, t->guess[g].addr) != NULL) {
            continue; /* read ahead already */
        }
        uint8_t *gb = frames_chunk_buffer(t, t->guess[g].len);
        if (gb == NULL) {
            break;
        }
        t->chunks[t->n_chunks] = (struct frames_chunk){t->guess[g].addr, gb, t->guess[g].len,
                                                       t->chunks[t->n_chunks].cap};
        iov[k] = (struct proc_iov){t->guess[g].addr, gb, t->guess[g].len};
        slot[k++] = (int)t->n_chunks++;
    }
    size_t want = with_hints && t->n_hint <= FRAMES_HINT_MAX ? t->n_hint : 0;
    size_t pre = want > 0 ? frames_prefix(L) : 0;
    size_t each = pre + L->frame.size;
    want = want <= room - k ? want : 0;
    if (want > 0 && t->pref_cap < want * each) {
        uint8_t *fresh = realloc(t->pref, want * each);
        if (fresh == NULL) {
            want = 0;
        } else {
            t->pref = fresh;
            t->pref_cap = want * each;
        }
    }
    for (size_t j = 0; j < want; j++) {
        iov[k] = frames_frame_region(L, t->hint[j], pre, t->pref + j * each);
        slot[k++] = -1;
    }
    if (with_older) {
        t->older_planned = g == t->n_guess;
    }
    if (with_hints) {
        t->n_pref = want;
        t->hints_planned = want == t->n_hint || t->n_hint > FRAMES_HINT_MAX;
    }
    return k;
}

/* Read-ahead reads at most this much past where the newest frame ended last time. */
enum { GUESS_SLACK = 256 };

size_t frames_guess(const struct py_layout *L, struct frames_thread *t, uint64_t tstate,
                    const uint64_t *hint, size_t n_hint, struct proc_iov *iov, size_t room)
{
    int slot[PROC_IOV_MAX];
    frames_clear_walk(t);
    t->pre_tstate = tstate;
    t->hint = hint;
    t->n_hint = n_hint;
    size_t len = 0;
    if (t->last_newest.addr != 0) {
        uint64_t want = (uint64_t)t->last_newest.len + GUESS_SLACK;
        len = (size_t)(want < t->last_newest_size ? want : t->last_newest_size);
        len = len <= LIMIT_CHUNK_READ ? len : 0;
    }
    if (room > PROC_IOV_MAX) {
        room = PROC_IOV_MAX;
    }
    return plan_start(L, t, t->last_newest.addr, len, true, true, iov, slot, room);
}

void frames_guessed(struct frames_thread *t, bool ok)
{
    if (!ok) {
        t->n_chunks = 0;
        t->n_pref = 0;
        t->pre_read = false;
        t->older_planned = false;
        t->hints_planned = false;
        return;
    }
    for (size_t i = 0; i < t->n_chunks; i++) {
        chunk_read(t, i, true);
    }
    t->pre_read = true;
}

void frames_begin(struct frames_thread *t, uint64_t tstate)
{
    if (!t->pre_read || t->pre_tstate != tstate) {
        frames_clear_walk(t);
        return;
    }
    /* Keep the chunks and headers read ahead; start everything else afresh. */
    t->current_frame = 0;
    t->chunk_addr = 0;
    t->base_frame = 0;
    t->n_frames = 0;
    t->truncated = false;
    t->failed = false;
    t->torn = false;
    t->error[0] = '\0';
    t->n_read = 0;
    t->n_links = 0;
    t->keep_links = false;
    t->next_older = 0;
    t->pending = 0;
    t->pref_at = 0;
    t->pref_failed = false;
    t->steps = 0;
    t->done = false;
}

/* A thread whose chunks were read ahead: its newest chunk is usable when it is the one its
 * state names now and the copy covers the newest frame. The older copies stay either way
 * (memory at an address is what it is; the walk only looks up frames inside them). */
static bool use_read_ahead(const struct py_layout *L, struct frames_thread *t)
{
    if (!t->pre_read) {
        return false;
    }
    t->pre_read = false;
    struct frames_chunk *c = t->n_chunks > 0 ? &t->chunks[t->newest_slot] : NULL;
    size_t span = frames_newest_span(L, t);
    if (c != NULL && c->len > 0 && c->addr == t->chunk_addr && span > 0 && span <= c->len) {
        c->len = span;
        layout_read_u64(c->data, c->len, CHUNK_PREVIOUS_AT, &t->next_older);
        return true;
    }
    if (c != NULL) {
        c->len = 0;
    }
    return false;
}

/* Where a thread's walk starts, read for every thread in one system call (a batch that fails
 * is read again region by region, so one bad thread costs only itself): the used part of its
 * newest chunk, the older chunks its last walk copied (their used part does not change while
 * a newer chunk exists), and the headers of the frames its hint names. A thread read ahead
 * needs nothing, or only its newest chunk. */
void frames_read_starts(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                        size_t n)
{
    struct start_batch sb;
    struct proc_iov iov[PROC_IOV_MAX];
    int slot[PROC_IOV_MAX];
    sb.k = 0;
    sb.now = n > 0 && ts[0]->now;
    for (size_t i = 0; i < n; i++) {
        struct frames_thread *t = ts[i];
        /* What the read-ahead had no room for is read now. */
        bool older = !t->pre_read || !t->older_planned;
        bool hints = !t->pre_read || !t->hints_planned;
        size_t len = frames_newest_span(L, t);
        if (use_read_ahead(L, t)) {
            len = 0;
        }
        size_t k = plan_start(L, t, t->chunk_addr, len, older && (len > 0 || t->n_chunks > 0),
                              hints, iov, slot, PROC_IOV_MAX);
        for (size_t j = 0; j < k; j++) {
            start_add(p, &sb, iov[j], t, slot[j]);
        }
    }
    start_flush(p, &sb);
    for (size_t i = 0; i < n; i++) {
        if (ts[i]->pref_failed) {
            ts[i]->n_pref = 0;
        }
    }
}

/* Remembers the older chunks this walk copied, for the next walk's start batch. */
void frames_keep_guess(struct frames_thread *t)
{
    t->n_guess = 0;
    t->last_newest = (struct frames_span){0, 0};
    t->last_newest_size = 0;
    for (size_t i = 0; i < t->n_chunks; i++) {
        const struct frames_chunk *c = &t->chunks[i];
        if (c->len == 0) {
            continue;
        }
        if (i == t->newest_slot && c->addr == t->chunk_addr) {
            t->last_newest = (struct frames_span){c->addr, c->len};
            layout_read_u64(c->data, c->len, CHUNK_SIZE_AT, &t->last_newest_size);
        } else if (t->n_guess < LIMIT_CHUNKS) {
            t->guess[t->n_guess++] = (struct frames_span){c->addr, c->len};
        }
    }
}
