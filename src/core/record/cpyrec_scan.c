/* cpyrec_scan: CPython's sample records, streamed (zstd or plain) and decoded into rec_samples,
 * every count, index and depth checked before it is used. */
#include "config.h"

#include "core/record/cpyrec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record/cpyrec_int.h"
#include "core/util/error.h"

/* Where the record being decoded started and which it is, for the damage sentence. */
struct at {
    uint64_t offset;
    uint64_t record;
};

static int stream_start(struct cpyrec *r, struct pt_error *err)
{
    struct stream *s = &r->st;
    if (s->buf == NULL) {
        s->buf = malloc(CPYREC_CHUNK);
        if (s->buf == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "a read buffer");
        }
    }
    s->in_off = HDR_SIZE;
    s->in_end = r->strings_off;
    s->pos = 0;
    s->len = 0;
    s->consumed = 0;
    s->eof = false;
    s->fault[0] = '\0';
    if (r->compression != COMPRESSION_ZSTD) {
        return 0;
    }
    if (s->in == NULL) {
        s->in = malloc(CPYREC_CHUNK);
        s->zs = ZSTD_createDStream();
        if (s->in == NULL || s->zs == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "a zstd stream");
        }
    }
    ZSTD_DCtx_reset(s->zs, ZSTD_reset_session_and_parameters);
    /* A hostile frame header may ask for a window of gigabytes; the writer's level 5 needs a
     * few MiB. */
    if (ZSTD_isError(ZSTD_DCtx_setParameter(s->zs, ZSTD_d_windowLogMax, CPYREC_ZSTD_WINDOW_LOG))) {
        return pt_error_set(err, PT_E_NOMEM, 0, "setting up a zstd stream");
    }
    s->zin = (ZSTD_inBuffer){s->in, 0, 0};
    s->zret = 0;
    return 0;
}

static void stream_fault(struct stream *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void stream_fault(struct stream *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fault, sizeof s->fault, fmt, ap);
    va_end(ap);
    s->eof = true;
}

static bool fill_plain(struct cpyrec *r, struct stream *s, struct pt_error *err)
{
    uint64_t left = s->in_end - s->in_off;
    size_t n = left < CPYREC_CHUNK ? (size_t)left : CPYREC_CHUNK;
    if (n == 0) {
        s->eof = true;
        return false;
    }
    if (cpyrec_read_at(r, s->in_off, s->buf, n, err) < 0) {
        stream_fault(s, "%s", err != NULL ? err->msg : "read failed");
        return false;
    }
    s->in_off += n;
    s->len = n;
    return true;
}

/* Decompresses into buf until it holds something. Each turn consumes input or produces
 * output, and the input is finite, so the loop ends. */
static bool fill_zstd(struct cpyrec *r, struct stream *s, struct pt_error *err)
{
    for (;;) {
        if (s->zin.pos == s->zin.size && s->in_off < s->in_end) {
            uint64_t left = s->in_end - s->in_off;
            size_t n = left < CPYREC_CHUNK ? (size_t)left : CPYREC_CHUNK;
            if (cpyrec_read_at(r, s->in_off, s->in, n, err) < 0) {
                stream_fault(s, "%s", err != NULL ? err->msg : "read failed");
                return false;
            }
            s->in_off += n;
            s->zin = (ZSTD_inBuffer){s->in, n, 0};
        }
        if (s->zin.pos == s->zin.size && s->in_off >= s->in_end && s->zret == 0) {
            s->eof = true;
            return false;
        }
        size_t before = s->zin.pos;
        ZSTD_outBuffer out = {s->buf, CPYREC_CHUNK, 0};
        size_t ret = ZSTD_decompressStream(s->zs, &out, &s->zin);
        if (ZSTD_isError(ret)) {
            stream_fault(s, "zstd: %s near compressed byte %" PRIu64, ZSTD_getErrorName(ret),
                         s->in_off - (s->zin.size - s->zin.pos));
            return false;
        }
        s->zret = ret;
        if (out.pos > 0) {
            s->len = out.pos;
            return true;
        }
        /* Input is refilled above whenever the file has more, so no progress means the
         * stream stopped inside a frame (or zstd is stuck, which would loop). */
        if (s->zin.pos == before) {
            stream_fault(s, s->zin.pos == s->zin.size ? "the zstd stream is cut short"
                                                      : "zstd makes no progress");
            return false;
        }
    }
}

static bool get_u8(struct cpyrec *r, uint8_t *out, struct pt_error *err)
{
    struct stream *s = &r->st;
    if (s->pos == s->len) {
        if (s->eof) {
            return false;
        }
        s->consumed += s->len;
        s->pos = 0;
        s->len = 0;
        bool ok = r->compression == COMPRESSION_ZSTD ? fill_zstd(r, s, err) : fill_plain(r, s, err);
        if (!ok) {
            return false;
        }
    }
    *out = s->buf[s->pos++];
    return true;
}

static uint64_t stream_offset(const struct stream *s)
{
    return s->consumed + s->pos;
}

static int damage(struct cpyrec *r, const struct at *at, struct pt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Keeps the sentence and fails the scan with it. */
static int damage(struct cpyrec *r, const struct at *at, struct pt_error *err, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(r->damage, sizeof r->damage,
             "record %" PRIu64 " at byte %" PRIu64 " of the sample data: %s", at->record,
             at->offset, why);
    return pt_error_set(err, PT_E_FORMAT, 0, "%s", r->damage);
}

static int short_read(struct cpyrec *r, const struct at *at, struct pt_error *err, const char *what)
{
    if (r->st.fault[0] != '\0') {
        return damage(r, at, err, "%s: %s", what, r->st.fault);
    }
    return damage(r, at, err, "the data ends inside its %s", what);
}

static bool get_varint(struct cpyrec *r, uint64_t *out, struct pt_error *err)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b;
        if (!get_u8(r, &b, err)) {
            return false;
        }
        if (shift == 63 && b > 1) {
            return false;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

static int read_fixed(struct cpyrec *r, uint8_t *p, size_t n, bool *clean_end, struct pt_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!get_u8(r, &p[i], err)) {
            *clean_end = i == 0 && r->st.fault[0] == '\0';
            return -1;
        }
    }
    return 0;
}

static struct cpy_thread *find_thread(struct cpyrec *r, uint64_t id, uint32_t interp,
                                      const struct at *at, struct pt_error *err)
{
    for (size_t i = 0; i < r->n_threads; i++) {
        if (r->threads[i].thread_id == id && r->threads[i].interp == interp) {
            return &r->threads[i];
        }
    }
    if (r->n_threads >= r->n_threads_declared) {
        damage(r, at, err, "more threads than the %" PRIu32 " the header declares",
               r->n_threads_declared);
        return NULL;
    }
    if (r->threads == NULL) {
        r->threads = calloc(r->n_threads_declared, sizeof *r->threads);
        r->theap = calloc(r->n_threads_declared, sizeof *r->theap);
        if (r->threads == NULL || r->theap == NULL) {
            pt_error_set(err, PT_E_NOMEM, 0, "%" PRIu32 " threads", r->n_threads_declared);
            return NULL;
        }
    }
    struct cpy_thread *t = &r->threads[r->n_threads++];
    *t = (struct cpy_thread){id, interp, r->start_us, NULL, 0, 0, UINT32_MAX, 0};
    cpyrec_order_thread_added(r, t);
    return t;
}

static int reserve_stack(struct cpyrec *r, struct cpy_thread *t, uint64_t depth,
                         const struct at *at, struct pt_error *err)
{
    if (depth > CPYREC_STACK) {
        return damage(r, at, err, "a stack of %" PRIu64 " frames (at most %d)", depth,
                      (int)CPYREC_STACK);
    }
    if (depth <= t->cap) {
        return 0;
    }
    size_t cap = t->cap > 0 ? t->cap : 64;
    while (cap < depth) {
        cap *= 2;
    }
    uint32_t *stack = realloc(t->stack, cap * sizeof *stack);
    if (stack == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "a stack of %zu frames", cap);
    }
    t->stack = stack;
    t->cap = cap;
    return 0;
}

/* Reads N frame indices into DST, each checked against the frame table. */
static int read_indices(struct cpyrec *r, uint32_t *dst, uint64_t n, const struct at *at,
                        struct pt_error *err)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v;
        if (!get_varint(r, &v, err)) {
            return short_read(r, at, err, "frame indices");
        }
        if (v >= r->n_frames) {
            return damage(r, at, err, "frame index %" PRIu64 " of %" PRIu32, v, r->n_frames);
        }
        dst[i] = (uint32_t)v;
    }
    return 0;
}

/* FULL, SUFFIX and POP_PUSH: the thread's new stack from its last one. */
static int read_stack(struct cpyrec *r, struct cpy_thread *t, uint8_t enc, const struct at *at,
                      struct pt_error *err)
{
    uint64_t a;
    uint64_t b = 0;
    if (!get_varint(r, &a, err) || (enc != STACK_FULL && !get_varint(r, &b, err))) {
        return short_read(r, at, err, "stack counts");
    }
    cpyrec_order_stack_changed(r, t);
    if (a > CPYREC_STACK || b > CPYREC_STACK) {
        return damage(r, at, err, "stack counts %" PRIu64 " and %" PRIu64 " (at most %d)", a, b,
                      (int)CPYREC_STACK);
    }
    if (enc == STACK_FULL) {
        if (reserve_stack(r, t, a, at, err) < 0 || read_indices(r, t->stack, a, at, err) < 0) {
            return -1;
        }
        t->depth = (size_t)a;
        return 0;
    }
    size_t keep;
    size_t from;
    if (enc == STACK_SUFFIX) {
        if (a > t->depth) {
            return damage(r, at, err, "%" PRIu64 " frames shared of a stack of %zu", a, t->depth);
        }
        keep = (size_t)a;
        from = t->depth - keep;
    } else {
        /* CPython's reader lets a pop take more frames than there are. */
        keep = a < t->depth ? t->depth - (size_t)a : 0;
        from = (size_t)(a < t->depth ? a : t->depth);
    }
    if (reserve_stack(r, t, keep + b, at, err) < 0) {
        return -1;
    }
    if (keep > 0) {
        memmove(t->stack + b, t->stack + from, keep * sizeof *t->stack);
    }
    if (read_indices(r, t->stack, b, at, err) < 0) {
        return -1;
    }
    t->depth = keep + (size_t)b;
    return 0;
}

/* What the samples read so far came to (delivered: read and held back or handed on). */
struct scan {
    uint64_t delivered;
    double tmin;
    double tmax;
    double from;
    double to;
    rec_sample_fn fn;
    void *ctx;
    int stopped; /* FN's non-zero, which ends the scan */
};

/* One thread-sample: the thread's stack at its time with STATUS, held back until it can be
 * delivered in order. */
static int emit(struct cpyrec *r, struct scan *sc, struct cpy_thread *t, uint64_t delta,
                uint8_t status, const struct at *at, struct pt_error *err)
{
    uint64_t us;
    if (__builtin_add_overflow(t->prev_us, delta, &us)) {
        return damage(r, at, err, "a time delta of %" PRIu64 " overflows", delta);
    }
    t->prev_us = us;
    cpyrec_order_thread_advanced(r, t);
    double tsec = ((double)us - (double)r->start_us) / 1e6;
    if (sc->delivered == 0 || tsec < sc->tmin) {
        sc->tmin = tsec;
    }
    if (sc->delivered == 0 || tsec > sc->tmax) {
        sc->tmax = tsec;
    }
    sc->delivered++;
    if (cpyrec_order_add(r, t, us, status, err) < 0) {
        return -1;
    }
    /* A record may repeat a stack for as many samples as the header declares: the buffer's
     * bound is kept inside it too. */
    if (r->n_pending > CPYREC_REORDER || r->snap_frames > CPYREC_REORDER_FRAMES) {
        int rc = cpyrec_order_flush(r, false, sc->from, sc->to, sc->fn, sc->ctx, err);
        if (rc != 0) {
            sc->stopped = rc;
            return -1;
        }
    }
    return 0;
}

static int read_record(struct cpyrec *r, struct scan *sc, const struct at *at, bool *end,
                       struct pt_error *err)
{
    uint8_t fixed[RECORD_FIXED];
    bool clean = false;
    if (read_fixed(r, fixed, sizeof fixed, &clean, err) < 0) {
        if (clean) {
            *end = true;
            return 0;
        }
        return short_read(r, at, err, "thread and type");
    }
    struct cpy_thread *t =
        find_thread(r, cpyrec_get_u64(r, fixed), cpyrec_get_u32(r, fixed + 8), at, err);
    if (t == NULL) {
        return -1;
    }
    uint8_t enc = fixed[12];
    if (enc > STACK_POP_PUSH) {
        return damage(r, at, err, "unknown record type %u", enc);
    }
    uint64_t count = 1;
    if (enc == STACK_REPEAT && !get_varint(r, &count, err)) {
        return short_read(r, at, err, "repeat count");
    }
    /* delivered never passes n_samples: this check comes before every record */
    if (count > r->n_samples - sc->delivered) {
        return damage(r, at, err,
                      "%" PRIu64 " more samples than the %" PRIu64 " the header declares", count,
                      r->n_samples);
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t delta;
        uint8_t status;
        if (!get_varint(r, &delta, err) || !get_u8(r, &status, err)) {
            return short_read(r, at, err, "time and status");
        }
        if (enc != STACK_REPEAT && read_stack(r, t, enc, at, err) < 0) {
            return -1;
        }
        if (emit(r, sc, t, delta, status, at, err) < 0) {
            return -1;
        }
    }
    return 0;
}

int cpyrec_scan(struct cpyrec *r, double from, double to, rec_sample_fn fn, void *ctx,
                struct pt_error *err)
{
    r->damage[0] = '\0';
    cpyrec_order_reset(r);
    cpyrec_threads_free(r);
    if (stream_start(r, err) < 0) {
        return -1;
    }
    struct scan sc = {0, 0, 0, from, to, fn, ctx, 0};
    struct at at = {0, 0};
    for (;;) {
        at.offset = stream_offset(&r->st);
        bool end = false;
        if (read_record(r, &sc, &at, &end, err) < 0) {
            if (sc.stopped != 0) {
                return sc.stopped;
            }
            /* the samples before the damage, then the damage */
            struct pt_error flush_err = {0};
            int rc = cpyrec_order_flush(r, true, from, to, fn, ctx, &flush_err);
            return rc != 0 ? rc : -1;
        }
        if (end) {
            break;
        }
        at.record++;
        int rc = cpyrec_order_flush(r, false, from, to, fn, ctx, err);
        if (rc != 0) {
            return rc;
        }
    }
    int rc = cpyrec_order_flush(r, true, from, to, fn, ctx, err);
    if (rc != 0) {
        return rc;
    }
    if (r->st.fault[0] != '\0') {
        return damage(r, &at, err, "%s", r->st.fault);
    }
    if (sc.delivered != r->n_samples) {
        return damage(r, &at, err,
                      "the data ends after %" PRIu64 " of the header's %" PRIu64 " samples",
                      sc.delivered, r->n_samples);
    }
    r->scanned_duration = sc.delivered > 0 ? sc.tmax - sc.tmin : 0;
    return 0;
}
