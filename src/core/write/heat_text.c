/* heat_text: the source heat view's counts as annotated source. */
#include "config.h"

#include "core/write/heat_text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/util/strbuf.h"

static const char *line_text(const struct snapshot_source *src, const struct sampler_heat *h,
                             int line, size_t *len)
{
    if (src == NULL || src->line == NULL || h->file.ptr == NULL || line <= 0) {
        return NULL;
    }
    return src->line(src->ctx, h->file.ptr, h->file.len, line, len);
}

/* The columns a line is indented by (a tab to the next multiple of 8); -1 for a blank line. */
static int indent_of(const char *t, size_t len)
{
    int col = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == ' ') {
            col++;
        } else if (t[i] == '\t') {
            col = (col / 8 + 1) * 8;
        } else if (t[i] == '\r' || t[i] == '\f') {
            continue;
        } else {
            return col;
        }
    }
    return -1;
}

static bool starts_with(const char *t, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(t, word, n) == 0;
}

/* Where a function's body ends, reading its source from FIRST: the last line before one that
 * is no deeper than the first and neither closes a bracket nor belongs to the header (its
 * decorators, then the def or class line). */
static int body_end(const struct snapshot_source *src, const struct sampler_heat *h, int first)
{
    size_t len = 0;
    const char *t = line_text(src, h, first, &len);
    int base = t != NULL ? indent_of(t, len) : -1;
    if (base < 0) {
        return first;
    }
    bool header = t[base] == '@'; /* decorators come before the def */
    int last = first;
    for (int n = first + 1; n < first + HEAT_SOURCE_LINES_MAX; n++) {
        t = line_text(src, h, n, &len);
        if (t == NULL) {
            break;
        }
        int in = indent_of(t, len);
        if (in < 0) {
            continue; /* blank: the body may go on */
        }
        const char *s = t + in;
        size_t rest = len - (size_t)in;
        if (in <= base) {
            bool closes = rest > 0 && (*s == ')' || *s == ']' || *s == '}');
            bool head = header && (rest > 0 && (*s == '@' || starts_with(s, rest, "def ") ||
                                                starts_with(s, rest, "async def ") ||
                                                starts_with(s, rest, "class ")));
            if (!closes && !head) {
                break;
            }
            if (head && *s != '@') {
                header = false;
            }
        }
        last = n;
    }
    return last;
}

/* The module's whole file: its last line, up to the bound, found by halving (line N exists
 * as long as N is within the file): a few lookups however long the file. */
static int file_end(const struct snapshot_source *src, const struct sampler_heat *h)
{
    size_t len;
    int lo = 0; /* a line that exists (0: none known) */
    int hi = HEAT_SOURCE_LINES_MAX + 1; /* one that does not, or past the bound */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (line_text(src, h, mid, &len) != NULL) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

struct heat_range heat_source_range(const struct sampler_heat *h, const struct snapshot_source *src)
{
    struct heat_range r = {0, 0, false};
    int lo = 0;
    int hi = 0;
    for (size_t i = 0; i < h->n_lines; i++) {
        int line = h->lines[i].line;
        if (line > 0) {
            lo = lo == 0 || line < lo ? line : lo;
            hi = line > hi ? line : hi;
        }
    }
    size_t len;
    int first = h->first_line > 0 ? h->first_line : lo;
    if (first > 0 && line_text(src, h, first, &len) != NULL) {
        r.readable = true;
        bool module = h->function.len == 8 && memcmp(h->function.ptr, "<module>", 8) == 0;
        r.first = module ? 1 : first;
        r.last = module ? file_end(src, h) : body_end(src, h, first);
    } else {
        r.first = lo;
        r.last = hi;
    }
    /* Every counted line shows, wherever the reading of the source ended. */
    if (lo > 0 && (r.first == 0 || lo < r.first)) {
        r.first = lo;
    }
    if (hi > r.last) {
        r.last = hi;
    }
    if (r.last - r.first >= HEAT_SOURCE_LINES_MAX) {
        r.last = r.first + HEAT_SOURCE_LINES_MAX - 1;
    }
    return r;
}

const struct sampler_heat_line *heat_find_line(const struct sampler_heat *h, int line)
{
    size_t lo = 0;
    size_t hi = h->n_lines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->lines[mid].line < line) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < h->n_lines && h->lines[lo].line == line ? &h->lines[lo] : NULL;
}

double heat_pct(const struct sampler_heat *h, uint64_t part)
{
    return h->thread_samples > 0 ? 100.0 * (double)part / (double)h->thread_samples : 0;
}

/* Each instruction of LINE counted: its shares, offset, name and the forms seen. */
static void write_instrs(const struct sampler_heat *h, int line, struct strbuf *sb)
{
    for (size_t i = 0; i < h->n_instrs; i++) {
        const struct sampler_heat_instr *in = &h->instrs[i];
        if (in->line != line) {
            continue;
        }
        strbuf_printf(sb, "        %6.1f %7.1f     @%-5u %s", heat_pct(h, in->own),
                      heat_pct(h, in->total), (unsigned)in->offset, in->name ? in->name : "?");
        for (size_t k = 0; k < in->n_forms; k++) {
            strbuf_printf(sb, "%s%s", k == 0 ? " (" : ", ", in->forms[k]);
        }
        strbuf_puts(sb, in->n_forms > 0 ? ")\n" : "\n");
    }
}

static void write_line(const struct sampler_heat *h, const struct snapshot_source *src, int line,
                       struct strbuf *sb)
{
    const struct sampler_heat_line *c = heat_find_line(h, line);
    if (c != NULL) {
        strbuf_printf(sb, "%7d %6.1f %7.1f  ", line, heat_pct(h, c->own), heat_pct(h, c->total));
    } else {
        strbuf_printf(sb, "%7d %6s %7s  ", line, "", "");
    }
    size_t len = 0;
    const char *t = line_text(src, h, line, &len);
    if (t != NULL) {
        strbuf_text(sb, t, len); /* the target's file: escaped as every name pytop writes */
    }
    strbuf_puts(sb, "\n");
    if (c != NULL) {
        write_instrs(h, line, sb);
    }
}

int heat_write_text(const struct sampler_heat *h, const struct snapshot_source *src,
                    const char *who, FILE *out, struct pt_error *err)
{
    struct strbuf sb = {0};
    int write_errno = 0;
    strbuf_puts(&sb, "Source heat of ");
    strbuf_text(&sb, h->function.ptr, h->function.len);
    strbuf_puts(&sb, " (");
    if (h->file.ptr != NULL) {
        strbuf_text_quoted(&sb, h->file.ptr, h->file.len);
    } else {
        strbuf_puts(&sb, "file unknown");
    }
    strbuf_printf(&sb, ", first line %d)\n", h->first_line);
    if (who != NULL) {
        strbuf_printf(&sb, "%s\n", who);
    }
    strbuf_printf(&sb,
                  "Mode %s: %llu thread-samples%s over %.1f s; the function was running in "
                  "%.1f %% (own) and on the stack in %.1f %% (total)\n",
                  sampler_mode_name(h->mode), (unsigned long long)h->thread_samples,
                  sampler_mode_words(h->mode), h->span_s, heat_pct(h, h->own),
                  heat_pct(h, h->total));
    strbuf_puts(&sb, "Each line's OWN% is the share of thread-samples running it, TOTAL% of those "
                     "with it on the stack.\n");
    struct heat_range r = heat_source_range(h, src);
    if (!r.readable) {
        strbuf_puts(&sb, "The source could not be read: only the counted lines are listed.\n");
    }
    if (h->truncated) {
        strbuf_puts(&sb, "Some lines or code objects were left out (bounds).\n");
    }
    if (h->instr_note[0] != '\0') {
        strbuf_printf(&sb, "Instructions not named: %s.\n", h->instr_note);
    }
    strbuf_printf(&sb, "\n%7s %6s %7s  %s\n", "LINE", "OWN%", "TOTAL%", "SOURCE");
    const struct sampler_heat_line *unknown = heat_find_line(h, -1);
    if (unknown != NULL) {
        strbuf_printf(&sb, "%7s %6.1f %7.1f  (line unknown)\n", "?", heat_pct(h, unknown->own),
                      heat_pct(h, unknown->total));
    }
    for (int line = r.first; r.first > 0 && line <= r.last; line++) {
        if (r.readable || heat_find_line(h, line) != NULL) {
            write_line(h, src, line, &sb);
            strbuf_drain(&sb, out, STRBUF_DRAIN_AT, &write_errno);
        }
    }
    bool failed = sb.failed;
    strbuf_drain(&sb, out, 0, &write_errno);
    strbuf_free(&sb);
    if (failed) {
        return pt_error_set(err, PT_E_NOMEM, 0, "annotated source");
    }
    if (write_errno != 0 || ferror(out)) {
        int e = write_errno != 0 ? write_errno : EIO;
        return pt_error_set(err, PT_E_IO, e, "write: %s", strerror(e));
    }
    return 0;
}
