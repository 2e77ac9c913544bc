/* ui_text: text on the screen: target bytes escaped and clipped to columns; filter matching. */
#include "config.h"

#include "ui/ui_text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "core/util/strbuf.h"
#include "ui/view.h"

/* One character of valid UTF-8 at S (LEN > 0 bytes): its code point and length. Invalid bytes
 * (none after strbuf_text, but be safe) count as one byte, code point -1. */
static int next_char(const unsigned char *s, size_t len, int32_t *cp)
{
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (n == 0 || (size_t)n > len) {
        *cp = -1;
        return 1;
    }
    int32_t v = n == 1 ? s[0] : s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

/* The escaped form of S for this terminal: strbuf_text(), then outside UTF-8 every non-ASCII
 * byte, and in UTF-8 every character that takes no column (format and combining characters,
 * which could rearrange what is drawn around them), as escapes. */
static void escape(struct strbuf *out, const char *s, size_t len, bool utf8)
{
    struct strbuf raw = {0};
    strbuf_text(&raw, s, len);
    const unsigned char *p = (const unsigned char *)(raw.data != NULL ? raw.data : "");
    size_t n = raw.len;
    for (size_t i = 0; i < n;) {
        int32_t cp;
        int k = next_char(p + i, n - i, &cp);
        if (cp < 0 || (!utf8 && cp >= 0x80)) {
            for (int j = 0; j < k; j++) {
                strbuf_printf(out, "\\x%02x", p[i + j]);
            }
        } else if (cp >= 0x80 && wcwidth((wchar_t)cp) < 1) {
            strbuf_printf(out, "\\u%04x", (unsigned)cp);
        } else {
            strbuf_append(out, (const char *)p + i, (size_t)k);
        }
        i += (size_t)k;
    }
    strbuf_free(&raw);
}

static int char_width(int32_t cp)
{
    if (cp < 0x80) {
        return 1;
    }
    int w = wcwidth((wchar_t)cp);
    return w > 0 ? w : 1;
}

/* Bytes of the escaped text T (LEN bytes) that fit in WIDTH columns, from its start; *COLS
 * gets their width. */
static size_t fit_head(const char *t, size_t len, int width, int *cols)
{
    size_t i = 0;
    int used = 0;
    while (i < len) {
        int32_t cp;
        int k = next_char((const unsigned char *)t + i, len - i, &cp);
        int cw = char_width(cp);
        if (used + cw > width) {
            break;
        }
        used += cw;
        i += (size_t)k;
    }
    *cols = used;
    return i;
}

static int text_width(const char *t, size_t len)
{
    int cols;
    fit_head(t, len, 1 << 30, &cols);
    return cols;
}

/* Draws escaped text T in WIDTH columns, cut at the end or (TAIL) at the start. */
static int draw(WINDOW *w, const char *t, size_t len, int width, bool tail,
                const struct ui_style *st)
{
    if (width <= 0) {
        return 0;
    }
    int total = text_width(t, len);
    if (total <= width) {
        waddnstr(w, t, (int)len);
        return total;
    }
    int cols;
    if (!tail) {
        size_t n = fit_head(t, len, width - 1, &cols);
        waddnstr(w, t, (int)n);
        waddstr(w, st->ellipsis);
        return cols + 1;
    }
    /* Skip characters from the start until the rest fits beside the ellipsis. */
    size_t i = 0;
    int left = total;
    while (i < len && left > width - 1) {
        int32_t cp;
        int k = next_char((const unsigned char *)t + i, len - i, &cp);
        left -= char_width(cp);
        i += (size_t)k;
    }
    waddstr(w, st->ellipsis);
    waddnstr(w, t + i, (int)(len - i));
    return left + 1;
}

static int put(WINDOW *w, struct snap_str s, int width, bool tail, const struct ui_style *st)
{
    if (s.ptr == NULL) {
        return draw(w, "?", 1, width, false, st);
    }
    struct strbuf sb = {0};
    escape(&sb, s.ptr, s.len, st->utf8);
    int n = draw(w, sb.data != NULL ? sb.data : "", sb.len, width, tail, st);
    strbuf_free(&sb);
    return n;
}

int ui_text_put(WINDOW *w, struct snap_str s, int width, const struct ui_style *st)
{
    return put(w, s, width, false, st);
}

int ui_text_put_tail(WINDOW *w, struct snap_str s, int width, const struct ui_style *st)
{
    return put(w, s, width, true, st);
}

int ui_text_puts(WINDOW *w, const char *s, int width, const struct ui_style *st)
{
    return put(w, ui_text_str(s), width, false, st);
}

int ui_text_width(struct snap_str s, const struct ui_style *st)
{
    if (s.ptr == NULL) {
        return 1;
    }
    struct strbuf sb = {0};
    escape(&sb, s.ptr, s.len, st->utf8);
    int n = text_width(sb.data != NULL ? sb.data : "", sb.len);
    strbuf_free(&sb);
    return n;
}

int ui_text_printf(WINDOW *w, int width, const struct ui_style *st, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ui_text_puts(w, buf, width, st);
}

static unsigned char fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

bool ui_text_match(const char *filter, struct snap_str s)
{
    size_t n = filter != NULL ? strlen(filter) : 0;
    if (n == 0) {
        return true;
    }
    if (s.ptr == NULL || s.len < n) {
        return false;
    }
    for (size_t i = 0; i + n <= s.len; i++) {
        size_t j = 0;
        while (j < n && fold((unsigned char)s.ptr[i + j]) == fold((unsigned char)filter[j])) {
            j++;
        }
        if (j == n) {
            return true;
        }
    }
    return false;
}

struct snap_str ui_text_base_name(struct snap_str file)
{
    const char *slash = file.ptr != NULL ? memrchr(file.ptr, '/', file.len) : NULL;
    if (slash == NULL) {
        return file;
    }
    size_t skip = (size_t)(slash + 1 - file.ptr);
    return (struct snap_str){file.ptr + skip, file.len - skip};
}

void ui_text_hides(char *buf, size_t size, size_t hidden, size_t total, const char *noun)
{
    snprintf(buf, size, "hides %zu of %zu %s%s", hidden, total, noun, total == 1 ? "" : "s");
}
