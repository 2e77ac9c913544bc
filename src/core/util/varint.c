/* varint: LEB128 varints, zigzag, doubles and strings, written and read back bounded. */
#include "config.h"

#include "core/util/varint.h"

#include <string.h>

void varint_put(struct strbuf *sb, uint64_t v)
{
    uint8_t b[VARINT_MAX_BYTES];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        b[n++] = byte | (v != 0 ? 0x80 : 0);
    } while (v != 0);
    strbuf_append(sb, (const char *)b, n);
}

void varint_put_signed(struct strbuf *sb, int64_t v)
{
    varint_put(sb, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void varint_put_f64(struct strbuf *sb, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(bits >> (8 * i));
    }
    strbuf_append(sb, (const char *)b, sizeof b);
}

void varint_put_str(struct strbuf *sb, struct snap_str s)
{
    if (s.ptr == NULL) {
        varint_put(sb, 0);
        return;
    }
    varint_put(sb, (uint64_t)s.len + 1);
    strbuf_append(sb, s.ptr, s.len);
}

struct varint_cursor varint_cursor(const void *p, size_t len)
{
    return (struct varint_cursor){p, p != NULL ? len : 0, false};
}

static void fail(struct varint_cursor *c)
{
    c->bad = true;
    c->left = 0;
}

uint8_t varint_get_u8(struct varint_cursor *c)
{
    if (c->left < 1) {
        fail(c);
        return 0;
    }
    c->left--;
    return *c->p++;
}

uint64_t varint_get(struct varint_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->left < 1) {
            break;
        }
        uint8_t byte = *c->p++;
        c->left--;
        /* The tenth byte may carry one bit only. */
        if (shift == 63 && byte > 1) {
            break;
        }
        v |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            return v;
        }
    }
    fail(c);
    return 0;
}

int64_t varint_get_signed(struct varint_cursor *c)
{
    uint64_t u = varint_get(c);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

double varint_get_f64(struct varint_cursor *c)
{
    const uint8_t *b = varint_get_bytes(c, 8);
    if (b == NULL) {
        return 0;
    }
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) {
        bits |= (uint64_t)b[i] << (8 * i);
    }
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

size_t varint_get_count(struct varint_cursor *c, size_t max)
{
    uint64_t v = varint_get(c);
    if (c->bad || v > max) {
        fail(c);
        return 0;
    }
    return (size_t)v;
}

struct snap_str varint_get_str(struct varint_cursor *c, size_t max)
{
    uint64_t v = varint_get(c);
    if (c->bad || v == 0) {
        return (struct snap_str){NULL, 0};
    }
    if (v - 1 > max || v - 1 > c->left) {
        fail(c);
        return (struct snap_str){NULL, 0};
    }
    const uint8_t *b = varint_get_bytes(c, (size_t)(v - 1));
    return (struct snap_str){b != NULL ? (const char *)b : "", (size_t)(v - 1)};
}

const uint8_t *varint_get_bytes(struct varint_cursor *c, size_t n)
{
    if (c->left < n) {
        fail(c);
        return NULL;
    }
    if (n == 0) {
        return c->p; /* nothing moves (the bytes may be none at all: P NULL) */
    }
    const uint8_t *b = c->p;
    c->p += n;
    c->left -= n;
    return b;
}
