/* varint: the binary encodings of recordings (doc/recording.md): LEB128 varints, zigzag for
 * signed values, little-endian doubles, strings as a length and bytes; and a cursor that reads
 * them back from bytes pytop did not write (a file), every length and count bounded. */
#ifndef PYTOP_CORE_VARINT_H
#define PYTOP_CORE_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/snapshot.h"
#include "core/util/strbuf.h"

enum { VARINT_MAX_BYTES = 10 };

void varint_put(struct strbuf *sb, uint64_t v);
/* Zigzag: small negative numbers stay short (-1 is one byte). */
void varint_put_signed(struct strbuf *sb, int64_t v);
void varint_put_f64(struct strbuf *sb, double v);
/* A string as varint(len + 1) then its bytes; an unknown one (ptr NULL) as varint 0. */
void varint_put_str(struct strbuf *sb, struct snap_str s);

/* Reads from P[0..LEFT). The first malformed or short read sets BAD and every later read
 * returns 0 (an empty string, a count of 0): callers check BAD once, at the end of a record. */
struct varint_cursor {
    const uint8_t *p;
    size_t left;
    bool bad;
};

struct varint_cursor varint_cursor(const void *p, size_t len);
uint8_t varint_get_u8(struct varint_cursor *c);
uint64_t varint_get(struct varint_cursor *c);
int64_t varint_get_signed(struct varint_cursor *c);
double varint_get_f64(struct varint_cursor *c);
/* A count that must not exceed MAX (and, when each item takes at least one byte, the bytes
 * left): more is BAD, and 0 is returned. */
size_t varint_get_count(struct varint_cursor *c, size_t max);
/* A string of at most MAX bytes, pointing into the cursor's bytes (valid as long as they are);
 * ptr NULL for an unknown one. */
struct snap_str varint_get_str(struct varint_cursor *c, size_t max);
/* N raw bytes, pointing into the cursor's bytes; NULL (and BAD) when fewer are left. */
const uint8_t *varint_get_bytes(struct varint_cursor *c, size_t n);

#endif
