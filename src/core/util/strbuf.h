/* strbuf: a growable byte buffer for building text, with escaping for JSON. */
#ifndef PYTOP_CORE_STRBUF_H
#define PYTOP_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A zeroed struct strbuf is empty and valid. DATA is always NUL-terminated once non-NULL.
 * After an allocation failure FAILED is set and further appends do nothing. */
struct strbuf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
};

void strbuf_append(struct strbuf *sb, const char *bytes, size_t len);
void strbuf_puts(struct strbuf *sb, const char *s);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends BYTES[0..LEN) as a JSON string literal, quotes included. Valid UTF-8 passes through;
 * control characters become \uXXXX or \n-style escapes; each byte that is not part of valid
 * UTF-8 becomes \uDCxx (the lone-surrogate escape Python's "surrogateescape" uses), so the
 * original bytes can be recovered. BYTES == NULL appends null (an unknown string). */
void strbuf_json_string(struct strbuf *sb, const char *bytes, size_t len);
/* Appends BYTES[0..LEN) for display: printable valid UTF-8 passes through; control characters
 * (C0, DEL, C1) and bytes that are not valid UTF-8 become \xNN, one escape per byte. */
void strbuf_text(struct strbuf *sb, const char *bytes, size_t len);
/* Like strbuf_text, between double quotes, with " and \ escaped as \" and \\. */
void strbuf_text_quoted(struct strbuf *sb, const char *bytes, size_t len);
/* Where writers of long documents drain their buffer: past this, the buffer's growth costs
 * fresh pages (each more than the write that empties it) and nothing else. */
enum { STRBUF_DRAIN_AT = 12 * 1024 };

/* Writes SB's bytes to OUT and empties SB, once it holds at least AT bytes (any bytes when AT
 * is 0). The first failed write leaves its errno (EIO if none) in *WRITE_ERRNO; after that
 * nothing more is written, so the caller checks once at the end. */
void strbuf_drain(struct strbuf *sb, FILE *out, size_t at, int *write_errno);

void strbuf_free(struct strbuf *sb);

#endif
