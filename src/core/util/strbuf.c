/* strbuf: a growable byte buffer, and the escapers that turn target bytes into JSON or text. */
#include "config.h"

#include "core/util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STRBUF_MIN_CAP = 64 };

/* Makes room for EXTRA more bytes plus the terminating NUL. */
static bool reserve(struct strbuf *sb, size_t extra)
{
    if (sb->failed) {
        return false;
    }
    size_t need;
    if (__builtin_add_overflow(sb->len, extra, &need) || __builtin_add_overflow(need, 1, &need)) {
        sb->failed = true;
        return false;
    }
    if (need <= sb->cap) {
        return true;
    }
    size_t cap = sb->cap < STRBUF_MIN_CAP ? STRBUF_MIN_CAP : sb->cap;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *data = realloc(sb->data, cap);
    if (data == NULL) {
        sb->failed = true;
        return false;
    }
    sb->data = data;
    sb->cap = cap;
    return true;
}

void strbuf_append(struct strbuf *sb, const char *bytes, size_t len)
{
    if (!reserve(sb, len)) {
        return;
    }
    if (len > 0) {
        memcpy(sb->data + sb->len, bytes, len);
    }
    sb->len += len;
    sb->data[sb->len] = '\0';
}

void strbuf_puts(struct strbuf *sb, const char *s)
{
    strbuf_append(sb, s, strlen(s));
}

void strbuf_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if (!reserve(sb, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence that starts P (AVAIL >= 1 bytes), or 0 when P[0]
 * does not start one. The ranges are the Unicode Standard's Table 3-7: they exclude overlong
 * forms (C0, C1, E0 80..9F, F0 80..8F), UTF-16 surrogates (ED A0..BF) and code points past
 * U+10FFFF (F4 90.., F5..FF); a sequence cut short by the end of P is not well formed. */
static size_t utf8_sequence(const unsigned char *p, size_t avail)
{
    unsigned char b = p[0];
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    size_t n;
    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF) {
            return 0;
        }
    }
    return n;
}

static void json_escape(struct strbuf *sb, unsigned char b, bool invalid)
{
    if (invalid) {
        strbuf_printf(sb, "\\udc%02x", b);
        return;
    }
    switch (b) {
    case '"':
        strbuf_append(sb, "\\\"", 2);
        break;
    case '\\':
        strbuf_append(sb, "\\\\", 2);
        break;
    case '\b':
        strbuf_append(sb, "\\b", 2);
        break;
    case '\f':
        strbuf_append(sb, "\\f", 2);
        break;
    case '\n':
        strbuf_append(sb, "\\n", 2);
        break;
    case '\r':
        strbuf_append(sb, "\\r", 2);
        break;
    case '\t':
        strbuf_append(sb, "\\t", 2);
        break;
    default:
        strbuf_printf(sb, "\\u%04x", b);
        break;
    }
}

void strbuf_json_string(struct strbuf *sb, const char *bytes, size_t len)
{
    if (bytes == NULL) {
        strbuf_append(sb, "null", 4);
        return;
    }
    const unsigned char *p = (const unsigned char *)bytes;
    size_t start = 0;
    size_t i = 0;
    strbuf_append(sb, "\"", 1);
    while (i < len) {
        /* Printable ASCII but the quote and the backslash: most of every string. */
        if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '"' && p[i] != '\\') {
            i++;
            continue;
        }
        size_t n = utf8_sequence(p + i, len - i);
        bool plain = p[i] >= 0x20 && p[i] != '"' && p[i] != '\\' && p[i] != 0x7F;
        if (n > 1 || (n == 1 && plain)) {
            i += n;
            continue;
        }
        /* Copy the run of bytes that needed no escape in one piece. */
        strbuf_append(sb, bytes + start, i - start);
        json_escape(sb, p[i], n == 0);
        i++;
        start = i;
    }
    strbuf_append(sb, bytes + start, i - start);
    strbuf_append(sb, "\"", 1);
}

/* Whether the N-byte UTF-8 sequence at P (N >= 1, well formed) shows as itself on a terminal:
 * not C0, DEL or C1 (U+0080..U+009F, encoded C2 80..C2 9F), which terminals may act on. */
static bool text_printable(const unsigned char *p, size_t n)
{
    if (n == 1) {
        return p[0] >= 0x20 && p[0] != 0x7F;
    }
    return !(n == 2 && p[0] == 0xC2 && p[1] < 0xA0);
}

static void text_escaped(struct strbuf *sb, const char *bytes, size_t len, bool quoted)
{
    const unsigned char *p = (const unsigned char *)bytes;
    size_t start = 0;
    size_t i = 0;
    while (i < len) {
        bool quote = quoted && (p[i] == '"' || p[i] == '\\');
        /* Printable ASCII: most of every line, name and path. */
        if (p[i] >= 0x20 && p[i] < 0x7F && !quote) {
            i++;
            continue;
        }
        size_t n = utf8_sequence(p + i, len - i);
        if (n > 0 && !quote && text_printable(p + i, n)) {
            i += n;
            continue;
        }
        strbuf_append(sb, bytes + start, i - start);
        if (quote) {
            strbuf_printf(sb, "\\%c", p[i]);
            n = 1;
        } else {
            n = n == 0 ? 1 : n;
            for (size_t k = 0; k < n; k++) {
                strbuf_printf(sb, "\\x%02x", p[i + k]);
            }
        }
        i += n;
        start = i;
    }
    strbuf_append(sb, bytes + start, i - start);
}

void strbuf_text(struct strbuf *sb, const char *bytes, size_t len)
{
    text_escaped(sb, bytes, len, false);
}

void strbuf_text_quoted(struct strbuf *sb, const char *bytes, size_t len)
{
    strbuf_append(sb, "\"", 1);
    text_escaped(sb, bytes, len, true);
    strbuf_append(sb, "\"", 1);
}

void strbuf_free(struct strbuf *sb)
{
    if (sb == NULL) {
        return;
    }
    free(sb->data);
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    sb->failed = false;
}

void strbuf_drain(struct strbuf *sb, FILE *out, size_t at, int *write_errno)
{
    if (sb->len == 0 || sb->len < at) {
        return;
    }
    errno = 0;
    if (*write_errno == 0 && fwrite(sb->data, 1, sb->len, out) != sb->len) {
        *write_errno = errno != 0 ? errno : EIO;
    }
    sb->len = 0;
    sb->data[0] = '\0';
}
