/* recwrite: a .pyrec recording written as the samples come (doc/recording.md). */
#include "config.h"

#include "core/record/recwrite.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/pyobj/code.h"
#include "core/record/recformat.h"
#include "core/record/snapcodec.h"
#include "core/util/error.h"
#include "core/util/strbuf.h"
#include "core/util/varint.h"
#include "core/walk/sample.h"

enum {
    ZSTD_LEVEL = 9,
    MAP_MIN = 256, /* slots of a table's hash map to start with */
};

/* A key to index map, open addressing, keys never 0. */
struct map {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap; /* a power of two */
    size_t n;
};

/* A thread's last thread-sample in this chunk: the frames to take the next one's delta to. */
/* A frame as the unwinder gave it. */
struct raw_frame {
    uint64_t serial;
    uint32_t offset;
    uint8_t kind;
    uint8_t unreadable;
};

struct last_stack {
    uint32_t flags;   /* its last flags */
    struct raw_frame *raw; /* its last frames as given, innermost first (N_RAW of them) */
    size_t n_raw;
    size_t cap_raw;
    uint32_t *frames; /* the chunk's frame indexes, innermost first */
    size_t n;
    size_t cap;
};

struct recwriter {
    int fd;
    bool failed;
    struct strbuf chunk;  /* the records of the chunk being made */
    uint8_t *packed;      /* its compressed form */
    size_t packed_cap;
    struct strbuf body;   /* a record being made while its definitions go into CHUNK */
    struct strbuf same;   /* the same sample, as the changes to the last */
    bool offsets;         /* frames keep their instruction offsets (else lines only) */
    uint32_t *order;      /* the chunk's thread indexes of the last sample, in its order */
    size_t n_order;
    size_t cap_order;
    ZSTD_CCtx *zc;
    uint32_t flags;
    uint32_t n_samples;
    double t_first;
    double t_last;
    bool open;            /* a chunk has begun */
    uint64_t last_us;     /* the time of its last record */
    struct map codes;     /* code serial -> chunk code index */
    struct map frames;    /* hash of (code index, offset, kind, reason) -> frame index */
    uint32_t n_codes;
    uint32_t n_frames;
    /* The chunk's threads (index by order) and each one's last stack. */
    struct thread_def {
        int64_t interp_id;
        pid_t tid;
        uint64_t thread_id;
        bool main;
        char *name; /* NULL unknown */
        size_t name_len;
    } *threads;
    size_t n_threads;
    size_t cap_threads;
    struct last_stack *stacks; /* per chunk thread index */
    uint32_t *scratch;         /* this thread-sample's frame indexes */
    size_t cap_scratch;
    uint64_t bytes;
    uint64_t samples;
};

static void map_clear(struct map *m)
{
    if (m->keys != NULL) {
        memset(m->keys, 0, m->cap * sizeof *m->keys);
    }
    m->n = 0;
}

static void map_free(struct map *m)
{
    free(m->keys);
    free(m->vals);
    *m = (struct map){0};
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* The slot of KEY: where it is, or the empty one where it would go. */
static size_t map_slot(const struct map *m, uint64_t key)
{
    size_t i = mix(key) & (m->cap - 1);
    while (m->keys[i] != 0 && m->keys[i] != key) {
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

static bool map_grow(struct map *m)
{
    size_t cap = m->cap != 0 ? m->cap * 2 : MAP_MIN;
    uint64_t *keys = calloc(cap, sizeof *keys);
    uint32_t *vals = malloc(cap * sizeof *vals);
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return false;
    }
    struct map old = *m;
    *m = (struct map){keys, vals, cap, 0};
    for (size_t i = 0; i < old.cap; i++) {
        if (old.keys[i] != 0) {
            size_t s = map_slot(m, old.keys[i]);
            m->keys[s] = old.keys[i];
            m->vals[s] = old.vals[i];
            m->n++;
        }
    }
    free(old.keys);
    free(old.vals);
    return true;
}

/* Whether KEY is in M (its value in *VAL). */
static bool map_get(const struct map *m, uint64_t key, uint32_t *val)
{
    if (m->cap == 0) {
        return false;
    }
    size_t s = map_slot(m, key);
    if (m->keys[s] == 0) {
        return false;
    }
    *val = m->vals[s];
    return true;
}

static bool map_put(struct map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap && !map_grow(m)) {
        return false;
    }
    size_t s = map_slot(m, key);
    if (m->keys[s] == 0) {
        m->n++;
    }
    m->keys[s] = key;
    m->vals[s] = val;
    return true;
}

static int fail_io(struct recwriter *w, struct pt_error *err, const char *what, int e)
{
    w->failed = true;
    return pt_error_set(err, PT_E_IO, e, "could not write the recording (%s)", what);
}

static int write_all(struct recwriter *w, const void *p, size_t n, struct pt_error *err)
{
    const char *b = p;
    while (n > 0) {
        ssize_t k = write(w->fd, b, n);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return fail_io(w, err, "write", k < 0 ? errno : EIO);
        }
        b += k;
        n -= (size_t)k;
        w->bytes += (uint64_t)k;
    }
    return 0;
}

static uint8_t tri(enum snap_bool b)
{
    return b == SNAP_YES ? 1 : b == SNAP_NO ? 0 : 2;
}

static int write_header(struct recwriter *w, const struct rec_header *h, struct pt_error *err)
{
    struct strbuf sb = {0};
    varint_put(&sb, (uint64_t)(h->pid > 0 ? h->pid : 0));
    varint_put(&sb, h->cmdline != NULL ? h->n_cmdline + 1 : 0);
    for (size_t i = 0; h->cmdline != NULL && i < h->n_cmdline; i++) {
        varint_put_str(&sb, h->cmdline[i]);
    }
    varint_put_str(&sb, h->python_version);
    varint_put(&sb, h->hexversion);
    varint_put(&sb, h->free_threaded);
    varint_put(&sb, tri(h->debug_build));
    varint_put_str(&sb, h->binary);
    varint_put_str(&sb, (struct snap_str){"pytop " PACKAGE_VERSION,
                                          strlen("pytop " PACKAGE_VERSION)});
    varint_put_f64(&sb, h->rate_hz);
    varint_put_f64(&sb, h->interval_s);
    varint_put_f64(&sb, h->start_wall);
    varint_put_f64(&sb, h->started);
    if (sb.failed || sb.len > RECFORMAT_HEADER_MAX) {
        strbuf_free(&sb);
        return pt_error_set(err, sb.failed ? PT_E_NOMEM : PT_E_LIMIT, 0,
                            "the recording's header is too long");
    }
    uint8_t head[RECFORMAT_MAGIC_LEN + 5];
    memcpy(head, RECFORMAT_MAGIC, RECFORMAT_MAGIC_LEN);
    head[RECFORMAT_MAGIC_LEN] = RECFORMAT_VERSION;
    recformat_put_le32(head + RECFORMAT_MAGIC_LEN + 1, (uint32_t)sb.len);
    uint8_t crc[4];
    recformat_put_le32(crc, (uint32_t)crc32(0, (const Bytef *)sb.data, (uInt)sb.len));
    int rc = write_all(w, head, sizeof head, err);
    if (rc == 0) {
        rc = write_all(w, sb.data, sb.len, err);
    }
    if (rc == 0) {
        rc = write_all(w, crc, sizeof crc, err);
    }
    strbuf_free(&sb);
    return rc;
}

void recwriter_header_from(struct rec_header *h, const struct snapshot *s, double rate,
                           double interval)
{
    *h = (struct rec_header){0};
    h->pid = s->pid;
    h->cmdline = s->cmdline;
    h->n_cmdline = s->n_cmdline;
    h->python_version = s->python.version;
    h->hexversion = s->python.hexversion;
    h->free_threaded = s->python.free_threaded;
    h->debug_build = s->python.debug_build;
    h->binary = s->python.binary;
    h->rate_hz = rate;
    h->interval_s = interval;
    h->start_wall = s->time;
    h->started = s->started;
}

struct recwriter *recwriter_open(int fd, const struct rec_header *h, struct pt_error *err)
{
    struct recwriter *w = calloc(1, sizeof *w);
    if (w == NULL || (w->zc = ZSTD_createCCtx()) == NULL) {
        free(w);
        close(fd);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        return NULL;
    }
    w->fd = fd;
    ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    if (write_header(w, h, err) < 0) {
        ZSTD_freeCCtx(w->zc);
        close(fd);
        free(w);
        return NULL;
    }
    return w;
}

/* Forgets the chunk's tables: the next chunk stands alone. */
static void chunk_reset(struct recwriter *w)
{
    w->chunk.len = 0;
    w->flags = 0;
    w->n_samples = 0;
    w->open = false;
    map_clear(&w->codes);
    map_clear(&w->frames);
    w->n_codes = 0;
    w->n_frames = 0;
    for (size_t i = 0; i < w->n_threads; i++) {
        free(w->threads[i].name);
        w->stacks[i].n = 0;
        w->stacks[i].n_raw = 0;
    }
    w->n_threads = 0;
    w->n_order = 0;
}

/* Compresses the chunk in hand and writes it whole, header first. */
static int chunk_flush(struct recwriter *w, struct pt_error *err)
{
    if (!w->open) {
        return 0;
    }
    if (w->chunk.failed) {
        w->failed = true;
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
    }
    size_t bound = ZSTD_compressBound(w->chunk.len);
    if (w->packed_cap < bound) {
        uint8_t *p = realloc(w->packed, bound);
        if (p == NULL) {
            w->failed = true;
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        }
        w->packed = p;
        w->packed_cap = bound;
    }
    size_t n = ZSTD_compress2(w->zc, w->packed, bound, w->chunk.data, w->chunk.len);
    if (ZSTD_isError(n) || n > RECFORMAT_CHUNK_MAX) {
        w->failed = true;
        return pt_error_set(err, PT_E_IO, 0, "could not compress the recording: %s",
                            ZSTD_isError(n) ? ZSTD_getErrorName(n) : "chunk too large");
    }
    const uint8_t *payload = w->packed;
    if (n >= w->chunk.len) {
        w->flags |= RECFORMAT_STORED;
        payload = (const uint8_t *)w->chunk.data;
        n = w->chunk.len;
    }
    uint8_t head[RECFORMAT_CHUNK_HEAD];
    memcpy(head, RECFORMAT_CHUNK_MAGIC, 4);
    recformat_put_le32(head + 4, w->flags);
    recformat_put_le32(head + 8, (uint32_t)n);
    recformat_put_le32(head + 12, (uint32_t)w->chunk.len);
    recformat_put_le32(head + 16, (uint32_t)crc32(0, (const Bytef *)payload, (uInt)n));
    recformat_put_le32(head + 20, w->n_samples);
    struct strbuf times = {0};
    varint_put_f64(&times, w->t_first);
    varint_put_f64(&times, w->t_last);
    if (times.failed) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
    }
    memcpy(head + 24, times.data, 16);
    strbuf_free(&times);
    /* A kill between the two writes, or in the second, leaves a chunk the reader finds short
     * (its length) or damaged (its sum), and reads no further. */
    int rc = write_all(w, head, sizeof head, err);
    if (rc == 0) {
        rc = write_all(w, payload, n, err);
    }
    chunk_reset(w);
    return rc;
}

/* Makes room for records at T: a new chunk when the one in hand is full or old. Returns the
 * time in microseconds, never before the chunk's last, or -1 (W->FAILED). */
static int chunk_ready(struct recwriter *w, double t, uint64_t *us, struct pt_error *err)
{
    if (w->failed) {
        return pt_error_set(err, PT_E_IO, 0, "the recording stopped at an earlier error");
    }
    if (!(t >= 0) || !isfinite(t) || t > 1e12) {
        t = w->open ? w->t_last : 0;
    }
    if (w->open && (w->chunk.len >= RECFORMAT_CHUNK_FLUSH ||
                    t - w->t_first >= RECFORMAT_CHUNK_SECONDS) &&
        chunk_flush(w, err) < 0) {
        return -1;
    }
    *us = (uint64_t)llround(t / RECFORMAT_TICK);
    if (!w->open) {
        w->open = true;
        w->t_first = t;
        w->t_last = t;
        w->last_us = *us;
        varint_put(&w->chunk, *us);
    }
    if (*us < w->last_us) {
        *us = w->last_us; /* time never runs back within a chunk */
    }
    if (t > w->t_last) {
        w->t_last = t;
    }
    return 0;
}

/* Appends a record's type and time step. */
static void record_put(struct recwriter *w, enum rec_record type, uint64_t us)
{
    uint8_t b = (uint8_t)type;
    strbuf_append(&w->chunk, (const char *)&b, 1);
    varint_put(&w->chunk, us - w->last_us);
    w->last_us = us;
}

/* The chunk's index of code CI, defined on first use. */
static int code_index(struct recwriter *w, const struct code_info *ci, uint32_t *idx)
{
    if (map_get(&w->codes, ci->serial, idx)) {
        return 0;
    }
    if (w->n_codes >= RECFORMAT_TABLE_MAX || !map_put(&w->codes, ci->serial, w->n_codes)) {
        return -1;
    }
    strbuf_append(&w->chunk, (const char *)&(uint8_t){RECORD_CODE}, 1);
    varint_put(&w->chunk, ci->serial);
    varint_put_str(&w->chunk, (struct snap_str){ci->qualname, ci->qualname_len});
    varint_put_str(&w->chunk, (struct snap_str){ci->name, ci->name_len});
    varint_put_str(&w->chunk, (struct snap_str){ci->filename, ci->filename_len});
    varint_put_signed(&w->chunk, ci->firstlineno);
    *idx = w->n_codes++;
    return 0;
}

/* The chunk's index of frame F, defined on first use (its line read from the code's table). */
static int frame_index(struct recwriter *w, const struct sample_frame *f, const struct py_layout *L,
                       uint32_t *idx)
{
    uint32_t code = 0; /* index + 1; 0 none */
    if (f->code != NULL) {
        uint32_t ci;
        if (code_index(w, f->code, &ci) < 0) {
            return -1;
        }
        code = ci + 1;
    }
    /* Exact keys: code indexes stay under 2^21, kinds and reasons under 8. */
    uint64_t tail = (uint64_t)code << 32 ^ (uint64_t)f->kind << 56 ^ (uint64_t)f->unreadable << 60;
    uint64_t key = (tail ^ (uint64_t)f->offset) | 1ULL << 63;
    uint32_t hit;
    if (map_get(&w->frames, key, &hit)) {
        *idx = hit;
        return 0;
    }
    int line = -1;
    uint32_t offset = w->offsets ? f->offset : SAMPLE_OFFSET_UNKNOWN;
    if (f->code != NULL && f->code->offsets_are_lines) {
        /* A recording's sample written again: the line stands in the offset. */
        line = f->offset != SAMPLE_OFFSET_UNKNOWN && f->offset <= INT32_MAX ? (int)f->offset : -1;
        offset = SAMPLE_OFFSET_UNKNOWN;
    } else if (f->code != NULL && f->offset != SAMPLE_OFFSET_UNKNOWN && L != NULL) {
        line = code_offset_line(f->code, L, f->offset);
    }
    /* Without instructions, the frames of one line are one. */
    uint64_t line_key = (tail ^ (uint32_t)line) & ~(1ULL << 63);
    line_key = line_key != 0 ? line_key : 1;
    if (!w->offsets && map_get(&w->frames, line_key, &hit)) {
        *idx = hit;
        return map_put(&w->frames, key, hit) ? 0 : -1;
    }
    if (w->n_frames >= RECFORMAT_TABLE_MAX || !map_put(&w->frames, key, w->n_frames) ||
        (!w->offsets && !map_put(&w->frames, line_key, w->n_frames))) {
        return -1;
    }
    strbuf_append(&w->chunk, (const char *)&(uint8_t){RECORD_FRAME}, 1);
    varint_put(&w->chunk, code);
    varint_put_signed(&w->chunk, line);
    varint_put(&w->chunk, offset == SAMPLE_OFFSET_UNKNOWN ? 0 : (uint64_t)offset + 1);
    varint_put(&w->chunk, (uint64_t)f->kind);
    varint_put(&w->chunk, (uint64_t)f->unreadable);
    *idx = w->n_frames++;
    return 0;
}

static bool same_name(const struct thread_def *d, const struct sample_thread *t)
{
    if (d->name == NULL || t->name == NULL) {
        return d->name == NULL && t->name == NULL;
    }
    return d->name_len == t->name_len && memcmp(d->name, t->name, t->name_len) == 0;
}

/* The chunk's index of thread T (a new one when its name changed). HINT: where it was. */
static int thread_index(struct recwriter *w, const struct sample_thread *t, size_t hint,
                        uint32_t *idx)
{
    for (size_t k = 0; k < w->n_threads; k++) {
        size_t i = (hint + k) % w->n_threads;
        const struct thread_def *d = &w->threads[i];
        if (d->tid == t->tid && d->thread_id == t->thread_id && d->interp_id == t->interp_id &&
            d->main == t->main && same_name(d, t)) {
            *idx = (uint32_t)i;
            return 0;
        }
    }
    if (w->n_threads >= RECFORMAT_TABLE_MAX) {
        return -1;
    }
    if (w->n_threads == w->cap_threads) {
        size_t cap = w->cap_threads != 0 ? w->cap_threads * 2 : 16;
        struct thread_def *d = realloc(w->threads, cap * sizeof *d);
        if (d == NULL) {
            return -1;
        }
        w->threads = d;
        struct last_stack *s = realloc(w->stacks, cap * sizeof *s);
        if (s == NULL) {
            return -1;
        }
        memset(s + w->cap_threads, 0, (cap - w->cap_threads) * sizeof *s);
        w->stacks = s;
        w->cap_threads = cap;
    }
    struct thread_def *d = &w->threads[w->n_threads];
    *d = (struct thread_def){t->interp_id, t->tid, t->thread_id, t->main, NULL, 0};
    if (t->name != NULL) {
        d->name = malloc(t->name_len + 1);
        if (d->name == NULL) {
            return -1;
        }
        memcpy(d->name, t->name, t->name_len);
        d->name_len = t->name_len;
    }
    w->stacks[w->n_threads].n = 0;
    w->stacks[w->n_threads].n_raw = 0;
    w->stacks[w->n_threads].flags = UINT32_MAX;
    strbuf_append(&w->chunk, (const char *)&(uint8_t){RECORD_THREAD}, 1);
    varint_put_signed(&w->chunk, t->interp_id);
    varint_put(&w->chunk, (uint64_t)(t->tid > 0 ? t->tid : 0));
    varint_put(&w->chunk, t->thread_id);
    varint_put_str(&w->chunk, (struct snap_str){t->name, t->name_len});
    varint_put(&w->chunk, t->main);
    *idx = (uint32_t)w->n_threads++;
    return 0;
}

static bool reserve_u32(uint32_t **p, size_t *cap, size_t n)
{
    if (n <= *cap) {
        return true;
    }
    size_t c = *cap != 0 ? *cap : 64;
    while (c < n) {
        c *= 2;
    }
    uint32_t *q = realloc(*p, c * sizeof *q);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

/* Defines what thread T's sample needs (its thread, its new frames) before the sample record:
 * the frame indexes go to W->SCRATCH (innermost first). */
static bool same_frame(const struct raw_frame *a, const struct sample_frame *f)
{
    return a->serial == f->code_serial && a->offset == f->offset && a->kind == f->kind &&
           a->unreadable == f->unreadable;
}

/* Defines what thread T's sample needs (its thread, its new frames) before the sample record:
 * the frame indexes go to W->SCRATCH (innermost first). The outermost frames that are the
 * thread's last ones, as the unwinder gave them, keep their indexes without a lookup. */
static int define_thread(struct recwriter *w, const struct sample_thread *t,
                         const struct py_layout *L, size_t hint, uint32_t *ti)
{
    size_t n = t->n_frames;
    if (thread_index(w, t, hint, ti) < 0 || !reserve_u32(&w->scratch, &w->cap_scratch, n)) {
        return -1;
    }
    struct last_stack *ls = &w->stacks[*ti];
    size_t keep = 0;
    while (keep < n && keep < ls->n_raw && ls->n_raw == ls->n &&
           same_frame(&ls->raw[ls->n - 1 - keep], &t->frames[n - 1 - keep])) {
        w->scratch[n - 1 - keep] = ls->frames[ls->n - 1 - keep];
        keep++;
    }
    for (size_t i = 0; i < n - keep; i++) {
        if (frame_index(w, &t->frames[i], L, &w->scratch[i]) < 0) {
            return -1;
        }
    }
    if (n > ls->cap_raw) {
        size_t cap = ls->cap_raw != 0 ? ls->cap_raw : 32;
        while (cap < n) {
            cap *= 2;
        }
        struct raw_frame *r = realloc(ls->raw, cap * sizeof *r);
        if (r == NULL) {
            return -1;
        }
        ls->raw = r;
        ls->cap_raw = cap;
    }
    /* At the same depth the kept outer frames are where they were: only the new ones move. */
    size_t fresh = ls->n_raw == n ? n - keep : n;
    for (size_t i = 0; i < fresh; i++) {
        const struct sample_frame *f = &t->frames[i];
        ls->raw[i] = (struct raw_frame){f->code_serial, f->offset, (uint8_t)f->kind,
                                        (uint8_t)f->unreadable};
    }
    ls->n_raw = n;
    return 0;
}

static uint32_t thread_flags(const struct sample_thread *t, enum snap_bool on_cpu)
{
    uint32_t f = (uint32_t)tri(t->gil) << RECFLAG_GIL |
                 (uint32_t)tri(t->gil_requested) << RECFLAG_GIL_REQUESTED |
                 (uint32_t)tri(on_cpu) << RECFLAG_ON_CPU |
                 (uint32_t)tri(t->has_exception) << RECFLAG_HAS_EXCEPTION |
                 (uint32_t)tri(t->in_gc) << RECFLAG_IN_GC;
    f |= t->frames_truncated ? RECFLAG_TRUNCATED : 0;
    f |= t->frames_torn ? RECFLAG_TORN : 0;
    f |= t->not_read ? RECFLAG_NOT_READ : 0;
    return f;
}

/* Thread TI's new stack (W->SCRATCH[0..N)) against its last: how many of the last's innermost
 * frames go (*POP) and how many new innermost frames come (*PUSH: SCRATCH[0..PUSH)); the last
 * becomes the new. */
static int stack_delta(struct recwriter *w, uint32_t ti, size_t n, size_t *pop, size_t *push)
{
    struct last_stack *ls = &w->stacks[ti];
    size_t keep = 0; /* outermost frames both share */
    while (keep < n && keep < ls->n && ls->frames[ls->n - 1 - keep] == w->scratch[n - 1 - keep]) {
        keep++;
    }
    *pop = ls->n - keep;
    *push = n - keep;
    if (!reserve_u32(&ls->frames, &ls->cap, n)) {
        return -1;
    }
    /* At the same depth only the frames inside the kept ones change. */
    size_t fresh = ls->n == n ? n - keep : n;
    if (fresh > 0) {
        memcpy(ls->frames, w->scratch, fresh * sizeof *ls->frames);
    }
    ls->n = n;
    return 0;
}

/* A thread-sample's flags and stack delta; the new frames outermost first. */
static void put_change(struct strbuf *b, const struct recwriter *w, uint32_t flags, size_t pop,
                       size_t push)
{
    varint_put(b, flags);
    varint_put(b, pop);
    varint_put(b, push);
    for (size_t i = push; i-- > 0;) {
        varint_put(b, w->scratch[i]);
    }
}

/* Appends the thread-samples of SMP, defining in the chunk what they need: in full to BODY (a
 * RECORD_SAMPLE), and those that changed to W->SAME (a RECORD_SAMPLE_SAME, usable when the
 * threads are the previous sample's, in its order). */
static int sample_body(struct recwriter *w, const struct sample *smp, const enum snap_bool *on_cpu,
                       const struct py_layout *L, struct strbuf *body, bool *any_gc, bool *same)
{
    *same = w->n_order == smp->n_threads;
    if (!reserve_u32(&w->order, &w->cap_order, smp->n_threads + 1)) {
        return -1;
    }
    w->same.len = 0;
    varint_put(body, smp->n_threads);
    size_t changed = 0;
    struct strbuf changes = {0};
    for (size_t i = 0; i < smp->n_threads; i++) {
        const struct sample_thread *th = &smp->threads[i];
        uint32_t ti;
        size_t pop, push;
        if (define_thread(w, th, L, i, &ti) < 0) {
            strbuf_free(&changes);
            return -1;
        }
        *any_gc |= th->in_gc == SNAP_YES;
        uint32_t flags = thread_flags(th, SNAP_UNKNOWN);
        if (stack_delta(w, ti, th->n_frames, &pop, &push) < 0) {
            strbuf_free(&changes);
            return -1;
        }
        varint_put(body, ti);
        put_change(body, w, flags, pop, push);
        *same = *same && w->order[i] == ti;
        w->order[i] = ti;
        if (pop != 0 || push != 0 || w->stacks[ti].flags != flags) {
            varint_put(&changes, i);
            put_change(&changes, w, flags, pop, push);
            changed++;
        }
        w->stacks[ti].flags = flags;
    }
    w->n_order = smp->n_threads;
    varint_put(&w->same, changed);
    strbuf_append(&w->same, changes.data, changes.len);
    /* The CPU states read with this sample (a few threads in turn): position and state, after
     * the stacks, in either form. */
    size_t states = 0;
    for (size_t i = 0; on_cpu != NULL && i < smp->n_threads; i++) {
        states += on_cpu[i] != SNAP_UNKNOWN;
    }
    varint_put(body, states);
    varint_put(&w->same, states);
    for (size_t i = 0; on_cpu != NULL && i < smp->n_threads; i++) {
        if (on_cpu[i] != SNAP_UNKNOWN) {
            varint_put(body, i << 1 | (on_cpu[i] == SNAP_YES));
            varint_put(&w->same, i << 1 | (on_cpu[i] == SNAP_YES));
        }
    }
    bool failed = changes.failed || body->failed || w->same.failed;
    strbuf_free(&changes);
    return failed ? -1 : 0;
}

int recwriter_sample(struct recwriter *w, double t, const struct sample *smp,
                     const enum snap_bool *on_cpu, const struct py_layout *L,
                     struct pt_error *err)
{
    uint64_t us;
    if (chunk_ready(w, t, &us, err) < 0) {
        return -1;
    }
    /* The definitions go into the chunk first, the sample's record after them. */
    w->body.len = 0;
    bool any_gc = false;
    bool same = false;
    if (sample_body(w, smp, on_cpu, L, &w->body, &any_gc, &same) < 0) {
        w->failed = true;
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
    }
    /* The same threads as the last sample: only what changed. */
    const struct strbuf *b = same ? &w->same : &w->body;
    record_put(w, same ? RECORD_SAMPLE_SAME : RECORD_SAMPLE, us);
    strbuf_append(&w->chunk, b->data, b->len);
    w->flags |= any_gc ? RECFORMAT_HAS_GC : 0;
    w->n_samples++;
    w->samples++;
    return 0;
}

int recwriter_error(struct recwriter *w, double t, const char *why, struct pt_error *err)
{
    uint64_t us;
    if (chunk_ready(w, t, &us, err) < 0) {
        return -1;
    }
    record_put(w, RECORD_ERROR, us);
    varint_put_str(&w->chunk, (struct snap_str){why, why != NULL ? strnlen(why, 1024) : 0});
    w->flags |= RECFORMAT_HAS_ERROR;
    return 0;
}

int recwriter_exec(struct recwriter *w, double t, const char *program, struct pt_error *err)
{
    uint64_t us;
    if (chunk_ready(w, t, &us, err) < 0) {
        return -1;
    }
    record_put(w, RECORD_EXEC, us);
    varint_put_str(&w->chunk,
                   (struct snap_str){program, program != NULL ? strnlen(program, 4096) : 0});
    w->flags |= RECFORMAT_HAS_EXEC;
    return 0;
}

/* A duration in whole 1/1024 s: its low mantissa bytes zero, so that a snapshot's many
 * durations, which change from one to the next, compress (the screen shows tenths). */
static double coarse(double s)
{
    return isfinite(s) && s > 0 && s < 1e9 ? ldexp(round(ldexp(s, 10)), -10) : s;
}

/* S with each thread's stack cut to its innermost frame: the samples hold the stacks (a replay
 * shows the sample's), the innermost frame tells whether the thread's wait still holds there;
 * the waits' durations coarse().
 * The copy points into S; free its arrays with free_slim(). */
static int slim_copy(const struct snapshot *s, struct snapshot *slim, struct pt_error *err)
{
    *slim = *s;
    slim->interps = calloc(s->n_interps + 1, sizeof *slim->interps);
    if (slim->interps == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
    }
    for (size_t i = 0; i < s->n_interps; i++) {
        const struct snap_interp *in = &s->interps[i];
        struct snap_interp *out = &slim->interps[i];
        *out = *in;
        out->threads = calloc(in->n_threads + 1, sizeof *out->threads);
        if (out->threads == NULL) {
            slim->n_interps = i;
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        }
        for (size_t k = 0; k < in->n_threads; k++) {
            out->threads[k] = in->threads[k];
            out->threads[k].n_frames = in->threads[k].n_frames > 0 ? 1 : 0;
            struct snap_wait *wt = &out->threads[k].wait;
            wt->owner_held = coarse(wt->owner_held);
            wt->since = coarse(wt->since);
            wt->left = coarse(wt->left);
            wt->requested = coarse(wt->requested);
        }
    }
    return 0;
}

static void free_slim(struct snapshot *slim)
{
    for (size_t i = 0; slim->interps != NULL && i < slim->n_interps; i++) {
        free(slim->interps[i].threads);
    }
    free(slim->interps);
}

int recwriter_snapshot(struct recwriter *w, double t, const struct snapshot *s,
                       struct pt_error *err)
{
    w->body.len = 0;
    struct snapshot slim;
    int rc = slim_copy(s, &slim, err);
    if (rc == 0) {
        rc = snapcodec_encode(&slim, &w->body, err);
    }
    free_slim(&slim);
    if (rc < 0) {
        return -1;
    }
    if (w->body.len > RECFORMAT_CHUNK_MAX / 2) {
        return pt_error_set(err, PT_E_LIMIT, 0, "a snapshot too large to record (%zu bytes)",
                            w->body.len);
    }
    uint64_t us;
    if (chunk_ready(w, t, &us, err) < 0) {
        return -1;
    }
    record_put(w, RECORD_SNAPSHOT, us);
    varint_put(&w->chunk, w->body.len);
    strbuf_append(&w->chunk, w->body.data, w->body.len);
    w->flags |= RECFORMAT_HAS_SNAPSHOT;
    return 0;
}

void recwriter_set_offsets(struct recwriter *w, bool on)
{
    w->offsets = on;
}

uint64_t recwriter_bytes(const struct recwriter *w)
{
    return w != NULL ? w->bytes + w->chunk.len / 8 : 0;
}

uint64_t recwriter_samples(const struct recwriter *w)
{
    return w != NULL ? w->samples : 0;
}

int recwriter_close(struct recwriter *w, double t, struct pt_error *err)
{
    if (w == NULL) {
        return 0;
    }
    int rc = 0;
    uint64_t us;
    if (w->failed) {
        rc = pt_error_set(err, PT_E_IO, 0, "the recording stopped at an earlier error");
    } else if (chunk_ready(w, t, &us, err) < 0) {
        rc = -1;
    } else {
        record_put(w, RECORD_END, us);
        w->flags |= RECFORMAT_HAS_END;
        rc = chunk_flush(w, err);
    }
    if (rc == 0 && fsync(w->fd) < 0 && errno != EINVAL && errno != EROFS) {
        rc = fail_io(w, err, "fsync", errno);
    }
    if (close(w->fd) < 0 && rc == 0) {
        rc = fail_io(w, err, "close", errno);
    }
    chunk_reset(w);
    ZSTD_freeCCtx(w->zc);
    strbuf_free(&w->chunk);
    free(w->packed);
    strbuf_free(&w->body);
    strbuf_free(&w->same);
    free(w->order);
    map_free(&w->codes);
    map_free(&w->frames);
    for (size_t i = 0; i < w->cap_threads; i++) {
        free(w->stacks[i].frames);
        free(w->stacks[i].raw);
    }
    free(w->stacks);
    free(w->threads);
    free(w->scratch);
    free(w);
    return rc;
}
