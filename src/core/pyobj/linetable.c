/* linetable: decode CPython's code-object line tables (lnotab, 3.10 linetable, 3.11+ locations). */
#include "config.h"

#include "core/pyobj/linetable.h"

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>

#include "core/util/error.h"
#include "core/util/limits.h"

/* A varint carries 6 bits a byte; six bytes already hold more than the 32 bits CPython writes. */
enum {
    VARINT_MAX_BYTES = 6,
};

/* The 4-bit entry codes of the 3.11+ location table (Objects/locations.md). */
enum loc_code {
    LOC_SHORT_LAST = 9,  /* 0-9: same line, column from the code and one more byte */
    LOC_ONE_LINE_0 = 10, /* 10-12: line advances by code - 10, two column bytes */
    LOC_ONE_LINE_2 = 12, /* the last of them */
    LOC_NO_COLUMN = 13,  /* signed line delta only */
    LOC_LONG = 14,       /* line delta, end-line delta, column + 1, end column + 1 */
    LOC_NONE = 15,       /* no location at all */
};

/* A read position in a table; the getters fail rather than read past the end. */
struct cursor {
    const uint8_t *buf;
    size_t len;
    size_t pos;
};

static bool cursor_at_end(const struct cursor *c)
{
    return c->pos >= c->len;
}

static int get_byte(struct cursor *c, uint8_t *out)
{
    if (c->pos >= c->len) {
        return -1;
    }
    *out = c->buf[c->pos];
    c->pos++;
    return 0;
}

static int check_size(const uint8_t *buf, size_t len, const char *what, struct pt_error *err)
{
    assert(buf != NULL || len == 0);
    if (len > LIMIT_LINETABLE) {
        return pt_error_set(err, PT_E_LIMIT, 0, "%s of %zu bytes is longer than %d", what, len,
                            (int)LIMIT_LINETABLE);
    }
    return 0;
}

/* The builtin checks that the exact sum fits in an int, whatever the type of DELTA. */
static int add_line(int *line, int64_t delta, const char *what, size_t at, struct pt_error *err)
{
    int sum = 0;
    if (__builtin_add_overflow(*line, delta, &sum)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%s: line number overflows at byte %zu", what, at);
    }
    *line = sum;
    return 0;
}

/* Every byte of a location entry after the first has its high bit clear; a set bit marks the
 * start of the next entry, so the current one was cut short. */
static int get_entry_byte(struct cursor *c, uint8_t *out, struct pt_error *err)
{
    size_t at = c->pos;
    if (get_byte(c, out) < 0 || (*out & 0x80) != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0, "location table: entry cut short at byte %zu", at);
    }
    return 0;
}

/* Little-endian 6-bit chunks, 0x40 meaning "more follows". */
static int read_varint(struct cursor *c, uint32_t *out, struct pt_error *err)
{
    size_t start = c->pos;
    uint64_t value = 0;
    for (unsigned i = 0; i < VARINT_MAX_BYTES; i++) {
        uint8_t b = 0;
        if (get_entry_byte(c, &b, err) < 0) {
            return -1;
        }
        value |= (uint64_t)(b & 0x3f) << (6 * i);
        if ((b & 0x40) == 0) {
            if (value > UINT32_MAX) {
                break;
            }
            *out = (uint32_t)value;
            return 0;
        }
    }
    return pt_error_set(err, PT_E_FORMAT, 0, "location table: varint at byte %zu is too long",
                        start);
}

/* The low bit is the sign, the rest the magnitude. */
static int read_svarint(struct cursor *c, int64_t *out, struct pt_error *err)
{
    uint32_t raw = 0;
    if (read_varint(c, &raw, err) < 0) {
        return -1;
    }
    int64_t magnitude = raw >> 1;
    *out = (raw & 1) ? -magnitude : magnitude;
    return 0;
}

/* A column is stored plus one, so that 0 can mean "unknown" (-1). */
static int read_column(struct cursor *c, int *out, struct pt_error *err)
{
    size_t start = c->pos;
    uint32_t raw = 0;
    if (read_varint(c, &raw, err) < 0) {
        return -1;
    }
    if (raw > INT_MAX) {
        return pt_error_set(err, PT_E_FORMAT, 0, "location table: column at byte %zu overflows",
                            start);
    }
    *out = (int)raw - 1;
    return 0;
}

static int read_long_form(struct cursor *c, int *line, struct linetable_loc *loc,
                          struct pt_error *err)
{
    int64_t delta = 0;
    uint32_t end_delta = 0;
    size_t at = c->pos;
    if (read_svarint(c, &delta, err) < 0 || add_line(line, delta, "location table", at, err) < 0) {
        return -1;
    }
    loc->line = *line;
    loc->end_line = *line;
    at = c->pos;
    if (read_varint(c, &end_delta, err) < 0 ||
        add_line(&loc->end_line, end_delta, "location table", at, err) < 0) {
        return -1;
    }
    if (read_column(c, &loc->col, err) < 0 || read_column(c, &loc->end_col, err) < 0) {
        return -1;
    }
    return 0;
}

/* Decodes the payload of an entry whose first byte carried CODE; LINE is the running line. */
static int read_entry_body(struct cursor *c, unsigned code, int *line, struct linetable_loc *loc,
                           struct pt_error *err)
{
    uint8_t b1 = 0;
    uint8_t b2 = 0;
    int64_t delta = 0;
    size_t at = c->pos;
    *loc = (struct linetable_loc){-1, -1, -1, -1};
    if (code == LOC_NONE) {
        return 0;
    }
    if (code == LOC_LONG) {
        return read_long_form(c, line, loc, err);
    }
    if (code == LOC_NO_COLUMN) {
        if (read_svarint(c, &delta, err) < 0) {
            return -1;
        }
    } else if (code >= LOC_ONE_LINE_0) {
        assert(code <= LOC_ONE_LINE_2);
        if (get_entry_byte(c, &b1, err) < 0 || get_entry_byte(c, &b2, err) < 0) {
            return -1;
        }
        delta = code - LOC_ONE_LINE_0;
        loc->col = b1;
        loc->end_col = b2;
    } else {
        assert(code <= LOC_SHORT_LAST);
        if (get_entry_byte(c, &b1, err) < 0) {
            return -1;
        }
        loc->col = (int)(code << 3 | b1 >> 4);
        loc->end_col = loc->col + (b1 & 15);
    }
    if (add_line(line, delta, "location table", at, err) < 0) {
        return -1;
    }
    loc->line = *line;
    loc->end_line = *line;
    return 0;
}

/* One entry: a marker byte (high bit set, 4-bit code, length - 1 in code units) and its payload. */
static int read_location_entry(struct cursor *c, int *line, uint32_t *units,
                               struct linetable_loc *loc, struct pt_error *err)
{
    size_t start = c->pos;
    uint8_t head = 0;
    if (get_byte(c, &head) < 0 || (head & 0x80) == 0) {
        return pt_error_set(err, PT_E_FORMAT, 0, "location table: no entry starts at byte %zu",
                            start);
    }
    *units = (uint32_t)(head & 7) + 1;
    return read_entry_body(c, (head >> 3) & 15, line, loc, err);
}

int linetable_locations_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t addrq,
                             struct linetable_loc *out, struct pt_error *err)
{
    assert(out != NULL);
    if (check_size(buf, len, "location table", err) < 0) {
        return -1;
    }
    struct cursor c = {.buf = buf, .len = len, .pos = 0};
    int line = firstlineno;
    uint64_t start = 0;
    while (!cursor_at_end(&c)) {
        struct linetable_loc loc;
        uint32_t units = 0;
        if (read_location_entry(&c, &line, &units, &loc, err) < 0) {
            return -1;
        }
        if (addrq < start + units) {
            *out = loc;
            return 0;
        }
        start += units;
    }
    return pt_error_set(err, PT_E_FORMAT, 0,
                        "location table ends at code unit %" PRIu64 ", before %" PRIu32, start,
                        addrq);
}

/* Both older formats are (unsigned byte, signed byte) pairs. */
static int check_pairs(const uint8_t *buf, size_t len, const char *what, struct pt_error *err)
{
    if (check_size(buf, len, what, err) < 0) {
        return -1;
    }
    if (len % 2 != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%s has an odd length (%zu bytes)", what, len);
    }
    return 0;
}

/* A pair of an address increment and a line increment, signed unless UNSIGNED_LINES. */
static int get_pair_as(struct cursor *c, uint8_t *addr_delta, int *line_delta,
                       bool unsigned_lines)
{
    uint8_t b = 0;
    if (get_byte(c, addr_delta) < 0 || get_byte(c, &b) < 0) {
        return -1;
    }
    *line_delta = b < 0x80 || unsigned_lines ? b : (int)b - 0x100;
    return 0;
}

static int get_pair(struct cursor *c, uint8_t *addr_delta, int *line_delta)
{
    return get_pair_as(c, addr_delta, line_delta, false);
}

/* 3.10 (Objects/lnotab_notes.txt): each pair ends a range of SDELTA bytes that starts where the
 * previous one ended. A line delta of -128 means the range has no line; empty ranges only move
 * the line. */
int linetable_v310_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t lasti,
                        struct linetable_loc *out, struct pt_error *err)
{
    static const char what[] = "3.10 line table";
    assert(out != NULL);
    if (check_pairs(buf, len, what, err) < 0) {
        return -1;
    }
    struct cursor c = {.buf = buf, .len = len, .pos = 0};
    int line = firstlineno;
    uint64_t end = 0;
    uint8_t sdelta = 0;
    int ldelta = 0;
    while (get_pair(&c, &sdelta, &ldelta) == 0) {
        int range_line = -1;
        if (ldelta != -128) {
            if (add_line(&line, ldelta, what, c.pos - 2, err) < 0) {
                return -1;
            }
            range_line = line;
        }
        end += sdelta;
        if (lasti < end) {
            *out = (struct linetable_loc){range_line, -1, -1, -1};
            return 0;
        }
    }
    return pt_error_set(err, PT_E_FORMAT, 0, "%s ends at byte offset %" PRIu64 ", before %" PRIu32,
                        what, end, lasti);
}

/* 3.9 and older (Objects/lnotab_notes.txt): the line of LASTI is the first line plus the line
 * increments of every pair whose running address is at most LASTI. Past the last pair, the last
 * line holds; an empty table means the whole code is on the first line. */
static int lnotab_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t lasti,
                       bool unsigned_lines, struct linetable_loc *out, struct pt_error *err)
{
    static const char what[] = "lnotab";
    assert(out != NULL);
    if (check_pairs(buf, len, what, err) < 0) {
        return -1;
    }
    struct cursor c = {.buf = buf, .len = len, .pos = 0};
    int line = firstlineno;
    uint64_t addr = 0;
    uint8_t addr_delta = 0;
    int line_delta = 0;
    while (get_pair_as(&c, &addr_delta, &line_delta, unsigned_lines) == 0) {
        addr += addr_delta;
        if (addr > lasti) {
            break;
        }
        if (add_line(&line, line_delta, what, c.pos - 2, err) < 0) {
            return -1;
        }
    }
    *out = (struct linetable_loc){line, -1, -1, -1};
    return 0;
}

int linetable_lnotab_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t lasti,
                          struct linetable_loc *out, struct pt_error *err)
{
    return lnotab_find(buf, len, firstlineno, lasti, false, out, err);
}

int linetable_lnotab_unsigned_find(const uint8_t *buf, size_t len, int firstlineno,
                                   uint32_t lasti, struct linetable_loc *out,
                                   struct pt_error *err)
{
    return lnotab_find(buf, len, firstlineno, lasti, true, out, err);
}
