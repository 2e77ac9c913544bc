/* export_chrome: Chrome's Trace Event Format (the JSON object form), as Perfetto and
 * chrome://tracing read it: per thread a thread_name event and its stacks over time as nested
 * complete ("X") events, one per function call as far as the samples tell calls apart. */
#include "config.h"

#include "core/export/export_int.h"

#include <inttypes.h>
#include <stdlib.h>

/* One complete event of the thread being written: a function, from START to END. */
struct event {
    uint32_t func;
    int64_t start_ns;
    int64_t end_ns;
};

struct timeline {
    struct event *events; /* in the order they open: by start, outer before inner */
    size_t n_events;
    size_t cap_events;
    size_t *open; /* indexes of the events still open, outermost first */
    size_t n_open;
    size_t cap_open;
};

static void put_us(struct strbuf *sb, int64_t ns)
{
    export_put_decimal(sb, ns, 3);
}

static void close_to(struct timeline *tl, size_t depth, int64_t at)
{
    while (tl->n_open > depth) {
        tl->n_open--;
        tl->events[tl->open[tl->n_open]].end_ns = at;
    }
}

/* The thread's runs as events: a function stays one event while the samples keep it and every
 * frame outside it, from the first sample that has it to the end of the last. A gap between
 * runs (samples that did not count the thread) closes everything. */
static int thread_events(const struct exporter *x, const struct export_thread *t,
                         struct timeline *tl)
{
    tl->n_events = 0;
    tl->n_open = 0;
    int64_t prev_end = -1;
    for (size_t r = 0; r < t->n_runs; r++) {
        const struct export_run *run = &t->runs[r];
        /* A recording whose times go back must still nest: nothing starts before the last
         * end. */
        int64_t start = run->start_ns > prev_end ? run->start_ns : prev_end;
        int64_t end = run->end_ns > start ? run->end_ns : start;
        if (start != prev_end) {
            close_to(tl, 0, prev_end);
        }
        size_t n;
        const uint32_t *frames = export_stack_frames(x, run->stack, &n);
        size_t depth = 0;
        while (depth < tl->n_open && depth < n &&
               tl->events[tl->open[depth]].func == x->frames[frames[n - 1 - depth]].func) {
            depth++;
        }
        close_to(tl, depth, start);
        if (export_grow(&tl->events, &tl->cap_events, tl->n_events + (n - depth),
                        sizeof *tl->events) < 0 ||
            export_grow(&tl->open, &tl->cap_open, n, sizeof *tl->open) < 0) {
            return -1;
        }
        for (size_t d = depth; d < n; d++) {
            tl->events[tl->n_events] = (struct event){
                .func = x->frames[frames[n - 1 - d]].func, .start_ns = start, .end_ns = end};
            tl->open[tl->n_open++] = tl->n_events++;
        }
        prev_end = end;
    }
    close_to(tl, 0, prev_end);
    return 0;
}

/* Linux's PID_MAX_LIMIT (include/linux/threads.h): no kernel tid is larger. */
enum { KERNEL_TID_MAX = 1 << 22 };

/* The track of thread I: its kernel tid, or when that is not known (or not one a kernel
 * gives) a number past every kernel tid, so two threads never share a track. */
static int64_t track_tid(const struct exporter *x, size_t i)
{
    pid_t tid = x->threads[i].tid;
    return tid > 0 && tid <= KERNEL_TID_MAX ? (int64_t)tid
                                            : (int64_t)KERNEL_TID_MAX + 1 + (int64_t)i;
}

static void put_event(struct strbuf *sb, const struct exporter *x, const struct event *e, int pid,
                      int64_t tid)
{
    const struct export_func *f = &x->funcs[e->func];
    struct snap_str title = export_func_title(f);
    strbuf_puts(sb, ",\n{\"ph\":\"X\",\"name\":");
    strbuf_json_string(sb, title.ptr, title.len);
    strbuf_puts(sb, f->synthetic ? ",\"cat\":\"pytop\",\"pid\":" : ",\"cat\":\"python\",\"pid\":");
    export_put_decimal(sb, pid, 0);
    strbuf_puts(sb, ",\"tid\":");
    export_put_decimal(sb, tid, 0);
    strbuf_puts(sb, ",\"ts\":");
    put_us(sb, e->start_ns);
    strbuf_puts(sb, ",\"dur\":");
    put_us(sb, e->end_ns - e->start_ns);
    if (!f->synthetic) {
        strbuf_puts(sb, ",\"args\":{\"file\":");
        strbuf_json_string(sb, f->file.ptr, f->file.len);
        if (f->first_line >= 0) {
            strbuf_puts(sb, ",\"first_line\":");
            export_put_u64(sb, (uint64_t)f->first_line);
        }
        strbuf_append(sb, "}", 1);
    }
    strbuf_append(sb, "}", 1);
}

static void put_other(struct strbuf *sb, const struct exporter *x)
{
    const struct rec_header *h = x->opts.header;
    strbuf_puts(sb, "\"otherData\":{\"exporter\":\"pytop " PACKAGE_VERSION "\"");
    if (h != NULL) {
        if (h->pid != 0) {
            strbuf_printf(sb, ",\"pid\":%d", (int)h->pid);
        }
        if (h->python_version.ptr != NULL) {
            strbuf_puts(sb, ",\"python\":");
            strbuf_json_string(sb, h->python_version.ptr, h->python_version.len);
        }
        if (h->cmdline != NULL) {
            strbuf_puts(sb, ",\"cmdline\":[");
            for (size_t i = 0; i < h->n_cmdline; i++) {
                strbuf_puts(sb, i > 0 ? "," : "");
                strbuf_json_string(sb, h->cmdline[i].ptr, h->cmdline[i].len);
            }
            strbuf_append(sb, "]", 1);
        }
        if (h->start_wall >= 0) {
            strbuf_printf(sb, ",\"start_wall\":%.6f", h->start_wall);
        }
    }
    strbuf_printf(sb, ",\"mode\":\"%s\"}", sampler_mode_name(x->opts.mode));
}

int export_write_chrome(struct exporter *x, FILE *out, struct pt_error *err)
{
    const struct rec_header *h = x->opts.header;
    int pid = h != NULL && h->pid != 0 ? (int)h->pid : 1;
    struct strbuf sb = {0};
    struct timeline tl = {0};
    int write_errno = 0;
    int rc = -1;
    strbuf_printf(&sb,
                  "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
                  "\"tid\":0,\"args\":{\"name\":",
                  pid);
    if (h != NULL && h->pid != 0) {
        strbuf_printf(&sb, "\"python (pid %d)\"}}", pid);
    } else {
        strbuf_puts(&sb, "\"python\"}}");
    }
    for (size_t i = 0; i < x->n_threads; i++) {
        const struct export_thread *t = &x->threads[i];
        if (t->n_runs == 0) {
            continue;
        }
        char buf[64];
        struct snap_str name = export_thread_name(t, buf, sizeof buf);
        int64_t tid = track_tid(x, i);
        strbuf_printf(&sb,
                      ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRId64
                      ",\"args\":{\"name\":",
                      pid, tid);
        strbuf_json_string(&sb, name.ptr, name.len);
        strbuf_puts(&sb, "}}");
        if (thread_events(x, t, &tl) < 0) {
            pt_error_set(err, PT_E_NOMEM, 0, "no memory for a thread's events");
            goto out;
        }
        for (size_t k = 0; k < tl.n_events; k++) {
            put_event(&sb, x, &tl.events[k], pid, tid);
            strbuf_drain(&sb, out, STRBUF_DRAIN_AT, &write_errno);
        }
    }
    strbuf_puts(&sb, "\n],\"displayTimeUnit\":\"ms\",");
    put_other(&sb, x);
    strbuf_puts(&sb, "}\n");
    rc = export_flush(&sb, out, &write_errno, "trace", err);
out:
    strbuf_free(&sb);
    free(tl.events);
    free(tl.open);
    return rc;
}
