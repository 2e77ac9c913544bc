/* snapshot_text: writes a snapshot as a traceback-like text dump for people and grep. */
#include "config.h"

#include "core/layout/opcodes.h"
#include "core/model/snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/util/error.h"
#include "core/model/snapshot_words.h"
#include "core/write/snapshot_write.h"
#include "core/util/strbuf.h"
#include "core/model/tasktree.h"

enum {
    GC_COLUMNS = 7,
    GC_NUMBER = 24,             /* fits any int64_t */
    GC_CELL = 2 * GC_NUMBER,    /* fits "count/threshold" */
};

struct text_out {
    FILE *out;
    struct strbuf sb;
    int write_errno;            /* nonzero once a write fell short */
    const struct opcode_table *ops; /* names the frames' instructions */
    const struct snapshot *s;
};

static void flush(struct text_out *w, bool force)
{
    strbuf_drain(&w->sb, w->out, force ? 0 : STRBUF_DRAIN_AT, &w->write_errno);
}

/* A target string for display, or "?" when unknown. */
static void put_str(struct strbuf *sb, struct snap_str s)
{
    if (s.ptr == NULL) {
        strbuf_puts(sb, "?");
    } else {
        strbuf_text(sb, s.ptr, s.len);
    }
}

static void put_quoted(struct strbuf *sb, struct snap_str s)
{
    if (s.ptr == NULL) {
        strbuf_puts(sb, "?");
    } else {
        strbuf_text_quoted(sb, s.ptr, s.len);
    }
}

/* One argument as a POSIX shell would read it back: as it is when it holds only characters
 * no shell treats specially, else between single quotes (a quote as '\''); bytes that cannot
 * be shown are escaped as everywhere else (\xNN). */
static void put_arg(struct strbuf *sb, struct snap_str a)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_@%+=:,./-";
    bool quote = a.len == 0;
    for (size_t i = 0; i < a.len && !quote; i++) {
        quote = a.ptr[i] == '\0' || strchr(plain, a.ptr[i]) == NULL;
    }
    if (!quote) {
        strbuf_text(sb, a.ptr, a.len);
        return;
    }
    strbuf_puts(sb, "'");
    size_t from = 0;
    for (size_t i = 0; i <= a.len; i++) {
        if (i == a.len || a.ptr[i] == '\'') {
            strbuf_text(sb, a.ptr + from, i - from);
            strbuf_puts(sb, i < a.len ? "'\\''" : "'");
            from = i + 1;
        }
    }
}

/* "2025-11-30 12:00:00" (UTC) into WHEN; false when T is no time. */
static bool utc_text(double t, char *when, size_t size)
{
    if (!isfinite(t) || t <= 0 || t > 1e12) {
        return false;
    }
    time_t secs = (time_t)t;
    struct tm tm;
    return gmtime_r(&secs, &tm) != NULL && strftime(when, size, "%Y-%m-%d %H:%M:%S", &tm) > 0;
}

/* "Command: python3 app.py --port 8080" and "Started: 2025-11-30 11:43:20 UTC (up 0:16:40)":
 * the process as ps(1) would name it, and how long it had run when the snapshot was taken. */
static void write_target(struct strbuf *sb, const struct snapshot *s)
{
    char when[32];
    if (s->cmdline != NULL) {
        strbuf_puts(sb, "Command:");
        for (size_t i = 0; i < s->n_cmdline; i++) {
            strbuf_puts(sb, " ");
            put_arg(sb, s->cmdline[i]);
        }
        strbuf_puts(sb, s->cmdline_cut ? " ... (cut short)\n" : "\n");
    }
    if (s->started > 0 && utc_text(s->started, when, sizeof when)) {
        strbuf_printf(sb, "Started: %s UTC", when);
        double up = s->time - s->started;
        if (isfinite(up) && up >= 0 && up < 1e10) {
            long t = (long)up;
            if (t >= 86400) {
                strbuf_printf(sb, " (up %ldd %02ld:%02ld:%02ld)", t / 86400, t / 3600 % 24,
                              t / 60 % 60, t % 60);
            } else {
                strbuf_printf(sb, " (up %ld:%02ld:%02ld)", t / 3600, t / 60 % 60, t % 60);
            }
        }
        strbuf_puts(sb, "\n");
    }
}

/* "Process 4242: Python 3.15.2 (/usr/bin/python3.15)", the command line and start, then when
 * the snapshot was taken. */
static void write_header(struct strbuf *sb, const struct snapshot *s)
{
    if (s->pid > 0) {
        strbuf_printf(sb, "Process %jd: Python ", (intmax_t)s->pid);
    } else {
        strbuf_puts(sb, "Process ?: Python ");
    }
    put_str(sb, s->python.version);
    if (s->python.free_threaded) {
        strbuf_puts(sb, ", free-threaded");
    }
    if (s->python.debug_build == SNAP_YES) {
        strbuf_puts(sb, ", debug build");
    }
    if (s->python.binary.ptr != NULL) {
        strbuf_puts(sb, " (");
        strbuf_text(sb, s->python.binary.ptr, s->python.binary.len);
        strbuf_puts(sb, ")");
    }
    strbuf_puts(sb, "\n");
    write_target(sb, s);
    if (!isfinite(s->time) || s->time <= 0 || s->time > 1e12) {
        return;
    }
    long long ms = (long long)(s->time * 1000.0 + 0.5);
    char when[32];
    if (utc_text((double)(ms / 1000), when, sizeof when)) {
        strbuf_printf(sb, "Taken at %s.%03lld UTC\n", when, ms % 1000);
    }
}

/* The frame's source line, stripped of surrounding white space, as a traceback shows it. */
static void write_source(struct strbuf *sb, const struct snap_frame *f,
                         const struct snapshot_source *src)
{
    if (src == NULL || src->line == NULL || f->file.ptr == NULL || f->line <= 0) {
        return;
    }
    size_t len = 0;
    const char *text = src->line(src->ctx, f->file.ptr, f->file.len, f->line, &len);
    if (text == NULL) {
        return;
    }
    while (len > 0 && strchr(" \t\f\v", text[0]) != NULL) {
        text++;
        len--;
    }
    while (len > 0 && strchr(" \t\f\v\r\n", text[len - 1]) != NULL) {
        len--;
    }
    if (len > 0) {
        strbuf_puts(sb, "    ");
        strbuf_text(sb, text, len);
        strbuf_puts(sb, "\n");
    }
}

static void write_frame(struct strbuf *sb, const struct snap_frame *f,
                        const struct snapshot_source *src, const struct opcode_table *ops)
{
    if (f->kind != SNAP_FRAME_PYTHON) {
        /* The interpreter's own marker frames have no source to show. */
        strbuf_printf(sb, "  %s", snapshot_frame_title(f));
        if (snapshot_frame_named(f)) {
            strbuf_puts(sb, " in ");
            strbuf_text(sb, f->function.ptr, f->function.len);
        }
        if (f->file.ptr != NULL) {
            strbuf_puts(sb, " (");
            strbuf_text(sb, f->file.ptr, f->file.len);
            strbuf_puts(sb, ")");
        }
        strbuf_puts(sb, "\n");
        return;
    }
    strbuf_puts(sb, "  File ");
    put_quoted(sb, f->file);
    if (f->line >= 0) {
        strbuf_printf(sb, ", line %d, in ", f->line);
    } else {
        strbuf_puts(sb, ", line ?, in ");
    }
    put_str(sb, f->function);
    /* --opcodes: the instruction, as dis names it (with the specialised form). */
    if (f->op1 != 0 && ops != NULL) {
        struct opcode_name n = opcode_describe(ops, f->op1 - 1);
        if (n.specialised != NULL) {
            strbuf_printf(sb, " [%s %s]", n.base_name, n.specialised);
        } else if (n.base_name != NULL) {
            strbuf_printf(sb, " [%s]", n.base_name);
        }
    }
    strbuf_puts(sb, "\n");
    write_source(sb, f, src);
}

static void write_thread(struct text_out *w, const struct snap_thread *t,
                         const struct snapshot_source *src)
{
    struct strbuf *sb = &w->sb;
    char words[160];
    snapshot_thread_state_words(t, words, sizeof words);
    if (t->tid > 0) {
        strbuf_printf(sb, "\nThread %jd", (intmax_t)t->tid);
    } else {
        strbuf_puts(sb, "\nThread ?");
    }
    if (t->name.ptr != NULL) {
        strbuf_puts(sb, " ");
        strbuf_text_quoted(sb, t->name.ptr, t->name.len);
    }
    strbuf_printf(sb, " (%s%smost recent call last):\n", words, words[0] != '\0' ? "; " : "");
    if (t->wait.kind != SNAP_WAIT_NONE) {
        char wait[600];
        snapshot_wait_text(w->s, t, false, wait, sizeof wait);
        strbuf_puts(sb, "  Waiting for: ");
        strbuf_text(sb, wait, strlen(wait));
        strbuf_puts(sb, "\n");
    }
    size_t n = t->frames != NULL ? t->n_frames : 0;
    /* The walk starts at the innermost frame, so a cut stack lacks its outermost callers. */
    if (t->frames_torn) {
        strbuf_puts(sb, "  ... (stack changed while read: these frames may be torn)\n");
    }
    if (t->frames_truncated) {
        strbuf_puts(sb, "  ... (stack truncated)\n");
    } else if (n == 0) {
        strbuf_puts(sb, "  (no Python frames)\n");
    }
    for (size_t i = n; i-- > 0;) {
        write_frame(sb, &t->frames[i], src, w->ops);
        flush(w, false);
    }
}

static void gc_number(char cell[GC_NUMBER], int64_t v)
{
    if (v < 0) {
        snprintf(cell, GC_NUMBER, "?");
    } else {
        snprintf(cell, GC_NUMBER, "%" PRId64, v);
    }
}

/* Seconds as milliseconds, "?" when unknown. */
static void gc_ms(char cell[GC_NUMBER], double seconds)
{
    if (!(seconds >= 0) || seconds > 1e9) {
        snprintf(cell, GC_NUMBER, "?");
    } else {
        snprintf(cell, GC_NUMBER, "%.3f ms", seconds * 1e3);
    }
}

static void gc_row(char cells[GC_COLUMNS][GC_CELL], const struct snap_gc_gen *g)
{
    char count[GC_NUMBER];
    char threshold[GC_NUMBER];
    gc_number(cells[0], g->generation);
    gc_number(count, g->count);
    gc_number(threshold, g->threshold);
    snprintf(cells[1], GC_CELL, "%s/%s", count, threshold);
    gc_number(cells[2], g->collections);
    gc_number(cells[3], g->collected);
    gc_number(cells[4], g->uncollectable);
    gc_number(cells[5], g->candidates);
    gc_ms(cells[6], g->duration);
}

static void gc_print_row(struct strbuf *sb, char cells[GC_COLUMNS][GC_CELL], const int *width,
                         int columns)
{
    strbuf_puts(sb, " ");
    for (int c = 0; c < columns; c++) {
        if (c + 1 < columns) {
            strbuf_printf(sb, " %-*s ", width[c], cells[c]);
        } else {
            strbuf_printf(sb, " %s\n", cells[c]);
        }
    }
}

/* ", collected 4312 (+12)": a running total of the generation, as the table above and JSON
 * give it, and what this collection added to it ("+?" when that is not known). */
static void gc_total(struct strbuf *sb, const char *what, int64_t total, bool own, int64_t added)
{
    char cell[GC_NUMBER];
    gc_number(cell, total);
    strbuf_printf(sb, ", %s %s", what, cell);
    if (own) {
        strbuf_printf(sb, " (+%" PRId64 ")", added);
    } else {
        strbuf_puts(sb, " (+?)");
    }
}

/* The interpreter's records of recent collections, oldest first, each on its own. The words
 * mean what they mean in the table (running totals); what one collection did is the "+". */
static void write_gc_recent(struct strbuf *sb, const struct snap_gc *gc)
{
    bool untold = false;
    if (!gc->recent_present) {
        return;
    }
    if (gc->n_recent == 0) {
        strbuf_puts(sb, "  No collections recorded yet.\n");
        return;
    }
    strbuf_puts(sb, "  Recent collections, oldest first (the generation's totals when each ended, "
                    "and in parentheses what that collection added):\n");
    for (size_t i = 0; i < gc->n_recent; i++) {
        const struct snap_gc_record *r = &gc->recent[i];
        struct snap_gc_record d = {0};
        char took[GC_NUMBER];
        strbuf_printf(sb, "    generation %d", r->generation);
        if (gc->read_ns >= r->stop_ns && r->stop_ns > 0) {
            strbuf_printf(sb, ", %.3f s ago", (double)(gc->read_ns - r->stop_ns) / 1e9);
        }
        bool own = snapshot_gc_record_delta(gc, i, &d);
        untold = untold || !own;
        gc_ms(took, r->stop_ns >= r->start_ns ? (double)(r->stop_ns - r->start_ns) / 1e9 : -1);
        strbuf_printf(sb, ": %s", took);
        gc_total(sb, "collected", r->collected, own, d.collected);
        if (r->uncollectable > 0) {
            gc_total(sb, "uncollectable", r->uncollectable, own, d.uncollectable);
        }
        gc_total(sb, "candidates", r->candidates, own, d.candidates);
        strbuf_printf(sb, ", heap %" PRId64 " objects\n", r->heap_size);
    }
    if (untold) {
        strbuf_puts(sb, "  (+?: the collection before it in its generation is not among the "
                        "records kept, so what it added is not known)\n");
    }
}

/* One row per generation, columns as wide as their widest cell. */
static void write_gc(struct strbuf *sb, const struct snap_interp *in, bool several)
{
    static const char *const heads[GC_COLUMNS] = {
        "generation", "count/threshold", "collections", "collected", "uncollectable",
        "candidates", "time",
    };
    const struct snap_gc *gc = &in->gc;
    if (!gc->present) {
        return;
    }
    strbuf_puts(sb, "\nGC");
    if (several && in->id >= 0) {
        strbuf_printf(sb, " of interpreter %" PRId64, in->id);
    } else if (several) {
        strbuf_puts(sb, " of interpreter ?");
    }
    if (gc->collecting == SNAP_YES && gc->thread > 0) {
        strbuf_printf(sb, " (collecting now, thread %d)", (int)gc->thread);
    } else if (gc->collecting == SNAP_YES) {
        strbuf_puts(sb, " (collecting now)");
    }
    strbuf_puts(sb, gc->enabled == SNAP_NO ? " (automatic collection disabled):\n" : ":\n");
    size_t n = gc->generations != NULL ? gc->n_generations : 0;
    if (n == 0) {
        strbuf_puts(sb, "  (no generations)\n");
        return;
    }
    /* Candidates and time only where the target counts them (3.15+). */
    int columns = 5;
    for (size_t i = 0; i < n; i++) {
        if (gc->generations[i].candidates >= 0) {
            columns = GC_COLUMNS;
        }
    }
    char cells[GC_COLUMNS][GC_CELL];
    int width[GC_COLUMNS];
    for (int c = 0; c < GC_COLUMNS; c++) {
        width[c] = (int)strlen(heads[c]);
    }
    for (size_t i = 0; i < n; i++) {
        gc_row(cells, &gc->generations[i]);
        for (int c = 0; c < GC_COLUMNS; c++) {
            int len = (int)strlen(cells[c]);
            width[c] = len > width[c] ? len : width[c];
        }
    }
    for (int c = 0; c < GC_COLUMNS; c++) {
        snprintf(cells[c], GC_CELL, "%s", heads[c]);
    }
    gc_print_row(sb, cells, width, columns);
    for (size_t i = 0; i < n; i++) {
        gc_row(cells, &gc->generations[i]);
        gc_print_row(sb, cells, width, columns);
    }
    if (!snapshot_gc_counts_kept(gc)) {
        strbuf_puts(sb, "  Collections: this Python counts none (gc.get_stats() came in 3.4)\n");
    }
    write_gc_recent(sb, gc);
}

static void drain_tree(void *ctx, struct strbuf *sb)
{
    struct text_out *w = ctx;
    (void)sb; /* w->sb */
    flush(w, false);
}

/* The asyncio task tree, as `python -m asyncio pstree` draws it. */
static void write_tasks(struct text_out *w, const struct snap_interp *in, bool several)
{
    struct strbuf *sb = &w->sb;
    /* Nothing to say of a program without tasks; but a graph that was not read is said to be
     * missing, not left to look like no tasks (the warning says why). */
    if (in->tasks_present && in->n_tasks == 0 && !in->tasks_truncated) {
        return;
    }
    strbuf_puts(sb, "\nAsyncio tasks");
    if (several && in->id >= 0) {
        strbuf_printf(sb, " of interpreter %" PRId64, in->id);
    } else if (several) {
        strbuf_puts(sb, " of interpreter ?");
    }
    if (!in->tasks_present) {
        strbuf_puts(sb, ": not read (the warnings below say why)\n");
        return;
    }
    strbuf_printf(sb, " (%zu%s):\n", in->n_tasks, in->tasks_truncated ? ", list cut short" : "");
    if (in->tasks == NULL) {
        return;
    }
    struct pt_error e = {0};
    const struct tasktree_drain drain = {drain_tree, w};
    if (tasktree_write(sb, in->tasks, in->n_tasks, &drain, &e) < 0) {
        strbuf_printf(sb, "(tree not drawn: %s)\n", e.msg);
    }
}

static void write_interp(struct text_out *w, const struct snap_interp *in, bool several,
                         const struct snapshot_source *src)
{
    if (several && in->id >= 0) {
        strbuf_printf(&w->sb, "\nInterpreter %" PRId64 ":\n", in->id);
    } else if (several) {
        strbuf_puts(&w->sb, "\nInterpreter ?:\n");
    }
    size_t n = in->threads != NULL ? in->n_threads : 0;
    if (n == 0) {
        strbuf_puts(&w->sb, "\n(no threads)\n");
    }
    for (size_t i = 0; i < n; i++) {
        write_thread(w, &in->threads[i], src);
        flush(w, false);
    }
    write_gc(&w->sb, in, several);
    write_tasks(w, in, several);
    flush(w, false);
}

/* "Thread 4242 "rl-a"" */
static void put_thread_name(struct strbuf *sb, const struct snapshot *s, pid_t tid)
{
    const struct snap_thread *t = snapshot_find_thread(s, tid);
    strbuf_printf(sb, "Thread %d", (int)tid);
    if (t != NULL && t->name.ptr != NULL) {
        strbuf_puts(sb, " ");
        strbuf_text_quoted(sb, t->name.ptr, t->name.len);
    }
}

/* Each cycle of threads waiting for each other, first: what an incident report leads with. */
static void write_deadlocks(struct strbuf *sb, const struct snapshot *s)
{
    for (size_t i = 0; i < s->n_deadlocks; i++) {
        const struct snap_deadlock *d = &s->deadlocks[i];
        strbuf_printf(sb, "\nDeadlock: %zu threads wait for locks the next one holds:\n", d->n);
        for (size_t k = 0; k < d->n; k++) {
            const struct snap_thread *t = snapshot_find_thread(s, d->threads[k]);
            strbuf_puts(sb, "  ");
            put_thread_name(sb, s, d->threads[k]);
            strbuf_printf(sb, " waits for %#llx", (unsigned long long)d->locks[k]);
            if (t != NULL && t->wait.variable.ptr != NULL) {
                strbuf_puts(sb, " (");
                strbuf_text(sb, t->wait.variable.ptr, t->wait.variable.len);
                strbuf_puts(sb, ")");
            }
            strbuf_puts(sb, ", held by ");
            put_thread_name(sb, s, d->threads[(k + 1) % d->n]);
            strbuf_puts(sb, "\n");
        }
    }
}

static void write_warnings(struct strbuf *sb, const struct snapshot *s)
{
    size_t n = s->warnings != NULL ? s->n_warnings : 0;
    if (n == 0) {
        return;
    }
    strbuf_puts(sb, "\nWarnings:\n");
    for (size_t i = 0; i < n; i++) {
        strbuf_puts(sb, "  ");
        put_str(sb, s->warnings[i]);
        strbuf_puts(sb, "\n");
    }
}

int snapshot_write_text(const struct snapshot *s, FILE *out, const struct snapshot_source *src,
                        struct pt_error *err)
{
    return snapshot_write_text_parts(s, out, src, SNAPSHOT_TEXT_ALL, err);
}

int snapshot_write_text_parts(const struct snapshot *s, FILE *out,
                              const struct snapshot_source *src, enum snapshot_text_parts parts,
                              struct pt_error *err)
{
    struct text_out w = {.out = out, .ops = s->opcodes, .s = s};
    size_t n = s->interps != NULL ? s->n_interps : 0;
    if (parts & SNAPSHOT_TEXT_HEADER) {
        write_header(&w.sb, s);
    }
    if (parts & SNAPSHOT_TEXT_BODY) {
        write_deadlocks(&w.sb, s);
    }
    if ((parts & SNAPSHOT_TEXT_BODY) && n == 0) {
        strbuf_puts(&w.sb, "\n(no interpreters)\n");
    }
    for (size_t i = 0; (parts & SNAPSHOT_TEXT_BODY) && i < n; i++) {
        write_interp(&w, &s->interps[i], n > 1, src);
    }
    if (parts & SNAPSHOT_TEXT_BODY) {
        write_warnings(&w.sb, s);
    }
    bool nomem = w.sb.failed;
    if (!nomem) {
        flush(&w, true);
    }
    strbuf_free(&w.sb);
    if (nomem) {
        return pt_error_set(err, PT_E_NOMEM, 0, "writing the text snapshot");
    }
    errno = 0;
    if (w.write_errno == 0 && fflush(out) != 0) {
        w.write_errno = errno != 0 ? errno : EIO;
    }
    if (w.write_errno != 0 || ferror(out)) {
        int e = w.write_errno != 0 ? w.write_errno : EIO;
        return pt_error_set(err, PT_E_IO, e, "writing the text snapshot: %s", strerror(e));
    }
    return 0;
}
