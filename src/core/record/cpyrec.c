/* cpyrec: CPython 3.15's binary profile format (InternalDocs/profiling_binary_format.md, the
 * "Tachyon" format of Modules/_remote_debugging/binary_io_*.c), read back bounded. */
#include "config.h"

#include "core/record/cpyrec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "core/record/cpyrec_int.h"
#include "core/util/error.h"

uint32_t cpyrec_get_u32(const struct cpyrec *r, const uint8_t *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return r->swap ? __builtin_bswap32(v) : v;
}

uint64_t cpyrec_get_u64(const struct cpyrec *r, const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return r->swap ? __builtin_bswap64(v) : v;
}

static double get_f64(const struct cpyrec *r, const uint8_t *p)
{
    uint64_t bits = cpyrec_get_u64(r, p);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

bool cpyrec_sniff(const void *head, size_t n)
{
    const uint8_t *p = head;
    if (n < 4) {
        return false;
    }
    uint32_t le =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return le == MAGIC || le == MAGIC_SWAPPED;
}

/* Exactly LEN bytes at OFF of the file, or PT_E_FORMAT past its end / PT_E_IO. */
int cpyrec_read_at(struct cpyrec *r, uint64_t off, void *dst, size_t len, struct pt_error *err)
{
    uint64_t end;
    if (__builtin_add_overflow(off, (uint64_t)len, &end) || end > r->size) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "%zu bytes at %" PRIu64 " are past the end (%" PRIu64 " bytes)", len,
                            off, r->size);
    }
    if (r->fd < 0) {
        memcpy(dst, r->mem + off, len);
        return 0;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(r->fd, (uint8_t *)dst + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return pt_error_set(err, PT_E_IO, errno, "read at %" PRIu64 ": %s", off + done,
                                strerror(errno));
        }
        if (n == 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "the file ends at %" PRIu64 " (it shrank)",
                                off + done);
        }
        done += (size_t)n;
    }
    return 0;
}

/* A LEB128 varint at *POS of P[0..LEN), at most 32 bits (the writer's indices and counts). */
static bool table_varint(const uint8_t *p, size_t len, size_t *pos, uint32_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 35; shift += 7) {
        if (*pos >= len) {
            return false;
        }
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            if (v > UINT32_MAX) {
                return false;
            }
            *out = (uint32_t)v;
            return true;
        }
    }
    return false;
}

static bool table_svarint(const uint8_t *p, size_t len, size_t *pos, int32_t *out)
{
    uint32_t z;
    if (!table_varint(p, len, pos, &z)) {
        return false;
    }
    *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
    return true;
}

static int parse_header(struct cpyrec *r, const uint8_t *h, struct pt_error *err)
{
    uint32_t magic =
        (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    if (magic != MAGIC && magic != MAGIC_SWAPPED) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "not a CPython binary profile (magic 0x%08" PRIx32 ")", magic);
    }
    r->swap = magic == MAGIC_SWAPPED;
    r->version = cpyrec_get_u32(r, h + HDR_VERSION);
    if (r->version != FORMAT_VERSION) {
        return pt_error_set(err, PT_E_FORMAT, 0, "format version %u (this reader knows %d)",
                            r->version, FORMAT_VERSION);
    }
    memcpy(r->py, h + HDR_PY, 3);
    r->start_us = cpyrec_get_u64(r, h + HDR_START);
    r->interval_us = cpyrec_get_u64(r, h + HDR_INTERVAL);
    r->n_samples = cpyrec_get_u64(r, h + HDR_SAMPLES);
    r->n_threads_declared = cpyrec_get_u32(r, h + HDR_THREADS);
    r->strings_off = cpyrec_get_u64(r, h + HDR_STRINGS);
    r->frames_off = cpyrec_get_u64(r, h + HDR_FRAMES);
    r->compression = cpyrec_get_u32(r, h + HDR_COMPRESSION);
    r->config = cpyrec_get_u32(r, h + HDR_CONFIG);
    if (r->strings_off == 0 && r->frames_off == 0) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "the header was never written (the profiler "
                            "did not finish the file)");
    }
    if (r->compression != COMPRESSION_NONE && r->compression != COMPRESSION_ZSTD) {
        return pt_error_set(err, PT_E_FORMAT, 0, "unknown compression %" PRIu32, r->compression);
    }
    if (r->n_threads_declared > CPYREC_THREADS) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%" PRIu32 " threads declared (at most %d)",
                            r->n_threads_declared, (int)CPYREC_THREADS);
    }
    uint32_t features = r->config >> CONFIG_FEATURES_SHIFT;
    r->gc_frames_known = (r->config & CONFIG_FEATURES_KNOWN) != 0 && (features & FEATURE_GC);
    return 0;
}

/* The statistics extension before the footer, if its trailer is there; returns its size. */
static uint64_t parse_stats(struct cpyrec *r, uint64_t footer_off, struct pt_error *err)
{
    uint8_t t[STATS_TRAILER];
    if (footer_off < HDR_SIZE + STATS_MIN ||
        cpyrec_read_at(r, footer_off - STATS_TRAILER, t, sizeof t, NULL) < 0) {
        return 0;
    }
    if (memcmp(t, "TACHSTAT", 8) != 0) {
        return 0;
    }
    uint32_t size = cpyrec_get_u32(r, t + 12);
    uint8_t d[8];
    if (size < STATS_MIN || size > STATS_MAX || size > footer_off - HDR_SIZE ||
        cpyrec_read_at(r, footer_off - size, d, sizeof d, NULL) < 0) {
        return 0;
    }
    double duration = get_f64(r, d);
    if (duration >= 0 && duration < 1e12) {
        r->stats_duration = duration;
    }
    return size;
}

static int parse_strings(struct cpyrec *r, const uint8_t *p, size_t len, struct pt_error *err)
{
    r->strings = calloc(r->n_strings > 0 ? r->n_strings : 1, sizeof *r->strings);
    if (r->strings == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "string table of %" PRIu32 " strings",
                            r->n_strings);
    }
    size_t pos = 0;
    for (uint32_t i = 0; i < r->n_strings; i++) {
        uint32_t n;
        if (!table_varint(p, len, &pos, &n) || n > len - pos) {
            return pt_error_set(err, PT_E_FORMAT, 0,
                                "string %" PRIu32 " of %" PRIu32 " runs past the string table", i,
                                r->n_strings);
        }
        r->strings[i] = (struct snap_str){(const char *)p + pos, n};
        pos += n;
    }
    return 0;
}

static bool str_eq(struct snap_str a, struct snap_str b)
{
    return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

static uint64_t str_hash(struct snap_str s, uint64_t h)
{
    for (size_t i = 0; i < s.len; i++) {
        h = (h ^ (uint8_t)s.ptr[i]) * 0x100000001b3ull;
    }
    return (h ^ 0xff) * 0x100000001b3ull;
}

/* Each distinct (function, file) pair becomes one rec_code, looked up in an open-addressed
 * table of code indices (+1, 0 empty) with at least twice the frames' slots. */
static int intern_code(struct cpyrec *r, uint32_t *slots, size_t mask, struct snap_str func,
                       struct snap_str file, uint32_t *out)
{
    size_t i = (size_t)str_hash(file, str_hash(func, 0xcbf29ce484222325ull)) & mask;
    for (;;) {
        uint32_t s = slots[i];
        if (s == 0) {
            break;
        }
        struct rec_code *c = &r->codes[s - 1];
        if (str_eq(c->function, func) && str_eq(c->file, file)) {
            *out = s - 1;
            return 0;
        }
        i = (i + 1) & mask;
    }
    struct rec_code *c = &r->codes[r->n_codes];
    *c = (struct rec_code){r->n_codes, func, {NULL, 0}, file, -1};
    slots[i] = r->n_codes + 1;
    *out = r->n_codes++;
    return 0;
}

/* Synthetic frames (lineno -1, or CPython's "~" file) are named by their function. */
static enum snap_frame_kind synthetic_kind(struct snap_str func)
{
    if (func.len == 4 && memcmp(func.ptr, "<GC>", 4) == 0) {
        return SNAP_FRAME_GC;
    }
    return SNAP_FRAME_NATIVE;
}

static int parse_frames(struct cpyrec *r, const uint8_t *p, size_t len, struct pt_error *err)
{
    size_t n = r->n_frames > 0 ? r->n_frames : 1;
    size_t nslots = 16;
    while (nslots < 2 * n) {
        nslots *= 2;
    }
    r->frames = calloc(n, sizeof *r->frames);
    r->codes = calloc(n, sizeof *r->codes);
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (r->frames == NULL || r->codes == NULL || slots == NULL) {
        free(slots);
        return pt_error_set(err, PT_E_NOMEM, 0, "frame table of %" PRIu32 " frames", r->n_frames);
    }
    size_t pos = 0;
    for (uint32_t i = 0; i < r->n_frames; i++) {
        uint32_t file;
        uint32_t func;
        int32_t line;
        int32_t unused;
        bool ok = table_varint(p, len, &pos, &file) && table_varint(p, len, &pos, &func) &&
                  table_svarint(p, len, &pos, &line) &&
                  table_svarint(p, len, &pos, &unused) && /* end line - line */
                  table_svarint(p, len, &pos, &unused) && /* column */
                  table_svarint(p, len, &pos, &unused) && /* end column - column */
                  pos < len;
        if (!ok) {
            free(slots);
            return pt_error_set(err, PT_E_FORMAT, 0,
                                "frame %" PRIu32 " of %" PRIu32 " runs past the frame table", i,
                                r->n_frames);
        }
        pos++; /* the opcode, 255 when not captured */
        if (file >= r->n_strings || func >= r->n_strings) {
            free(slots);
            return pt_error_set(err, PT_E_FORMAT, 0,
                                "frame %" PRIu32 " names string %" PRIu32 " of %" PRIu32, i,
                                file > func ? file : func, r->n_strings);
        }
        struct snap_str fs = r->strings[file];
        struct snap_str fn = r->strings[func];
        struct cpy_frame *f = &r->frames[i];
        /* CPython's synthetic frames (<GC>, <native>) have the file "~" (collector.py). */
        if (fs.len == 1 && fs.ptr[0] == '~') {
            *f = (struct cpy_frame){UINT32_MAX, -1, synthetic_kind(fn)};
            continue;
        }
        *f = (struct cpy_frame){0, line >= 0 ? line : -1, SNAP_FRAME_PYTHON};
        intern_code(r, slots, nslots - 1, fn, fs, &f->code);
    }
    free(slots);
    return 0;
}

static int read_tables(struct cpyrec *r, struct pt_error *err)
{
    uint8_t f[FTR_SIZE];
    if (r->size < HDR_SIZE + FTR_SIZE) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "%" PRIu64 " bytes: too short for a header "
                            "and a footer",
                            r->size);
    }
    uint64_t footer_off = r->size - FTR_SIZE;
    if (cpyrec_read_at(r, footer_off, f, sizeof f, err) < 0) {
        return -1;
    }
    r->n_strings = cpyrec_get_u32(r, f + FTR_STRINGS);
    r->n_frames = cpyrec_get_u32(r, f + FTR_FRAMES);
    uint64_t declared = cpyrec_get_u64(r, f + FTR_FILE_SIZE);
    if (declared != r->size) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "the footer says %" PRIu64 " bytes, the file "
                            "has %" PRIu64 " (cut short or corrupt)",
                            declared, r->size);
    }
    uint64_t end = footer_off - parse_stats(r, footer_off, err);
    if (r->strings_off < HDR_SIZE || r->strings_off > r->frames_off || r->frames_off > end) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "tables at %" PRIu64 " and %" PRIu64
                            " do not fit between the header and %" PRIu64,
                            r->strings_off, r->frames_off, end);
    }
    if (end - r->strings_off > CPYREC_TABLE_BYTES) {
        return pt_error_set(err, PT_E_FORMAT, 0, "tables of %" PRIu64 " bytes (at most %d)",
                            end - r->strings_off, (int)CPYREC_TABLE_BYTES);
    }
    if (r->n_strings > CPYREC_STRINGS || r->n_frames > CPYREC_FRAMES) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "%" PRIu32 " strings and %" PRIu32 " frames declared (at most %d each)",
                            r->n_strings, r->n_frames, (int)CPYREC_STRINGS);
    }
    /* A string takes a byte at least, a frame seven: counts beyond that are not allocated. */
    if (r->n_strings > r->frames_off - r->strings_off || r->n_frames > (end - r->frames_off) / 7) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "%" PRIu32 " strings and %" PRIu32
                            " frames do not fit in tables of %" PRIu64 " and %" PRIu64 " bytes",
                            r->n_strings, r->n_frames, r->frames_off - r->strings_off,
                            end - r->frames_off);
    }
    size_t len = (size_t)(end - r->strings_off);
    r->tables = malloc(len > 0 ? len : 1);
    if (r->tables == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "tables of %zu bytes", len);
    }
    if (cpyrec_read_at(r, r->strings_off, r->tables, len, err) < 0) {
        return -1;
    }
    size_t split = (size_t)(r->frames_off - r->strings_off);
    if (parse_strings(r, r->tables, split, err) < 0) {
        return pt_error_prefix(err, "string table at %" PRIu64, r->strings_off);
    }
    if (parse_frames(r, r->tables + split, len - split, err) < 0) {
        return pt_error_prefix(err, "frame table at %" PRIu64, r->frames_off);
    }
    return 0;
}

static void fill_header(struct cpyrec *r)
{
    snprintf(r->format, sizeof r->format, "cpython %u", r->version);
    snprintf(r->pyver, sizeof r->pyver, "%u.%u.%u", r->py[0], r->py[1], r->py[2]);
    struct rec_header *h = &r->header;
    h->format = (struct snap_str){r->format, strlen(r->format)};
    h->python_version = (struct snap_str){r->pyver, strlen(r->pyver)};
    /* The file has no release level: the hexversion's low byte stays 0. */
    h->hexversion = (uint64_t)r->py[0] << 24 | (uint64_t)r->py[1] << 16 | (uint64_t)r->py[2] << 8;
    h->debug_build = SNAP_UNKNOWN;
    /* profiling.sampling's PROFILING_MODE_* (constants.py), stored plus one */
    static const char *const modes[] = {"wall", "cpu", "gil", "all", "exception"};
    unsigned mode = r->config & CONFIG_MODE_MASK;
    if (mode >= 1 && mode <= 5) {
        snprintf(r->recorder, sizeof r->recorder, "CPython profiling.sampling, %s mode",
                 modes[mode - 1]);
    } else {
        snprintf(r->recorder, sizeof r->recorder, "CPython profiling.sampling");
    }
    h->recorder = (struct snap_str){r->recorder, strlen(r->recorder)};
    h->rate_hz = r->interval_us > 0 ? 1e6 / (double)r->interval_us : 0;
    /* The start is the writer's time.monotonic(), not a wall-clock time. */
    h->start_wall = -1;
    h->started = -1;
}

static struct cpyrec *open_common(struct cpyrec *r, struct pt_error *err)
{
    uint8_t h[HDR_SIZE];
    r->stats_duration = -1;
    r->free_snap = UINT32_MAX;
    if (r->size < HDR_SIZE) {
        pt_error_set(err, PT_E_FORMAT, 0, "%" PRIu64 " bytes: too short for the header", r->size);
        cpyrec_close(r);
        return NULL;
    }
    if (cpyrec_read_at(r, 0, h, sizeof h, err) < 0 || parse_header(r, h, err) < 0 ||
        read_tables(r, err) < 0) {
        cpyrec_close(r);
        return NULL;
    }
    fill_header(r);
    return r;
}

struct cpyrec *cpyrec_open(const char *path, struct pt_error *err)
{
    struct cpyrec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "opening %s", path);
        return NULL;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (r->fd < 0 || fstat(r->fd, &sb) < 0) {
        pt_error_set(err, PT_E_IO, errno, "%s: %s", path, strerror(errno));
        cpyrec_close(r);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        pt_error_set(err, PT_E_IO, 0, "%s: not a regular file", path);
        cpyrec_close(r);
        return NULL;
    }
    r->size = (uint64_t)sb.st_size;
    if (open_common(r, err) == NULL) {
        pt_error_prefix(err, "%s", path);
        return NULL;
    }
    return r;
}

struct cpyrec *cpyrec_open_mem(const void *buf, size_t len, struct pt_error *err)
{
    struct cpyrec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "a reader");
        return NULL;
    }
    r->fd = -1;
    r->mem = buf;
    r->size = buf != NULL ? len : 0;
    return open_common(r, err);
}

void cpyrec_stream_free(struct stream *s)
{
    ZSTD_freeDStream(s->zs);
    free(s->in);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

void cpyrec_threads_free(struct cpyrec *r)
{
    for (size_t i = 0; i < r->n_threads; i++) {
        free(r->threads[i].stack);
    }
    free(r->threads);
    free(r->theap);
    r->threads = NULL;
    r->theap = NULL;
    r->n_threads = 0;
}

void cpyrec_close(struct cpyrec *r)
{
    if (r == NULL) {
        return;
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    cpyrec_stream_free(&r->st);
    cpyrec_order_reset(r);
    cpyrec_threads_free(r);
    free(r->pending);
    free(r->group);
    free(r->scratch);
    free(r->tables);
    free(r->strings);
    free(r->frames);
    free(r->codes);
    free(r);
}

const struct rec_header *cpyrec_header(const struct cpyrec *r)
{
    return &r->header;
}

double cpyrec_duration(const struct cpyrec *r)
{
    return r->stats_duration >= 0 ? r->stats_duration : r->scanned_duration;
}

const char *cpyrec_damage(const struct cpyrec *r)
{
    return r->damage;
}
