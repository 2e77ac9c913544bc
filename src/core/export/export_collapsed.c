/* export_collapsed: one line per distinct (thread, stack), as flamegraph.pl and its kin read:
 * thread TID "NAME";FUNCTION (FILE:LINE);...;FUNCTION (FILE:LINE) COUNT
 * outermost frame first, lines sorted. */
#include "config.h"

#include "core/export/export_int.h"

#include <stdlib.h>
#include <string.h>

/* Appends BYTES as the collapsed format keeps a name: printable UTF-8 as itself; ';' (which
 * separates frames), '\' (which starts escapes), control characters and bytes that are not
 * UTF-8 as \xNN. ';' and '\' are ASCII, never inside a UTF-8 sequence, so strbuf_text() can
 * take the pieces between them. */
static void put_name(struct strbuf *sb, const char *bytes, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] == ';' || bytes[i] == '\\') {
            strbuf_text(sb, bytes + start, i - start);
            strbuf_printf(sb, "\\x%02x", (unsigned char)bytes[i]);
            start = i + 1;
        }
    }
    strbuf_text(sb, bytes + start, len - start);
}

static void put_str(struct strbuf *sb, struct snap_str s)
{
    if (s.ptr == NULL) {
        strbuf_append(sb, "?", 1);
    } else {
        put_name(sb, s.ptr, s.len);
    }
}

static void put_frame(struct strbuf *sb, const struct exporter *x, uint32_t fi)
{
    const struct export_frame *fr = &x->frames[fi];
    const struct export_func *f = &x->funcs[fr->func];
    struct snap_str title = export_func_title(f);
    put_name(sb, title.ptr, title.len);
    if (f->synthetic) {
        return;
    }
    strbuf_append(sb, " (", 2);
    put_str(sb, f->file);
    if (fr->line >= 0) {
        strbuf_printf(sb, ":%d)", fr->line);
    } else {
        strbuf_append(sb, ":?)", 3);
    }
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int export_write_collapsed(struct exporter *x, FILE *out, struct pt_error *err)
{
    /* Each frame's and thread's text once; the lines are made of them. */
    struct strbuf text = {0};
    size_t *frame_at = calloc(x->n_frames + 1, sizeof *frame_at);
    size_t *thread_at = calloc(x->n_threads + 1, sizeof *thread_at);
    size_t *line_at = calloc(x->n_pairs + 1, sizeof *line_at);
    char **lines = calloc(x->n_pairs + 1, sizeof *lines);
    struct strbuf all = {0};
    int rc = -1;
    if (frame_at == NULL || thread_at == NULL || line_at == NULL || lines == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "no memory for the collapsed stacks");
        goto out;
    }
    for (size_t i = 0; i < x->n_frames; i++) {
        frame_at[i] = text.len;
        put_frame(&text, x, (uint32_t)i);
    }
    frame_at[x->n_frames] = text.len;
    for (size_t i = 0; i < x->n_threads; i++) {
        const struct export_thread *t = &x->threads[i];
        char num[32];
        thread_at[i] = text.len;
        strbuf_printf(&text, "thread %s ", export_thread_number(t, num, sizeof num));
        if (t->name.ptr == NULL) {
            strbuf_append(&text, "?", 1);
        } else {
            strbuf_append(&text, "\"", 1);
            put_name(&text, t->name.ptr, t->name.len);
            strbuf_append(&text, "\"", 1);
        }
    }
    thread_at[x->n_threads] = text.len;
    size_t n_lines = 0;
    for (size_t i = 0; i < x->n_pairs; i++) {
        const struct export_pair *p = &x->pairs[i];
        if (p->count == 0 || text.failed) {
            continue;
        }
        line_at[n_lines++] = all.len;
        strbuf_append(&all, text.data + thread_at[p->thread],
                      thread_at[p->thread + 1] - thread_at[p->thread]);
        size_t n;
        const uint32_t *frames = export_stack_frames(x, p->stack, &n);
        for (size_t k = n; k > 0; k--) {
            uint32_t fi = frames[k - 1];
            strbuf_append(&all, ";", 1);
            strbuf_append(&all, text.data + frame_at[fi], frame_at[fi + 1] - frame_at[fi]);
        }
        strbuf_printf(&all, " %llu", (unsigned long long)p->count);
        /* Names are escaped: no line holds a NUL, so each ends at the one put here. */
        strbuf_append(&all, "", 1);
    }
    if (text.failed || all.failed) {
        pt_error_set(err, PT_E_NOMEM, 0, "no memory for the collapsed stacks");
        goto out;
    }
    for (size_t i = 0; i < n_lines; i++) {
        lines[i] = all.data + line_at[i];
    }
    qsort(lines, n_lines, sizeof *lines, compare_lines);
    struct strbuf sb = {0};
    int write_errno = 0;
    for (size_t i = 0; i < n_lines; i++) {
        strbuf_puts(&sb, lines[i]);
        strbuf_append(&sb, "\n", 1);
        strbuf_drain(&sb, out, STRBUF_DRAIN_AT, &write_errno);
    }
    rc = export_flush(&sb, out, &write_errno, "collapsed stacks", err);
    strbuf_free(&sb);
out:
    free(frame_at);
    free(thread_at);
    free(line_at);
    free(lines);
    strbuf_free(&text);
    strbuf_free(&all);
    return rc;
}
