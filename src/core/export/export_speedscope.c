/* export_speedscope: speedscope's file format (https://www.speedscope.app/file-format-schema.json),
 * one "sampled" profile per thread, weights in seconds. */
#include "config.h"

#include "core/export/export_int.h"

#include <inttypes.h>

static void put_seconds(struct strbuf *sb, int64_t ns)
{
    export_put_decimal(sb, ns, 9);
}

static void put_frames(struct strbuf *sb, const struct exporter *x)
{
    strbuf_puts(sb, "\"shared\":{\"frames\":[");
    for (size_t i = 0; i < x->n_frames; i++) {
        const struct export_frame *fr = &x->frames[i];
        const struct export_func *f = &x->funcs[fr->func];
        struct snap_str title = export_func_title(f);
        strbuf_puts(sb, i > 0 ? ",{\"name\":" : "{\"name\":");
        strbuf_json_string(sb, title.ptr, title.len);
        if (f->file.ptr != NULL) {
            strbuf_puts(sb, ",\"file\":");
            strbuf_json_string(sb, f->file.ptr, f->file.len);
        }
        if (fr->line >= 0) {
            strbuf_printf(sb, ",\"line\":%d", fr->line);
        }
        strbuf_append(sb, "}", 1);
    }
    strbuf_puts(sb, "]}");
}

/* One thread's profile: each run of one stack is one sample, its weight the time the run
 * stands for (consecutive thread-samples with one stack add up to the same flame graph and
 * timeline, in a file a fraction of the size). */
static void put_profile(struct strbuf *sb, const struct exporter *x, const struct export_thread *t,
                        FILE *out, int *write_errno)
{
    char buf[64];
    char num[32];
    struct snap_str name = export_thread_name(t, buf, sizeof buf);
    strbuf_puts(sb, "{\"type\":\"sampled\",\"name\":");
    struct strbuf title = {0};
    strbuf_append(&title, name.ptr, name.len);
    if (t->name.ptr != NULL) {
        strbuf_printf(&title, " (%s)", export_thread_number(t, num, sizeof num));
    }
    strbuf_json_string(sb, title.data != NULL ? title.data : "", title.len);
    strbuf_free(&title);
    strbuf_puts(sb, ",\"unit\":\"seconds\",\"startValue\":");
    put_seconds(sb, t->runs[0].start_ns);
    strbuf_puts(sb, ",\"endValue\":");
    put_seconds(sb, t->runs[t->n_runs - 1].end_ns);
    strbuf_puts(sb, ",\"samples\":[");
    for (size_t i = 0; i < t->n_runs; i++) {
        size_t n;
        const uint32_t *frames = export_stack_frames(x, t->runs[i].stack, &n);
        strbuf_append(sb, i > 0 ? ",[" : "[", i > 0 ? 2 : 1);
        for (size_t k = n; k > 0; k--) {
            if (k < n) {
                strbuf_append(sb, ",", 1);
            }
            export_put_u64(sb, frames[k - 1]);
        }
        strbuf_append(sb, "]", 1);
        strbuf_drain(sb, out, STRBUF_DRAIN_AT, write_errno);
    }
    strbuf_puts(sb, "],\"weights\":[");
    for (size_t i = 0; i < t->n_runs; i++) {
        if (i > 0) {
            strbuf_append(sb, ",", 1);
        }
        put_seconds(sb, t->runs[i].end_ns - t->runs[i].start_ns);
        strbuf_drain(sb, out, STRBUF_DRAIN_AT, write_errno);
    }
    strbuf_puts(sb, "]}");
}

static void put_name(struct strbuf *sb, const struct export_opts *opts)
{
    const struct rec_header *h = opts->header;
    struct strbuf name = {0};
    if (h != NULL && h->pid != 0) {
        strbuf_printf(&name, "pid %d", (int)h->pid);
    } else {
        strbuf_puts(&name, "pytop");
    }
    if (h != NULL && h->cmdline != NULL && h->n_cmdline > 0) {
        strbuf_puts(&name, ":");
        for (size_t i = 0; i < h->n_cmdline; i++) {
            strbuf_append(&name, " ", 1);
            if (h->cmdline[i].ptr != NULL) {
                strbuf_append(&name, h->cmdline[i].ptr, h->cmdline[i].len);
            }
        }
    }
    strbuf_json_string(sb, name.data != NULL ? name.data : "", name.len);
    strbuf_free(&name);
}

int export_write_speedscope(struct exporter *x, FILE *out, struct pt_error *err)
{
    struct strbuf sb = {0};
    int write_errno = 0;
    strbuf_puts(&sb, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",");
    put_frames(&sb, x);
    strbuf_puts(&sb, ",\"profiles\":[");
    bool first = true;
    for (size_t i = 0; i < x->n_threads; i++) {
        const struct export_thread *t = &x->threads[i];
        if (t->n_runs == 0) {
            continue;
        }
        if (!first) {
            strbuf_append(&sb, ",", 1);
        }
        first = false;
        put_profile(&sb, x, t, out, &write_errno);
    }
    strbuf_puts(&sb, "],\"name\":");
    put_name(&sb, &x->opts);
    strbuf_puts(&sb, ",\"activeProfileIndex\":0,\"exporter\":\"pytop " PACKAGE_VERSION "\"}\n");
    int rc = export_flush(&sb, out, &write_errno, "speedscope profile", err);
    strbuf_free(&sb);
    return rc;
}
