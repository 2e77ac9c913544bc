/* recread: a .pyrec recording read back, bounded at every step. */
#include "config.h"

#include "core/record/recread.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/record/recformat.h"
#include "core/record/snapcodec.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/util/varint.h"

/* A thread as a chunk defines it, with its stack: the frames innermost first at
 * STACK[START..CAP), so that a delta, which changes the innermost end, moves nothing else. */
struct chunk_thread {
    struct rec_thread def;
    uint64_t seen;   /* the SEQ of the sample that last had it */
    uint64_t listed; /* the SEQ of the sample being read, once it is listed in it; */
    uint64_t twice;  /* and when listed twice in it (a hostile file) */
    struct rec_frame *stack;
    size_t start;
    size_t cap;
};

/* One chunk decoded: its tables point into RAW. */
struct decoded {
    uint8_t *raw;
    size_t raw_cap;
    size_t raw_len;
    /* Codes in blocks that never move: frames point at them. */
    struct rec_code **code_blocks;
    size_t n_codes, cap_blocks;
    struct rec_frame *frames;
    size_t n_frames, cap_frames;
    struct chunk_thread *threads;
    size_t n_threads, cap_threads;
    struct rec_thread *out; /* the sample being handed on */
    size_t cap_out;
    uint32_t *out_ti;       /* each one's thread index */
    size_t cap_out_ti;
    size_t n_last;          /* threads of the chunk's last sample; 0 none yet */
    uint64_t seq;           /* samples decoded (a new chunk skips one: no frames carry over) */
    size_t n_last_seen;     /* N_LAST before the sample being read */
};

struct recreader {
    int fd;
    uint64_t size;
    uint8_t *head_bytes; /* the header record; the header's strings point into it */
    struct rec_header header;
    struct snap_str *cmdline;
    struct recread_chunk *chunks;
    size_t n_chunks;
    char damage[256];
    uint8_t *packed;
    size_t packed_cap;
    ZSTD_DCtx *zd;
    struct decoded d;
};

bool recread_sniff(const void *head, size_t n)
{
    return n >= RECFORMAT_MAGIC_LEN && memcmp(head, RECFORMAT_MAGIC, RECFORMAT_MAGIC_LEN) == 0;
}

static int read_at(const struct recreader *r, void *buf, size_t n, uint64_t off,
                   struct pt_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(r->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0) {
            return pt_error_set(err, PT_E_IO, errno, "could not read the recording");
        }
        if (k == 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "the recording ends early");
        }
        got += (size_t)k;
    }
    return 0;
}

static enum snap_bool tri(unsigned v)
{
    return v == 1 ? SNAP_YES : v == 0 ? SNAP_NO : SNAP_UNKNOWN;
}

static int parse_header(struct recreader *r, const uint8_t *p, size_t n, struct pt_error *err)
{
    struct varint_cursor c = varint_cursor(p, n);
    struct rec_header *h = &r->header;
    h->format = (struct snap_str){"pytop 1", 7};
    h->pid = (pid_t)varint_get_count(&c, INT32_MAX);
    size_t argc = varint_get_count(&c, LIMIT_CMDLINE + 1);
    if (argc > 0) {
        argc--;
        r->cmdline = calloc(argc + 1, sizeof *r->cmdline);
        if (r->cmdline == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        }
        for (size_t i = 0; i < argc && !c.bad; i++) {
            r->cmdline[i] = varint_get_str(&c, LIMIT_CMDLINE);
        }
        h->cmdline = r->cmdline;
        h->n_cmdline = argc;
    }
    h->python_version = varint_get_str(&c, 64);
    h->hexversion = varint_get(&c);
    h->free_threaded = varint_get_count(&c, 1) != 0;
    unsigned debug = (unsigned)varint_get_count(&c, 2);
    h->debug_build = tri(debug);
    h->binary = varint_get_str(&c, LIMIT_STRING);
    h->recorder = varint_get_str(&c, 256);
    h->rate_hz = varint_get_f64(&c);
    h->interval_s = varint_get_f64(&c);
    h->start_wall = varint_get_f64(&c);
    h->started = varint_get_f64(&c);
    if (c.bad) {
        return pt_error_set(err, PT_E_FORMAT, 0, "the recording's header is malformed");
    }
    if (!isfinite(h->rate_hz) || h->rate_hz < 0) {
        h->rate_hz = 0;
    }
    if (!isfinite(h->interval_s) || h->interval_s < 0) {
        h->interval_s = 0;
    }
    if (!isfinite(h->start_wall)) {
        h->start_wall = -1;
    }
    if (!isfinite(h->started)) {
        h->started = -1;
    }
    return 0;
}

static void note_damage(struct recreader *r, uint64_t off, const char *what)
{
    if (r->damage[0] == '\0') {
        snprintf(r->damage, sizeof r->damage,
                 "the recording is %s at byte %llu; read up to %.3f s", what,
                 (unsigned long long)off,
                 r->n_chunks > 0 ? r->chunks[r->n_chunks - 1].t_last : 0.0);
    }
}

static double get_f64(const uint8_t *p)
{
    struct varint_cursor c = varint_cursor(p, 8);
    return varint_get_f64(&c);
}

/* Indexes the chunks from OFF on, stopping at the first that is not whole. */
static int index_chunks(struct recreader *r, uint64_t off, struct pt_error *err)
{
    size_t cap = 0;
    while (off < r->size) {
        uint8_t h[RECFORMAT_CHUNK_HEAD];
        if (r->size - off < sizeof h) {
            note_damage(r, off, "cut short");
            break;
        }
        if (read_at(r, h, sizeof h, off, err) < 0) {
            return -1;
        }
        struct recread_chunk c = {off,
                                  recformat_get_le32(h + 4),
                                  recformat_get_le32(h + 8),
                                  recformat_get_le32(h + 12),
                                  recformat_get_le32(h + 20),
                                  get_f64(h + 24),
                                  get_f64(h + 32)};
        if (memcmp(h, RECFORMAT_CHUNK_MAGIC, 4) != 0 || c.packed > RECFORMAT_CHUNK_MAX ||
            c.raw > RECFORMAT_CHUNK_MAX || !isfinite(c.t_first) || !isfinite(c.t_last) ||
            c.t_first < 0 || c.t_last < c.t_first ||
            (r->n_chunks > 0 && c.t_first < r->chunks[r->n_chunks - 1].t_first)) {
            note_damage(r, off, "corrupt");
            break;
        }
        if (r->size - off - sizeof h < c.packed) {
            note_damage(r, off, "cut short");
            break;
        }
        if (r->n_chunks >= RECFORMAT_CHUNKS_MAX) {
            note_damage(r, off, "longer than pytop indexes");
            break;
        }
        if (r->n_chunks == cap) {
            cap = cap != 0 ? cap * 2 : 64;
            struct recread_chunk *a = realloc(r->chunks, cap * sizeof *a);
            if (a == NULL) {
                return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
            }
            r->chunks = a;
        }
        r->chunks[r->n_chunks++] = c;
        off += sizeof h + c.packed;
    }
    /* Whole chunks, but not the last: the recorder was stopped before it could close the file
     * (killed, the machine down), and what it held after its last chunk is lost. */
    if (r->damage[0] == '\0' && (r->n_chunks == 0 ||
                                 (r->chunks[r->n_chunks - 1].flags & RECFORMAT_HAS_END) == 0)) {
        snprintf(r->damage, sizeof r->damage,
                 "the recording was cut short (no end mark: its recorder stopped before closing "
                 "it); read up to %.3f s",
                 r->n_chunks > 0 ? r->chunks[r->n_chunks - 1].t_last : 0.0);
    }
    return 0;
}

struct recreader *recreader_open(const char *path, struct pt_error *err)
{
    struct recreader *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        return NULL;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) < 0) {
        pt_error_set(err, PT_E_IO, errno, "cannot open %s", path);
        goto fail;
    }
    r->size = (uint64_t)st.st_size;
    uint8_t head[RECFORMAT_MAGIC_LEN + 5];
    if (r->size < sizeof head + 4 || read_at(r, head, sizeof head, 0, err) < 0 ||
        !recread_sniff(head, sizeof head)) {
        pt_error_set(err, PT_E_FORMAT, 0, "%s is not a pytop recording", path);
        goto fail;
    }
    if (head[RECFORMAT_MAGIC_LEN] != RECFORMAT_VERSION) {
        pt_error_set(err, PT_E_FORMAT, 0,
                     "%s is a recording of format %u; this pytop reads format %u", path,
                     head[RECFORMAT_MAGIC_LEN], RECFORMAT_VERSION);
        goto fail;
    }
    uint32_t len = recformat_get_le32(head + RECFORMAT_MAGIC_LEN + 1);
    if (len > RECFORMAT_HEADER_MAX || r->size < sizeof head + (uint64_t)len + 4) {
        pt_error_set(err, PT_E_FORMAT, 0, "%s: the recording's header is cut short", path);
        goto fail;
    }
    r->head_bytes = malloc((size_t)len + 4);
    if (r->head_bytes == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        goto fail;
    }
    if (read_at(r, r->head_bytes, (size_t)len + 4, sizeof head, err) < 0) {
        goto fail;
    }
    if (recformat_get_le32(r->head_bytes + len) !=
        (uint32_t)crc32(0, (const Bytef *)r->head_bytes, len)) {
        pt_error_set(err, PT_E_FORMAT, 0, "%s: the recording's header is corrupt", path);
        goto fail;
    }
    if (parse_header(r, r->head_bytes, len, err) < 0 ||
        index_chunks(r, sizeof head + (uint64_t)len + 4, err) < 0) {
        pt_error_prefix(err, "%s", path);
        goto fail;
    }
    if ((r->zd = ZSTD_createDCtx()) == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        goto fail;
    }
    return r;
fail:
    recreader_close(r);
    return NULL;
}

static void decoded_free(struct decoded *d)
{
    for (size_t i = 0; i < d->cap_threads; i++) {
        free(d->threads[i].stack);
    }
    free(d->threads);
    free(d->raw);
    for (size_t i = 0; i < d->cap_blocks; i++) {
        free(d->code_blocks[i]);
    }
    free(d->code_blocks);
    free(d->frames);
    free(d->out);
    free(d->out_ti);
}

void recreader_close(struct recreader *r)
{
    if (r == NULL) {
        return;
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    decoded_free(&r->d);
    ZSTD_freeDCtx(r->zd);
    free(r->packed);
    free(r->head_bytes);
    free(r->cmdline);
    free(r->chunks);
    free(r);
}

const struct rec_header *recreader_header(const struct recreader *r)
{
    return &r->header;
}

double recreader_duration(const struct recreader *r)
{
    return r->n_chunks > 0 ? r->chunks[r->n_chunks - 1].t_last : 0;
}

const struct recread_chunk *recreader_chunks(const struct recreader *r, size_t *n)
{
    *n = r->n_chunks;
    return r->chunks;
}

const char *recreader_damage(const struct recreader *r)
{
    return r->damage;
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) {
        return true;
    }
    size_t c = *cap != 0 ? *cap : 16;
    while (c < need) {
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

/* Reads chunk I, checks its sum and decompresses it into R->D.RAW; the tables start empty. */
static int load_chunk(struct recreader *r, size_t i, struct pt_error *err)
{
    const struct recread_chunk *c = &r->chunks[i];
    struct decoded *d = &r->d;
    if (!grow((void **)&r->packed, &r->packed_cap, c->packed, 1) ||
        !grow((void **)&d->raw, &d->raw_cap, c->raw + 1, 1)) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
    }
    if (read_at(r, r->packed, c->packed, c->offset + RECFORMAT_CHUNK_HEAD, err) < 0) {
        return -1;
    }
    uint8_t h[RECFORMAT_CHUNK_HEAD];
    if (read_at(r, h, sizeof h, c->offset, err) < 0) {
        return -1;
    }
    /* The fuzzers cannot forge a sum: they skip it, to reach what the records say. */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    if ((uint32_t)crc32(0, (const Bytef *)r->packed, c->packed) != recformat_get_le32(h + 16)) {
        note_damage(r, c->offset, "corrupt");
        return pt_error_set(err, PT_E_FORMAT, 0, "chunk %zu of the recording is corrupt", i);
    }
#endif
    size_t n;
    if (c->flags & RECFORMAT_STORED) {
        n = c->packed;
        if (n != c->raw) {
            note_damage(r, c->offset, "corrupt");
            return pt_error_set(err, PT_E_FORMAT, 0, "chunk %zu of the recording is corrupt", i);
        }
        if (n > 0) {
            memcpy(d->raw, r->packed, n);
        }
    } else {
        n = ZSTD_decompressDCtx(r->zd, d->raw, c->raw, r->packed, c->packed);
    }
    if (ZSTD_isError(n) || n != c->raw) {
        note_damage(r, c->offset, "corrupt");
        return pt_error_set(err, PT_E_FORMAT, 0, "chunk %zu of the recording does not decompress",
                            i);
    }
    d->raw_len = n;
    d->n_codes = d->n_frames = 0;
    for (size_t k = 0; k < d->n_threads; k++) {
        d->threads[k].start = d->threads[k].cap;
    }
    d->n_threads = 0;
    d->n_last = 0;
    d->seq += 2;
    return 0;
}

static int bad(struct recreader *r, size_t i, const char *what, struct pt_error *err)
{
    note_damage(r, r->chunks[i].offset, "corrupt");
    return pt_error_set(err, PT_E_FORMAT, 0, "chunk %zu of the recording: %s", i, what);
}

enum { CODE_BLOCK = 1024 };

static struct rec_code *code_at(const struct decoded *d, size_t i)
{
    return &d->code_blocks[i / CODE_BLOCK][i % CODE_BLOCK];
}

static int def_code(struct decoded *d, struct varint_cursor *c)
{
    size_t b = d->n_codes / CODE_BLOCK;
    if (d->n_codes >= RECFORMAT_TABLE_MAX) {
        return -1;
    }
    if (b >= d->cap_blocks) {
        size_t old = d->cap_blocks;
        if (!grow((void **)&d->code_blocks, &d->cap_blocks, b + 1, sizeof *d->code_blocks)) {
            return -1;
        }
        memset(d->code_blocks + old, 0, (d->cap_blocks - old) * sizeof *d->code_blocks);
    }
    if (d->code_blocks[b] == NULL &&
        (d->code_blocks[b] = malloc(CODE_BLOCK * sizeof *d->code_blocks[b])) == NULL) {
        return -1;
    }
    struct rec_code *k = code_at(d, d->n_codes);
    k->id = (uint32_t)varint_get(c);
    k->function = varint_get_str(c, LIMIT_STRING);
    k->name = varint_get_str(c, LIMIT_STRING);
    k->file = varint_get_str(c, LIMIT_STRING);
    int64_t first = varint_get_signed(c);
    k->first_line = first >= -1 && first <= INT32_MAX ? (int)first : -1;
    d->n_codes++;
    return c->bad ? -1 : 0;
}

static int def_frame(struct decoded *d, struct varint_cursor *c)
{
    if (d->n_frames >= RECFORMAT_TABLE_MAX ||
        !grow((void **)&d->frames, &d->cap_frames, d->n_frames + 1, sizeof *d->frames)) {
        return -1;
    }
    struct rec_frame *f = &d->frames[d->n_frames];
    size_t code = varint_get_count(c, d->n_codes);
    int64_t line = varint_get_signed(c);
    uint64_t off = varint_get(c);
    size_t kind = varint_get_count(c, SNAP_FRAME_UNREADABLE);
    size_t why = varint_get_count(c, SNAP_UNREADABLE_NOMEM);
    if (c->bad || off > UINT32_MAX) {
        return -1;
    }
    f->code = code > 0 ? code_at(d, code - 1) : NULL;
    f->line = line >= -1 && line <= INT32_MAX ? (int)line : -1;
    f->offset = off == 0 ? UINT32_MAX : (uint32_t)(off - 1);
    f->kind = (enum snap_frame_kind)kind;
    f->unreadable = (enum snap_unreadable)why;
    d->n_frames++;
    return 0;
}

static int def_thread(struct decoded *d, struct varint_cursor *c)
{
    size_t old = d->cap_threads;
    if (d->n_threads >= RECFORMAT_TABLE_MAX ||
        !grow((void **)&d->threads, &d->cap_threads, d->n_threads + 1, sizeof *d->threads)) {
        return -1;
    }
    /* Slots past the old capacity are new: no stack yet. */
    memset(d->threads + old, 0, (d->cap_threads - old) * sizeof *d->threads);
    struct chunk_thread *t = &d->threads[d->n_threads];
    struct rec_thread *def = &t->def;
    int64_t interp = varint_get_signed(c);
    uint64_t tid = varint_get(c);
    uint64_t thread_id = varint_get(c);
    struct snap_str name = varint_get_str(c, LIMIT_STRING);
    size_t main = varint_get_count(c, 1);
    if (c->bad || tid > INT32_MAX) {
        return -1;
    }
    *def = (struct rec_thread){.interp_id = interp,
                               .tid = (pid_t)tid,
                               .thread_id = thread_id,
                               .name = name,
                               .main = main != 0};
    t->start = t->cap;
    d->n_threads++;
    return 0;
}

/* Applies a thread-sample's flags and delta to thread TI's stack, into OUT; KNOWN: the thread
 * was in the previous sample at this position (what it keeps can be told). */
static int apply_delta(struct decoded *d, struct varint_cursor *c, size_t ti, struct rec_thread *out,
                       bool known)
{
    uint64_t flags = varint_get(c);
    if (c->bad || flags > RECFLAG_ALL) {
        return -1;
    }
    struct chunk_thread *t = &d->threads[ti];
    size_t n = t->cap - t->start;
    size_t pop = varint_get_count(c, n);
    size_t push = varint_get_count(c, LIMIT_FRAMES);
    if (c->bad || n - pop + push > LIMIT_FRAMES) {
        return -1;
    }
    size_t start = t->start + pop;
    if (push > start) {
        /* No room before the kept frames: move them to the end of a larger stack. */
        size_t kept = t->cap - start;
        size_t cap = t->cap != 0 ? t->cap : 32;
        while (cap < kept + push) {
            cap *= 2;
        }
        struct rec_frame *s = malloc(cap * sizeof *s);
        if (s == NULL) {
            return -1;
        }
        if (kept > 0) {
            memcpy(s + cap - kept, t->stack + start, kept * sizeof *s);
        }
        free(t->stack);
        t->stack = s;
        t->cap = cap;
        start = cap - kept;
    }
    /* The new frames come outermost first. */
    for (size_t k = 0; k < push; k++) {
        size_t fi = varint_get_count(c, d->n_frames == 0 ? 0 : d->n_frames - 1);
        if (c->bad || d->n_frames == 0) {
            return -1;
        }
        t->stack[--start] = d->frames[fi];
    }
    t->start = start;
    t->seen = d->seq;
    *out = t->def;
    out->kept = known ? n - pop : 0;
    out->gil = tri((flags >> RECFLAG_GIL) & 3);
    out->gil_requested = tri((flags >> RECFLAG_GIL_REQUESTED) & 3);
    out->on_cpu = tri((flags >> RECFLAG_ON_CPU) & 3);
    out->has_exception = tri((flags >> RECFLAG_HAS_EXCEPTION) & 3);
    out->in_gc = tri((flags >> RECFLAG_IN_GC) & 3);
    out->frames_truncated = (flags & RECFLAG_TRUNCATED) != 0;
    out->frames_torn = (flags & RECFLAG_TORN) != 0;
    out->not_read = (flags & RECFLAG_NOT_READ) != 0;
    out->frames = t->stack != NULL ? t->stack + t->start : NULL;
    out->n_frames = t->cap - t->start;
    return 0;
}

/* A RECORD_SAMPLE (every thread: its index and delta) or, SAME, a RECORD_SAMPLE_SAME (the last
 * sample's threads: those that changed, by position), into D->OUT[0..D->N_LAST). */
static int read_states(struct decoded *d, struct varint_cursor *c)
{
    for (size_t k = 0; k < d->n_last; k++) {
        d->out[k].on_cpu = SNAP_UNKNOWN;
    }
    size_t n = varint_get_count(c, d->n_last);
    for (size_t k = 0; k < n && !c->bad; k++) {
        uint64_t v = varint_get(c);
        if (c->bad || (v >> 1) >= d->n_last) {
            return -1;
        }
        d->out[v >> 1].on_cpu = (v & 1) != 0 ? SNAP_YES : SNAP_NO;
    }
    return c->bad ? -1 : 0;
}

/* Each thread-sample's frames as its thread's stack now is: a hostile file may list one thread
 * twice in a sample, and the second delta may have moved the stack the first points at. */
static void refresh_frames(struct decoded *d)
{
    for (size_t k = 0; k < d->n_last; k++) {
        struct chunk_thread *t = &d->threads[d->out_ti[k]];
        if (t->listed == d->seq) {
            t->twice = d->seq;
        }
        t->listed = d->seq;
    }
    for (size_t k = 0; k < d->n_last; k++) {
        const struct chunk_thread *t = &d->threads[d->out_ti[k]];
        d->out[k].frames = t->stack != NULL ? t->stack + t->start : NULL;
        d->out[k].n_frames = t->cap - t->start;
        /* What a thread listed twice kept cannot be told. */
        if (d->out[k].kept > d->out[k].n_frames || t->twice == d->seq) {
            d->out[k].kept = 0;
        }
    }
}

static int read_sample(struct decoded *d, struct varint_cursor *c, bool same)
{
    d->seq++;
    if (same) {
        if (d->n_last == 0) {
            return -1;
        }
        /* The threads that did not change keep all their frames. */
        for (size_t k = 0; k < d->n_last; k++) {
            d->out[k].kept = d->out[k].n_frames;
            d->threads[d->out_ti[k]].seen = d->seq;
        }
        size_t n = varint_get_count(c, d->n_last);
        for (size_t k = 0; k < n && !c->bad; k++) {
            size_t pos = varint_get_count(c, d->n_last - 1);
            if (c->bad || apply_delta(d, c, d->out_ti[pos], &d->out[pos], true) < 0) {
                return -1;
            }
        }
        refresh_frames(d);
        return c->bad ? -1 : read_states(d, c);
    }
    size_t n = varint_get_count(c, LIMIT_THREADS * (size_t)LIMIT_INTERPRETERS);
    if (c->bad || !grow((void **)&d->out, &d->cap_out, n + 1, sizeof *d->out) ||
        !grow((void **)&d->out_ti, &d->cap_out_ti, n + 1, sizeof *d->out_ti)) {
        return -1;
    }
    /* Until it is whole, no sample can refer to this one. */
    d->n_last_seen = d->n_last;
    d->n_last = 0;
    /* A thread kept its frames when it was in the sample just before at this position. */
    size_t before = d->n_last_seen;
    for (size_t k = 0; k < n; k++) {
        size_t ti = varint_get_count(c, d->n_threads == 0 ? 0 : d->n_threads - 1);
        bool known = !c->bad && d->n_threads > 0 && k < before && d->out_ti[k] == ti &&
                     d->threads[ti].seen + 1 == d->seq;
        if (c->bad || d->n_threads == 0 || apply_delta(d, c, ti, &d->out[k], known) < 0) {
            return -1;
        }
        d->out_ti[k] = (uint32_t)ti;
    }
    d->n_last = n;
    refresh_frames(d);
    return read_states(d, c);
}

/* What one pass over a chunk looks for. */
struct pass {
    double from, to;
    rec_sample_fn fn;  /* every sample in [FROM, TO] */
    void *ctx;
    bool last_only;    /* FN once, with the last successful sample <= TO */
    bool first_only;   /* with LAST_ONLY: the first successful sample instead */
    bool have_last;
    struct rec_sample last;
    int fn_rc;
    /* Snapshots: the last one at or before TO, as bytes and time. */
    bool snapshots;
    const uint8_t *snap;
    size_t snap_len;
    double snap_t;
    bool done;         /* past TO */
};

/* Decodes chunk I's records, handing on what P asks for. */
static int walk_chunk(struct recreader *r, size_t i, struct pass *p, struct pt_error *err)
{
    if (load_chunk(r, i, err) < 0) {
        return -1;
    }
    struct decoded *d = &r->d;
    struct varint_cursor c = varint_cursor(d->raw, d->raw_len);
    uint64_t us = varint_get(&c);
    while (c.left > 0 && !c.bad) {
        uint8_t type = varint_get_u8(&c);
        if (type == RECORD_CODE || type == RECORD_FRAME || type == RECORD_THREAD) {
            int rc = type == RECORD_CODE    ? def_code(d, &c)
                     : type == RECORD_FRAME ? def_frame(d, &c)
                                            : def_thread(d, &c);
            if (rc < 0) {
                return bad(r, i, "a malformed table entry", err);
            }
            continue;
        }
        uint64_t step = varint_get(&c);
        if (c.bad || step > UINT64_MAX - us) {
            return bad(r, i, "a malformed record", err);
        }
        us += step;
        double t = (double)us * RECFORMAT_TICK;
        if (t > p->to && type != RECORD_END) {
            p->done = true;
            return 0;
        }
        switch (type) {
        case RECORD_SAMPLE:
        case RECORD_SAMPLE_SAME: {
            if (read_sample(d, &c, type == RECORD_SAMPLE_SAME) < 0) {
                return bad(r, i, "a malformed sample", err);
            }
            struct rec_sample s = {t, false, {NULL, 0}, d->out, d->n_last, d->seq};
            if (p->last_only) {
                p->last = s;
                p->have_last = true;
                if (p->first_only) {
                    p->done = true;
                    return 0;
                }
            } else if (p->fn != NULL && t >= p->from) {
                if ((p->fn_rc = p->fn(p->ctx, &s)) != 0) {
                    p->done = true;
                    return 0;
                }
            }
            break;
        }
        case RECORD_ERROR: {
            struct snap_str why = varint_get_str(&c, 1024);
            struct rec_sample s = {t, true, why, NULL, 0, 0};
            if (!c.bad && !p->last_only && p->fn != NULL && t >= p->from &&
                (p->fn_rc = p->fn(p->ctx, &s)) != 0) {
                p->done = true;
                return 0;
            }
            break;
        }
        case RECORD_SNAPSHOT: {
            size_t len = varint_get_count(&c, c.left);
            const uint8_t *b = varint_get_bytes(&c, len);
            if (b != NULL && p->snapshots) {
                p->snap = b;
                p->snap_len = len;
                p->snap_t = t;
            }
            break;
        }
        case RECORD_EXEC:
            varint_get_str(&c, 4096);
            break;
        case RECORD_END:
            break;
        default:
            return bad(r, i, "an unknown record", err);
        }
    }
    if (c.bad) {
        return bad(r, i, "a record cut short", err);
    }
    return 0;
}

/* The first chunk that may hold samples at T: the last one starting at or before it. */
static size_t chunk_for(const struct recreader *r, double t)
{
    size_t lo = 0, hi = r->n_chunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->chunks[mid].t_first <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo > 0 ? lo - 1 : 0;
}

int recreader_scan(struct recreader *r, double from, double to, rec_sample_fn fn, void *ctx,
                   struct pt_error *err)
{
    struct pass p = {.from = from, .to = to, .fn = fn, .ctx = ctx};
    for (size_t i = chunk_for(r, from); i < r->n_chunks && !p.done; i++) {
        if (r->chunks[i].t_last < from) {
            continue;
        }
        if (walk_chunk(r, i, &p, err) < 0) {
            return -1;
        }
    }
    return p.fn_rc;
}

int recreader_sample_at(struct recreader *r, double t, rec_sample_fn fn, void *ctx,
                        struct pt_error *err)
{
    /* Back from T's chunk to the nearest that holds a sample at or before T; past the start,
     * the first sample of all. */
    for (size_t i = r->n_chunks > 0 ? chunk_for(r, t) + 1 : 0; i-- > 0;) {
        if (r->chunks[i].samples == 0) {
            continue;
        }
        struct pass p = {.from = -INFINITY, .to = t, .last_only = true};
        if (walk_chunk(r, i, &p, err) < 0) {
            return -1;
        }
        if (p.have_last) {
            return fn(ctx, &p.last);
        }
    }
    for (size_t i = 0; i < r->n_chunks; i++) {
        if (r->chunks[i].samples == 0) {
            continue;
        }
        struct pass p = {.from = -INFINITY, .to = INFINITY, .last_only = true,
                         .first_only = true};
        if (walk_chunk(r, i, &p, err) < 0) {
            return -1;
        }
        if (p.have_last) {
            return fn(ctx, &p.last);
        }
    }
    return pt_error_set(err, PT_E_LIMIT, 0, "the recording holds no sample");
}

struct snapshot *recreader_snapshot_at(struct recreader *r, double t, double *when,
                                       struct pt_error *err)
{
    bool any = false;
    for (int round = 0; round < 2; round++) {
        /* First the last snapshot at or before T, else the first after it. */
        size_t n = r->n_chunks;
        for (size_t k = 0; k < n; k++) {
            size_t i = round == 0 ? n - 1 - k : k;
            const struct recread_chunk *c = &r->chunks[i];
            if ((c->flags & RECFORMAT_HAS_SNAPSHOT) == 0 || (round == 0 && c->t_first > t)) {
                continue;
            }
            any = true;
            struct pass p = {.from = INFINITY, .to = round == 0 ? t : INFINITY,
                             .snapshots = true};
            if (walk_chunk(r, i, &p, err) < 0) {
                return NULL;
            }
            if (p.snap == NULL) {
                continue;
            }
            struct snapshot *s = snapcodec_decode(p.snap, p.snap_len, err);
            if (s == NULL) {
                note_damage(r, c->offset, "corrupt");
                pt_error_prefix(err, "chunk %zu of the recording", i);
                return NULL;
            }
            *when = p.snap_t;
            return s;
        }
    }
    pt_error_set(err, PT_E_LIMIT, 0, any ? "the recording's snapshots could not be found"
                                         : "the recording holds no snapshot");
    return NULL;
}
