/* proc_batch: how batched reads of target memory are planned: close regions merged into one,
 * and read-ahead of the regions a repeated walk read last time. */
#include "config.h"

#include "core/target/proc_batch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"

/* Regions closer than this (or on one page) are read as one: the kernel pins the pages of every
 * remote region on its own, which costs far more than copying a few hundred bytes more. The
 * bytes between merged regions lie on pages the regions themselves are on (gaps are shorter
 * than a page), so a merged read fails only where a plain one would. */
enum {
    MERGE_GAP = 256,
    MERGE_PAGE = 4096,
    MERGE_RUN_MAX = 1 << 16, /* bytes of one merged region */
    MERGE_SMALL = 2048,      /* larger regions are read as they are: copying costs more */
};

/* One region of a batch, by its address. */
struct merge_key {
    uint64_t addr;
    uint32_t index;
};

/* A region read ahead: LEN bytes at ADDR, at OFF in the copy; OK when the read succeeded. */
struct span {
    uint64_t addr;
    size_t len;
    size_t off;
    bool ok;
};

/* The address order of one earlier batch: ORDER (room for CAP, grown as needed) names its K
 * regions of nonzero length out of N. */
struct batch_order {
    uint32_t *order;
    size_t cap;
    size_t n;
    size_t k;
};

/* How many earlier batches' orders are kept: a walk of many threads reads in several batches
 * (1 000 threads: four), each of which the next walk repeats. */
enum { ORDER_SLOTS = 8 };

struct proc_batch {
    struct merge_key *keys;  /* PROC_IOV_MAX */
    struct batch_order orders[ORDER_SLOTS];
    size_t order_next;       /* the slot the next new order takes */
    struct proc_iov *merged; /* PROC_IOV_MAX */
    struct proc_iov *rest;   /* PROC_IOV_MAX */
    uint8_t *bounce;
    size_t bounce_cap;
    /* read-ahead: what this walk reads, and what the last one's read-ahead holds */
    bool recording;
    bool serving;
    struct proc_iov *record;
    struct proc_iov *record_tmp; /* the sort's scratch (room for cap_tmp), kept */
    size_t n_record;
    size_t cap_record;
    size_t cap_tmp;
    size_t record_bytes;
    struct span *spans; /* by address, not overlapping */
    size_t n_spans;
    size_t cap_spans;
    uint8_t *data;
    size_t data_cap;
};

struct proc_batch *proc_batch_new(void)
{
    struct proc_batch *b = calloc(1, sizeof *b);
    if (b != NULL) {
        b->keys = malloc(PROC_IOV_MAX * sizeof *b->keys);
        b->merged = malloc(PROC_IOV_MAX * sizeof *b->merged);
        b->rest = malloc(PROC_IOV_MAX * sizeof *b->rest);
    }
    if (b == NULL || b->keys == NULL || b->merged == NULL || b->rest == NULL) {
        proc_batch_free(b);
        return NULL;
    }
    return b;
}

void proc_batch_free(struct proc_batch *b)
{
    if (b != NULL) {
        free(b->keys);
        for (size_t i = 0; i < ORDER_SLOTS; i++) {
            free(b->orders[i].order);
        }
        free(b->merged);
        free(b->rest);
        free(b->bounce);
        free(b->record);
        free(b->record_tmp);
        free(b->spans);
        free(b->data);
        free(b);
    }
}

static int check(const struct proc_iov *iov, size_t n, struct pt_error *err)
{
    if (n > PROC_IOV_MAX) {
        return pt_error_set(err, PT_E_LIMIT, 0, "%zu regions in one read, at most %d", n,
                            PROC_IOV_MAX);
    }
    for (size_t i = 0; i < n; i++) {
        uintptr_t end;
        if (iov[i].len > PROC_READ_MAX) {
            return pt_error_set(err, PT_E_LIMIT, 0,
                                "read of %zu bytes at 0x%" PRIx64 ", at most %d", iov[i].len,
                                iov[i].addr, PROC_READ_MAX);
        }
        if ((uintptr_t)iov[i].addr != iov[i].addr ||
            __builtin_add_overflow((uintptr_t)iov[i].addr, iov[i].len, &end)) {
            return pt_error_set(err, PT_E_READ, EFAULT, "cannot read %zu bytes at 0x%" PRIx64,
                                iov[i].len, iov[i].addr);
        }
    }
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    const struct merge_key *x = a;
    const struct merge_key *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool close_enough(uint64_t end, uint64_t next)
{
    return next <= end + MERGE_GAP || next / MERGE_PAGE == (end - 1) / MERGE_PAGE;
}

static bool mergeable(uint64_t end, uint64_t start, uint64_t next, uint64_t next_end)
{
    uint64_t top = next_end > end ? next_end : end;
    if (next_end - next > MERGE_SMALL || end - start > MERGE_RUN_MAX) {
        return false;
    }
    return close_enough(end, next) && top - start <= MERGE_RUN_MAX;
}

/* A repeated walk reads the same regions in the same order: the address orders earlier batches
 * of N regions (K of them not empty) sorted into are tried first, and one is kept when it
 * still sorts these (one pass each, no sort). Returns whether b->keys holds them in address
 * order. */
static bool reuse_order(struct proc_batch *b, const struct proc_iov *iov, size_t n, size_t k)
{
    for (size_t s = 0; s < ORDER_SLOTS; s++) {
        const struct batch_order *o = &b->orders[s];
        if (o->order == NULL || n != o->n || k != o->k) {
            continue;
        }
        uint64_t prev = 0;
        size_t i = 0;
        for (; i < k; i++) {
            uint32_t at = o->order[i];
            /* An order names K distinct regions; all of them must still be not empty. */
            if (at >= n || iov[at].len == 0 || iov[at].addr < prev) {
                break;
            }
            prev = iov[at].addr;
            b->keys[i] = (struct merge_key){prev, at};
        }
        if (i == k) {
            return true;
        }
    }
    return false;
}

/* Keeps the order b->keys[0..K) of a batch of N regions for the batches after it (in the next
 * slot, the oldest order giving way; not kept when there is no memory for it). Sized to the
 * batch: a one-shot dump's few small batches touch no fresh pages for it. */
static void keep_order(struct proc_batch *b, size_t n, size_t k)
{
    struct batch_order *o = &b->orders[b->order_next];
    if (o->cap < k) {
        uint32_t *fresh = realloc(o->order, k * sizeof *fresh);
        if (fresh == NULL) {
            return;
        }
        o->order = fresh;
        o->cap = k;
    }
    for (size_t i = 0; i < k; i++) {
        o->order[i] = b->keys[i].index;
    }
    o->n = n;
    o->k = k;
    b->order_next = (b->order_next + 1) % ORDER_SLOTS;
}

/* Reads the N regions as fewer, merged ones where they lie close together. Returns 0 when
 * done, 1 when merging would not help or failed (the caller then reads them as they are). */
static int read_merged(struct proc_batch *b, const struct proc_iov *iov, size_t n,
                       proc_batch_reader read, void *ctx)
{
    if (n < 2) {
        return 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k += iov[i].len > 0;
    }
    if (!reuse_order(b, iov, n, k)) {
        k = 0;
        for (size_t i = 0; i < n; i++) {
            if (iov[i].len > 0) {
                b->keys[k++] = (struct merge_key){iov[i].addr, (uint32_t)i};
            }
        }
        qsort(b->keys, k, sizeof *b->keys, cmp_key);
        keep_order(b, n, k);
    }
    /* The merged regions (DST: the region itself when it stands alone, NULL when it holds
     * several) and the bounce space they need. */
    size_t m = 0;
    size_t bounce = 0;
    for (size_t i = 0; i < k; i++) {
        const struct proc_iov *r = &iov[b->keys[i].index];
        uint64_t end = r->addr + r->len;
        if (m > 0 && mergeable(b->merged[m - 1].addr + b->merged[m - 1].len, b->merged[m - 1].addr,
                               r->addr, end)) {
            struct proc_iov *g = &b->merged[m - 1];
            if (end > g->addr + g->len) {
                g->len = (size_t)(end - g->addr);
            }
            g->dst = NULL;
            continue;
        }
        b->merged[m++] = (struct proc_iov){r->addr, r->dst, r->len};
    }
    if (m == k) {
        return 1;
    }
    for (size_t j = 0; j < m; j++) {
        bounce += b->merged[j].dst == NULL ? b->merged[j].len : 0;
    }
    if (bounce > b->bounce_cap) {
        /* Nothing in it is kept: a fresh buffer, grown by half or more, not a realloc. */
        size_t grown = b->bounce_cap + b->bounce_cap / 2;
        size_t ncap = bounce > grown ? bounce : grown;
        free(b->bounce);
        b->bounce = malloc(ncap);
        b->bounce_cap = b->bounce != NULL ? ncap : 0;
        if (b->bounce == NULL) {
            return 1;
        }
    }
    size_t at = 0;
    for (size_t j = 0; j < m; j++) {
        if (b->merged[j].dst == NULL) {
            b->merged[j].dst = b->bounce + at;
            at += b->merged[j].len;
        }
    }
    if (read(ctx, b->merged, m) < 0) {
        return 1;
    }
    /* Each region out of the merged one that holds it (both in address order); a region read
     * on its own is in place already. */
    size_t j = 0;
    for (size_t i = 0; i < k; i++) {
        const struct proc_iov *r = &iov[b->keys[i].index];
        while (r->addr + r->len > b->merged[j].addr + b->merged[j].len) {
            j++;
        }
        if (b->merged[j].dst != r->dst) {
            memcpy(r->dst, (const uint8_t *)b->merged[j].dst + (r->addr - b->merged[j].addr),
                   r->len);
        }
    }
    return 0;
}

static void record(struct proc_batch *b, const struct proc_iov *iov, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (iov[i].len == 0 || b->n_record == PROC_READAHEAD_REGIONS ||
            iov[i].len > PROC_READAHEAD_BYTES - b->record_bytes) {
            continue;
        }
        if (b->n_record == b->cap_record) {
            size_t ncap = b->cap_record ? b->cap_record * 2 : 1024;
            struct proc_iov *fresh = realloc(b->record, ncap * sizeof *fresh);
            if (fresh == NULL) {
                return;
            }
            b->record = fresh;
            b->cap_record = ncap;
        }
        b->record[b->n_record++] = (struct proc_iov){iov[i].addr, NULL, iov[i].len};
        b->record_bytes += iov[i].len;
    }
}

/* The read-ahead copy of [ADDR, ADDR + LEN), or NULL. */
static const uint8_t *served(const struct proc_batch *b, uint64_t addr, size_t len)
{
    size_t lo = 0;
    size_t hi = b->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->spans[mid].addr <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) {
        return NULL;
    }
    const struct span *s = &b->spans[lo - 1];
    if (!s->ok || addr - s->addr > s->len || len > s->len - (addr - s->addr)) {
        return NULL;
    }
    return b->data + s->off + (addr - s->addr);
}

int proc_batch_read(struct proc_batch *b, const struct proc_iov *iov, size_t n,
                    proc_batch_reader read, void *ctx, struct proc_iov **rest, size_t *n_rest)
{
    *rest = NULL;
    *n_rest = n;
    if (b->recording) {
        record(b, iov, n);
    }
    if (b->serving) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *copy = iov[i].len > 0 ? served(b, iov[i].addr, iov[i].len) : NULL;
            if (copy != NULL) {
                memcpy(iov[i].dst, copy, iov[i].len);
            } else {
                b->rest[k++] = iov[i];
            }
        }
        if (k == 0) {
            return 0;
        }
        iov = b->rest;
        n = k;
        *rest = b->rest;
        *n_rest = k;
    }
    return read_merged(b, iov, n, read, ctx) == 0 ? 0 : 1;
}

static int cmp_region(const void *a, const void *b)
{
    const struct proc_iov *x = a;
    const struct proc_iov *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts the N regions at V by address, stable, with TMP (room for N) as scratch: a radix sort
 * over the bytes in which the addresses differ (a walk's reads lie in a few mappings, so most of
 * the high bytes are all alike). Neither allocates nor touches fresh memory, unlike qsort(),
 * whose merge sort takes a scratch array of its own from malloc each call (tens of thousands
 * of regions a snapshot with many tasks). */
static void sort_regions(struct proc_iov *v, struct proc_iov *tmp, size_t n)
{
    uint64_t differ = 0;
    bool sorted = true;
    for (size_t i = 1; i < n; i++) {
        differ |= v[i].addr ^ v[0].addr;
        sorted = sorted && v[i - 1].addr <= v[i].addr;
    }
    if (sorted) {
        return;
    }
    struct proc_iov *from = v;
    struct proc_iov *to = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (((differ >> shift) & 0xff) == 0) {
            continue;
        }
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) {
            count[((from[i].addr >> shift) & 0xff) + 1]++;
        }
        for (size_t d = 1; d < 257; d++) {
            count[d] += count[d - 1];
        }
        for (size_t i = 0; i < n; i++) {
            to[count[(from[i].addr >> shift) & 0xff]++] = from[i];
        }
        struct proc_iov *swap = from;
        from = to;
        to = swap;
    }
    if (from != v) {
        memcpy(v, from, n * sizeof *v);
    }
}

/* Reads spans [FROM, TO) in groups of PROC_IOV_MAX; a group that fails is split in halves, so
 * that one region gone costs a few calls, not one per region. */
static void read_spans(struct proc_batch *b, size_t from, size_t to, proc_batch_reader read,
                       void *ctx)
{
    while (from < to) {
        size_t k = to - from < PROC_IOV_MAX ? to - from : PROC_IOV_MAX;
        for (size_t j = 0; j < k; j++) {
            const struct span *s = &b->spans[from + j];
            b->merged[j] = (struct proc_iov){s->addr, b->data + s->off, s->len};
        }
        bool ok = read(ctx, b->merged, k) == 0;
        if (!ok && k > 1) {
            read_spans(b, from, from + k / 2, read, ctx);
            read_spans(b, from + k / 2, from + k, read, ctx);
        } else {
            for (size_t j = 0; j < k; j++) {
                b->spans[from + j].ok = ok;
            }
        }
        from += k;
    }
}

void proc_batch_readahead_begin(struct proc_batch *b, proc_batch_reader read, void *ctx)
{
    if (b == NULL) {
        return;
    }
    b->serving = false;
    b->n_spans = 0;
    if (b->n_record > b->cap_tmp) {
        free(b->record_tmp);
        b->record_tmp = malloc(b->cap_record * sizeof *b->record_tmp);
        b->cap_tmp = b->record_tmp != NULL ? b->cap_record : 0;
    }
    if (b->n_record > 0 && b->record_tmp != NULL) {
        sort_regions(b->record, b->record_tmp, b->n_record);
    } else if (b->n_record > 0) {
        qsort(b->record, b->n_record, sizeof *b->record, cmp_region);
    }
    size_t bytes = 0;
    for (size_t i = 0; i < b->n_record; i++) {
        const struct proc_iov *r = &b->record[i];
        uint64_t end = r->addr + r->len;
        if (b->n_spans > 0) {
            struct span *s = &b->spans[b->n_spans - 1];
            uint64_t s_end = s->addr + s->len;
            if (close_enough(s_end, r->addr) && (end <= s_end || end - s->addr <= MERGE_RUN_MAX)) {
                if (end > s_end) {
                    bytes += (size_t)(end - s_end);
                    s->len = (size_t)(end - s->addr);
                }
                continue;
            }
        }
        if (b->n_spans == b->cap_spans) {
            size_t ncap = b->cap_spans ? b->cap_spans * 2 : 256;
            struct span *fresh = realloc(b->spans, ncap * sizeof *fresh);
            if (fresh == NULL) {
                break;
            }
            b->spans = fresh;
            b->cap_spans = ncap;
        }
        b->spans[b->n_spans++] = (struct span){r->addr, r->len, 0, false};
        bytes += r->len;
    }
    if (bytes > b->data_cap) {
        uint8_t *fresh = realloc(b->data, bytes);
        if (fresh == NULL) {
            b->n_spans = 0;
            bytes = 0;
        } else {
            b->data = fresh;
            b->data_cap = bytes;
        }
    }
    size_t off = 0;
    for (size_t i = 0; i < b->n_spans; i++) {
        b->spans[i].off = off;
        off += b->spans[i].len;
    }
    read_spans(b, 0, b->n_spans, read, ctx);
    b->n_record = 0;
    b->record_bytes = 0;
    b->recording = true;
    b->serving = b->n_spans > 0;
}

void proc_batch_readahead_end(struct proc_batch *b)
{
    if (b == NULL) {
        return;
    }
    b->serving = false;
    b->recording = false;
}

static int backend_reader(void *ctx, const struct proc_iov *iov, size_t n)
{
    return proc_backend_read(ctx, iov, n, NULL);
}

/* The same limits as every read (no batch), never the read-ahead. */
int proc_read_now(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err)
{
    int rc = proc_batch_start(NULL, &iov, &n, backend_reader, p, err);
    return rc <= 0 ? rc : proc_backend_read(p, iov, n, err);
}

int proc_read_many(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err)
{
    int rc = proc_batch_start(proc_backend_batch(p), &iov, &n, backend_reader, p, err);
    return rc <= 0 ? rc : proc_backend_read(p, iov, n, err);
}

void proc_readahead_begin(struct proc *p)
{
    proc_batch_readahead_begin(proc_backend_batch(p), backend_reader, p);
}

void proc_readahead_end(struct proc *p)
{
    proc_batch_readahead_end(proc_backend_batch(p));
}

void proc_readahead_each(const struct proc *p, proc_region_fn fn, void *ctx)
{
    proc_batch_readahead_each(proc_backend_batch(p), fn, ctx);
}

/* One region is a batch of one, whichever backend reads it. */
int proc_read_bytes(struct proc *p, uint64_t addr, void *dst, size_t len, struct pt_error *err)
{
    struct proc_iov one = {.addr = addr, .dst = dst, .len = len};
    return proc_read_many(p, &one, 1, err);
}

int proc_batch_start(struct proc_batch *b, const struct proc_iov **iov, size_t *n,
                     proc_batch_reader read, void *ctx, struct pt_error *err)
{
    if (check(*iov, *n, err) < 0) {
        return -1;
    }
    struct proc_iov *rest = NULL;
    size_t n_rest = 0;
    if (b != NULL && proc_batch_read(b, *iov, *n, read, ctx, &rest, &n_rest) == 0) {
        return 0;
    }
    if (rest != NULL) {
        *iov = rest;
        *n = n_rest;
    }
    return 1;
}

void proc_batch_readahead_each(const struct proc_batch *b, proc_region_fn fn, void *ctx)
{
    for (size_t i = 0; b != NULL && i < b->n_record; i++) {
        if (fn(ctx, b->record[i].addr, b->record[i].len) != 0) {
            return;
        }
    }
}
