/* export_pprof: a gzipped perftools.profiles.Profile (github.com/google/pprof,
 * proto/profile.proto), encoded here field by field: one Sample per (thread, stack) with the
 * values [samples/count, wall/nanoseconds] and the labels thread and tid, one Location per
 * frame (function, line), one Function per function. */
#include "config.h"

#include "core/export/export_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/util/varint.h"

/* profile.proto's field numbers. */
enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11,
    PROFILE_PERIOD = 12,
    VALUE_TYPE_TYPE = 1,
    VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1,
    SAMPLE_VALUE = 2,
    SAMPLE_LABEL = 3,
    LABEL_KEY = 1,
    LABEL_STR = 2,
    LABEL_NUM = 3,
    LOCATION_ID = 1,
    LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    LINE_LINE = 2,
    FUNCTION_ID = 1,
    FUNCTION_NAME = 2,
    FUNCTION_SYSTEM_NAME = 3,
    FUNCTION_FILENAME = 4,
    FUNCTION_START_LINE = 5,
};

enum { WIRE_VARINT = 0, WIRE_BYTES = 2 };

static void put_tag(struct strbuf *sb, unsigned field, unsigned wire)
{
    varint_put(sb, (uint64_t)field << 3 | wire);
}

/* A varint field; 0 is proto3's default and is left out. */
static void put_varint(struct strbuf *sb, unsigned field, uint64_t v)
{
    if (v != 0) {
        put_tag(sb, field, WIRE_VARINT);
        varint_put(sb, v);
    }
}

static void put_bytes(struct strbuf *sb, unsigned field, const void *data, size_t len)
{
    put_tag(sb, field, WIRE_BYTES);
    varint_put(sb, len);
    strbuf_append(sb, data, len);
}

/* Puts MSG as a length-delimited FIELD of SB and empties MSG. */
static void put_message(struct strbuf *sb, unsigned field, struct strbuf *msg)
{
    put_bytes(sb, field, msg->data, msg->len);
    msg->len = 0;
}

/* The string table: each distinct string once, "" first. */
struct strings {
    struct snap_str *items;
    size_t n;
    size_t cap;
    uint32_t *slots; /* index + 1; 0 empty */
    size_t mask;
    bool failed;
};

static uint32_t str_hash(const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static int strings_rehash(struct strings *st)
{
    size_t cap = st->slots != NULL ? (st->mask + 1) * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (size_t i = 0; i < st->n; i++) {
        size_t j = str_hash(st->items[i].ptr, st->items[i].len) & (cap - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (cap - 1);
        }
        slots[j] = (uint32_t)i + 1;
    }
    free(st->slots);
    st->slots = slots;
    st->mask = cap - 1;
    return 0;
}

/* The index of S (which must outlive ST) in the table; 0 ("") for an unknown one. */
static uint64_t string_id(struct strings *st, struct snap_str s)
{
    if (s.ptr == NULL || st->failed) {
        return 0;
    }
    if ((st->slots == NULL || (st->n + 1) * 2 > st->mask + 1) && strings_rehash(st) < 0) {
        st->failed = true;
        return 0;
    }
    size_t j = str_hash(s.ptr, s.len) & st->mask;
    while (st->slots[j] != 0) {
        const struct snap_str *it = &st->items[st->slots[j] - 1];
        if (it->len == s.len && memcmp(it->ptr, s.ptr, s.len) == 0) {
            return st->slots[j] - 1;
        }
        j = (j + 1) & st->mask;
    }
    if (export_grow(&st->items, &st->cap, st->n + 1, sizeof *st->items) < 0) {
        st->failed = true;
        return 0;
    }
    st->items[st->n] = s;
    st->slots[j] = (uint32_t)st->n + 1;
    return st->n++;
}

static uint64_t string_lit(struct strings *st, const char *s)
{
    return string_id(st, (struct snap_str){s, strlen(s)});
}

/* The protobuf's bytes through a gzip stream into a file. */
struct gz {
    z_stream z;
    FILE *out;
    int write_errno;
    bool failed;
};

static void gz_write(struct gz *g, struct strbuf *sb, int flush)
{
    unsigned char buf[16384];
    g->z.next_in = (unsigned char *)(sb->data != NULL ? sb->data : "");
    g->z.avail_in = (uInt)sb->len;
    do {
        g->z.next_out = buf;
        g->z.avail_out = sizeof buf;
        int zr = deflate(&g->z, flush);
        if (zr == Z_STREAM_ERROR) {
            g->failed = true;
            break;
        }
        size_t have = sizeof buf - g->z.avail_out;
        errno = 0;
        if (have > 0 && g->write_errno == 0 && fwrite(buf, 1, have, g->out) != have) {
            g->write_errno = errno != 0 ? errno : EIO;
        }
    } while (g->z.avail_out == 0);
    sb->len = 0;
}

/* Hands SB to the stream once it holds enough to be worth compressing. */
static void gz_drain(struct gz *g, struct strbuf *sb)
{
    if (sb->len >= 64 * 1024) {
        gz_write(g, sb, Z_NO_FLUSH);
    }
}

static void put_value_type(struct strbuf *sb, struct strbuf *msg, unsigned field,
                           struct strings *st, const char *type, const char *unit)
{
    put_varint(msg, VALUE_TYPE_TYPE, string_lit(st, type));
    put_varint(msg, VALUE_TYPE_UNIT, string_lit(st, unit));
    put_message(sb, field, msg);
}

static void put_samples(struct strbuf *sb, struct strbuf *msg, struct strbuf *sub,
                        struct strings *st, const struct exporter *x, struct gz *g)
{
    uint64_t key_thread = string_lit(st, "thread");
    uint64_t key_tid = string_lit(st, "tid");
    for (size_t i = 0; i < x->n_pairs; i++) {
        const struct export_pair *p = &x->pairs[i];
        if (p->count == 0) {
            continue;
        }
        const struct export_thread *t = &x->threads[p->thread];
        size_t n;
        const uint32_t *frames = export_stack_frames(x, p->stack, &n);
        for (size_t k = 0; k < n; k++) {
            varint_put(sub, (uint64_t)frames[k] + 1);
        }
        put_message(msg, SAMPLE_LOCATION_ID, sub);
        varint_put(sub, p->count);
        varint_put(sub, (uint64_t)p->weight_ns);
        put_message(msg, SAMPLE_VALUE, sub);
        /* A thread whose name is not known has no thread label: its tid says which. */
        if (t->name.ptr != NULL) {
            put_varint(sub, LABEL_KEY, key_thread);
            put_varint(sub, LABEL_STR, string_id(st, t->name));
            put_message(msg, SAMPLE_LABEL, sub);
        }
        if (t->tid != 0) {
            put_varint(sub, LABEL_KEY, key_tid);
            put_varint(sub, LABEL_NUM, (uint64_t)(int64_t)t->tid);
            put_message(msg, SAMPLE_LABEL, sub);
        }
        put_message(sb, PROFILE_SAMPLE, msg);
        gz_drain(g, sb);
    }
}

static void put_locations(struct strbuf *sb, struct strbuf *msg, struct strbuf *sub,
                          const struct exporter *x, struct gz *g)
{
    for (size_t i = 0; i < x->n_frames; i++) {
        const struct export_frame *fr = &x->frames[i];
        put_varint(msg, LOCATION_ID, i + 1);
        put_varint(sub, LINE_FUNCTION_ID, (uint64_t)fr->func + 1);
        put_varint(sub, LINE_LINE, fr->line > 0 ? (uint64_t)fr->line : 0);
        put_message(msg, LOCATION_LINE, sub);
        put_message(sb, PROFILE_LOCATION, msg);
        gz_drain(g, sb);
    }
}

static void put_functions(struct strbuf *sb, struct strbuf *msg, struct strings *st,
                          const struct exporter *x, struct gz *g)
{
    for (size_t i = 0; i < x->n_funcs; i++) {
        const struct export_func *f = &x->funcs[i];
        put_varint(msg, FUNCTION_ID, i + 1);
        put_varint(msg, FUNCTION_NAME, string_id(st, export_func_title(f)));
        put_varint(msg, FUNCTION_SYSTEM_NAME,
                   string_id(st, f->name.ptr != NULL ? f->name : export_func_title(f)));
        put_varint(msg, FUNCTION_FILENAME, string_id(st, f->file));
        put_varint(msg, FUNCTION_START_LINE, f->first_line > 0 ? (uint64_t)f->first_line : 0);
        put_message(sb, PROFILE_FUNCTION, msg);
        gz_drain(g, sb);
    }
}

static void put_header(struct strbuf *sb, struct strbuf *msg, struct strings *st,
                       const struct exporter *x)
{
    const struct rec_header *h = x->opts.header;
    int64_t first = x->first_ns >= 0 ? x->first_ns : 0;
    if (h != NULL && h->start_wall >= 0 && h->start_wall < 1e10) {
        int64_t start = (int64_t)(h->start_wall * 1e9);
        put_varint(sb, PROFILE_TIME_NANOS, (uint64_t)(start + first));
    }
    if (x->end_ns > first) {
        put_varint(sb, PROFILE_DURATION_NANOS, (uint64_t)(x->end_ns - first));
    }
    put_value_type(sb, msg, PROFILE_PERIOD_TYPE, st, "wall", "nanoseconds");
    put_varint(sb, PROFILE_PERIOD, (uint64_t)x->period_ns);
}

int export_write_pprof(struct exporter *x, FILE *out, struct pt_error *err)
{
    struct gz g = {.out = out};
    /* 15 bits of window, plus 16: a gzip header and trailer (zlib.h, deflateInit2). */
    if (deflateInit2(&g.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        return pt_error_set(err, PT_E_NOMEM, 0, "no memory for gzip");
    }
    struct strings st = {0};
    struct strbuf sb = {0};
    struct strbuf msg = {0};
    struct strbuf sub = {0};
    string_lit(&st, "");
    put_value_type(&sb, &msg, PROFILE_SAMPLE_TYPE, &st, "samples", "count");
    put_value_type(&sb, &msg, PROFILE_SAMPLE_TYPE, &st, "wall", "nanoseconds");
    put_samples(&sb, &msg, &sub, &st, x, &g);
    put_locations(&sb, &msg, &sub, x, &g);
    put_functions(&sb, &msg, &st, x, &g);
    put_header(&sb, &msg, &st, x);
    for (size_t i = 0; i < st.n; i++) {
        put_bytes(&sb, PROFILE_STRING_TABLE, st.items[i].ptr, st.items[i].len);
        gz_drain(&g, &sb);
    }
    int rc = 0;
    if (st.failed || sb.failed || msg.failed || sub.failed) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "no memory for the profile");
    } else {
        gz_write(&g, &sb, Z_FINISH);
        if (g.failed) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "gzip failed");
        } else if (g.write_errno == 0 && fflush(out) != 0) {
            g.write_errno = errno != 0 ? errno : EIO;
        }
        if (rc == 0 && g.write_errno != 0) {
            rc = pt_error_set(err, PT_E_IO, g.write_errno, "writing the profile: %s",
                              strerror(g.write_errno));
        }
    }
    deflateEnd(&g.z);
    free(st.items);
    free(st.slots);
    strbuf_free(&sb);
    strbuf_free(&msg);
    strbuf_free(&sub);
    return rc;
}
