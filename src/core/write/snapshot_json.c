/* snapshot_json: writes a snapshot as one JSON document, in the shape DESIGN.md describes. */
#include "config.h"

#include "core/layout/opcodes.h"
#include "core/model/snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/util/error.h"
#include "core/model/snapshot_words.h"
#include "core/write/snapshot_write.h"
#include "core/util/strbuf.h"

/* The document is built in a buffer that is written out whenever it grows past
 * STRBUF_DRAIN_AT, so a snapshot with thousands of deep stacks never sits in memory twice. */

struct snapshot_json_out {
    FILE *out;
    struct strbuf sb;
    int write_errno;            /* nonzero once a write fell short */
    const struct snapshot_json_extra *extra;    /* NULL: none */
    size_t n_warnings;                          /* entries of "warnings" written so far */
    const struct opcode_table *ops;             /* names the frames' instructions */
};

static void flush(struct snapshot_json_out *w, bool force)
{
    strbuf_drain(&w->sb, w->out, force ? 0 : STRBUF_DRAIN_AT, &w->write_errno);
}

struct strbuf *snapshot_json_buf(struct snapshot_json_out *w)
{
    return &w->sb;
}

void snapshot_json_flush(struct snapshot_json_out *w)
{
    flush(w, false);
}

static void put_str(struct strbuf *sb, struct snap_str s)
{
    strbuf_json_string(sb, s.ptr, s.len);
}

/* Counts, ids, lines and columns are never negative; a negative value means unknown. */
static void put_int(struct strbuf *sb, int64_t v)
{
    if (v < 0) {
        strbuf_puts(sb, "null");
    } else {
        strbuf_printf(sb, "%" PRId64, v);
    }
}

/* 0 is the model's "unknown" for the 64-bit identifiers (thread_id, hexversion). */
static void put_u64_known(struct strbuf *sb, uint64_t v)
{
    if (v == 0) {
        strbuf_puts(sb, "null");
    } else {
        strbuf_printf(sb, "%" PRIu64, v);
    }
}

static void put_bool(struct strbuf *sb, bool b)
{
    strbuf_puts(sb, b ? "true" : "false");
}

static void put_tri(struct strbuf *sb, enum snap_bool b)
{
    if (b == SNAP_YES) {
        strbuf_puts(sb, "true");
    } else if (b == SNAP_NO) {
        strbuf_puts(sb, "false");
    } else {
        strbuf_puts(sb, "null");
    }
}

/* Seconds with 3 decimals, built from integers: "%.3f" would follow LC_NUMERIC, and a decimal
 * comma is not JSON. Times outside 0 .. year ~33658 are treated as unknown. */
static void put_time(struct strbuf *sb, double t)
{
    if (!isfinite(t) || t < 0 || t > 1e12) {
        strbuf_puts(sb, "null");
        return;
    }
    long long ms = (long long)(t * 1000.0 + 0.5);
    strbuf_printf(sb, "%lld.%03lld", ms / 1000, ms % 1000);
}

/* A duration in seconds to the nanosecond, built from integers like put_time; negative or
 * absurd values are unknown. */
static void put_seconds(struct strbuf *sb, double t)
{
    if (!isfinite(t) || t < 0 || t > 1e9) {
        strbuf_puts(sb, "null");
        return;
    }
    long long ns = (long long)(t * 1e9 + 0.5);
    strbuf_printf(sb, "%lld.%09lld", ns / 1000000000, ns % 1000000000);
}

static const char *kind_name(enum snap_frame_kind kind)
{
    switch (kind) {
    case SNAP_FRAME_PYTHON:
        return "python";
    case SNAP_FRAME_NATIVE:
        return "native";
    case SNAP_FRAME_GC:
        return "gc";
    case SNAP_FRAME_SHIM:
        return "shim";
    case SNAP_FRAME_UNREADABLE:
        return "unreadable";
    }
    return NULL;
}

/* "instruction": {"offset", "opcode" (the code unit's, as CPython's unwinder reports it),
 * "base_opcode", "name" (the base instruction, as dis shows it), "specialized" (the specialised
 * form's name, or null)} of a frame whose instruction was read. */
static void write_instruction(struct strbuf *sb, const struct snap_frame *f,
                              const struct opcode_table *ops)
{
    if (f->op1 == 0 || ops == NULL) {
        return;
    }
    struct opcode_name n = opcode_describe(ops, f->op1 - 1);
    strbuf_printf(sb, ",\"instruction\":{\"offset\":%" PRIu32 ",\"opcode\":%d,\"base_opcode\":%d,"
                      "\"name\":",
                  f->op_offset, f->op1 - 1, n.base);
    strbuf_json_string(sb, n.base_name, n.base_name != NULL ? strlen(n.base_name) : 0);
    strbuf_puts(sb, ",\"specialized\":");
    strbuf_json_string(sb, n.specialised, n.specialised != NULL ? strlen(n.specialised) : 0);
    strbuf_puts(sb, "}");
}

static void write_frame(struct strbuf *sb, const struct snap_frame *f,
                        const struct opcode_table *ops)
{
    const char *kind = kind_name(f->kind);
    strbuf_puts(sb, "{\"function\":");
    put_str(sb, f->function);
    strbuf_puts(sb, ",\"name\":");
    put_str(sb, f->name);
    strbuf_puts(sb, ",\"file\":");
    put_str(sb, f->file);
    strbuf_puts(sb, ",\"line\":");
    put_int(sb, f->line);
    strbuf_puts(sb, ",\"end_line\":");
    put_int(sb, f->end_line);
    strbuf_puts(sb, ",\"col\":");
    put_int(sb, f->col);
    strbuf_puts(sb, ",\"end_col\":");
    put_int(sb, f->end_col);
    strbuf_puts(sb, ",\"kind\":");
    strbuf_json_string(sb, kind, kind != NULL ? strlen(kind) : 0);
    if (f->kind == SNAP_FRAME_UNREADABLE) {
        const char *why = snapshot_unreadable_reason(f->unreadable);
        strbuf_puts(sb, ",\"reason\":");
        strbuf_json_string(sb, why, strlen(why));
    }
    write_instruction(sb, f, ops);
    strbuf_puts(sb, "}");
}

/* What the thread waits for (null when not read). */
static void write_wait(struct strbuf *sb, const struct snap_wait *wt)
{
    const char *kind = snapshot_wait_kind_name(wt->kind);
    if (kind == NULL) {
        strbuf_puts(sb, "null");
        return;
    }
    strbuf_printf(sb, "{\"kind\":\"%s\",\"syscall\":", kind);
    put_str(sb, wt->syscall);
    strbuf_puts(sb, ",\"fd\":");
    put_int(sb, wt->fd);
    strbuf_puts(sb, ",\"object\":");
    put_str(sb, wt->object);
    strbuf_puts(sb, ",\"lock\":");
    put_u64_known(sb, wt->lock);
    strbuf_puts(sb, ",\"variable\":");
    put_str(sb, wt->variable);
    strbuf_puts(sb, ",\"via\":");
    put_str(sb, wt->via);
    strbuf_puts(sb, ",\"owner_tid\":");
    put_int(sb, wt->owner_tid > 0 ? wt->owner_tid : -1);
    strbuf_puts(sb, ",\"owner_held_s\":");
    put_time(sb, wt->owner_held);
    strbuf_puts(sb, ",\"since_s\":");
    put_time(sb, wt->since);
    strbuf_puts(sb, ",\"left_s\":");
    put_time(sb, wt->left);
    strbuf_puts(sb, ",\"requested_s\":");
    put_time(sb, wt->requested);
    strbuf_puts(sb, ",\"reason\":");
    put_str(sb, wt->reason);
    strbuf_puts(sb, "}");
}

static void write_deadlocks(struct strbuf *sb, const struct snapshot *s)
{
    if (!s->waits_present) {
        strbuf_puts(sb, ",\"deadlocks\":null");
        return;
    }
    strbuf_puts(sb, ",\"deadlocks\":[");
    for (size_t i = 0; i < s->n_deadlocks; i++) {
        const struct snap_deadlock *d = &s->deadlocks[i];
        strbuf_puts(sb, i > 0 ? ",{\"threads\":[" : "{\"threads\":[");
        for (size_t k = 0; k < d->n; k++) {
            strbuf_printf(sb, "%s%d", k > 0 ? "," : "", (int)d->threads[k]);
        }
        strbuf_puts(sb, "],\"locks\":[");
        for (size_t k = 0; k < d->n; k++) {
            strbuf_puts(sb, k > 0 ? "," : "");
            put_u64_known(sb, d->locks[k]);
        }
        strbuf_puts(sb, "]}");
    }
    strbuf_puts(sb, "]");
}

static void write_thread(struct snapshot_json_out *w, const struct snap_interp *in,
                         const struct snap_thread *t)
{
    struct strbuf *sb = &w->sb;
    strbuf_puts(sb, "{\"tid\":");
    put_int(sb, t->tid == 0 ? -1 : (int64_t)t->tid);
    strbuf_puts(sb, ",\"thread_id\":");
    put_u64_known(sb, t->thread_id);
    strbuf_puts(sb, ",\"name\":");
    put_str(sb, t->name);
    strbuf_puts(sb, ",\"main\":");
    put_bool(sb, t->main);
    strbuf_puts(sb, ",\"gil\":");
    put_tri(sb, t->gil);
    strbuf_puts(sb, ",\"gil_requested\":");
    put_tri(sb, t->gil_requested);
    strbuf_puts(sb, ",\"on_cpu\":");
    put_tri(sb, t->on_cpu);
    strbuf_puts(sb, ",\"has_exception\":");
    put_tri(sb, t->has_exception);
    strbuf_puts(sb, ",\"in_gc\":");
    put_tri(sb, t->in_gc);
    if (w->extra != NULL && w->extra->thread != NULL) {
        w->extra->thread(w->extra->ctx, w, in, t);
    }
    strbuf_puts(sb, ",\"frames\":[");
    size_t n = t->frames != NULL ? t->n_frames : 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            strbuf_puts(sb, ",");
        }
        write_frame(sb, &t->frames[i], w->ops);
        flush(w, false);
    }
    strbuf_puts(sb, "]");
    if (t->frames_truncated) {
        strbuf_puts(sb, ",\"frames_truncated\":true");
    }
    if (t->frames_torn) {
        strbuf_puts(sb, ",\"frames_torn\":true");
    }
    strbuf_puts(sb, ",\"wait\":");
    write_wait(sb, &t->wait);
    strbuf_puts(sb, "}");
}

/* One JSON object of named integers (negative: null) and, last, a duration in seconds. */
struct json_int {
    const char *key;
    int64_t value;
};

static void put_object(struct strbuf *sb, const struct json_int *members, size_t n,
                       double duration)
{
    for (size_t i = 0; i < n; i++) {
        strbuf_printf(sb, "%s\"%s\":", i == 0 ? "{" : ",", members[i].key);
        put_int(sb, members[i].value);
    }
    strbuf_puts(sb, ",\"duration\":");
    put_seconds(sb, duration);
    strbuf_puts(sb, "}");
}

static void write_gc(struct strbuf *sb, const struct snap_gc *gc)
{
    if (!gc->present) {
        strbuf_puts(sb, "null");
        return;
    }
    strbuf_puts(sb, "{\"collecting\":");
    put_tri(sb, gc->collecting);
    strbuf_puts(sb, ",\"thread\":");
    put_int(sb, gc->collecting == SNAP_YES && gc->thread > 0 ? gc->thread : -1);
    strbuf_puts(sb, ",\"enabled\":");
    put_tri(sb, gc->enabled);
    strbuf_puts(sb, ",\"generations\":[");
    size_t n = gc->generations != NULL ? gc->n_generations : 0;
    for (size_t i = 0; i < n; i++) {
        const struct snap_gc_gen *g = &gc->generations[i];
        const struct json_int m[] = {
            {"generation", g->generation},   {"count", g->count},
            {"threshold", g->threshold},     {"collections", g->collections},
            {"collected", g->collected},     {"uncollectable", g->uncollectable},
            {"candidates", g->candidates},
        };
        strbuf_puts(sb, i > 0 ? "," : "");
        put_object(sb, m, sizeof m / sizeof m[0], g->duration);
    }
    strbuf_puts(sb, "],\"recent\":");
    if (!gc->recent_present) {
        strbuf_puts(sb, "null}");
        return;
    }
    strbuf_puts(sb, "[");
    for (size_t i = 0; gc->recent != NULL && i < gc->n_recent; i++) {
        const struct snap_gc_record *r = &gc->recent[i];
        const struct json_int m[] = {
            {"generation", r->generation},   {"start_ns", r->start_ns},
            {"stop_ns", r->stop_ns},         {"collections", r->collections},
            {"collected", r->collected},     {"uncollectable", r->uncollectable},
            {"candidates", r->candidates},   {"heap_size", r->heap_size},
        };
        strbuf_puts(sb, i > 0 ? "," : "");
        put_object(sb, m, sizeof m / sizeof m[0], r->duration);
    }
    strbuf_puts(sb, "]}");
}

static void write_frames(struct strbuf *sb, const struct snap_frame *frames, size_t n)
{
    strbuf_puts(sb, "[");
    for (size_t i = 0; frames != NULL && i < n; i++) {
        if (i > 0) {
            strbuf_puts(sb, ",");
        }
        write_frame(sb, &frames[i], NULL);
    }
    strbuf_puts(sb, "]");
}

static void write_task(struct strbuf *sb, const struct snap_task *t)
{
    const char *state = snapshot_task_state_name(t->state);
    strbuf_puts(sb, "{\"id\":");
    put_u64_known(sb, t->id);
    strbuf_puts(sb, ",\"name\":");
    put_str(sb, t->name);
    strbuf_puts(sb, ",\"thread\":");
    put_int(sb, t->thread == 0 ? -1 : (int64_t)t->thread);
    strbuf_puts(sb, ",\"state\":");
    strbuf_json_string(sb, state, state != NULL ? strlen(state) : 0);
    strbuf_puts(sb, ",\"coroutine_stack\":");
    write_frames(sb, t->frames, t->n_frames);
    if (t->frames_truncated) {
        strbuf_puts(sb, ",\"coroutine_stack_truncated\":true");
    }
    strbuf_puts(sb, ",\"awaited_by\":[");
    for (size_t i = 0; t->awaited_by != NULL && i < t->n_awaited_by; i++) {
        const struct snap_task_awaiter *a = &t->awaited_by[i];
        strbuf_puts(sb, i > 0 ? ",{\"task\":" : "{\"task\":");
        put_u64_known(sb, a->task);
        strbuf_puts(sb, ",\"coroutine_stack\":");
        write_frames(sb, a->frames, a->n_frames);
        strbuf_puts(sb, "}");
    }
    strbuf_puts(sb, "]");
    if (t->awaited_by_truncated) {
        strbuf_puts(sb, ",\"awaited_by_truncated\":true");
    }
    strbuf_puts(sb, "}");
}

static void write_tasks(struct snapshot_json_out *w, const struct snap_interp *in)
{
    if (!in->tasks_present) {
        strbuf_puts(&w->sb, "null");
        return;
    }
    strbuf_puts(&w->sb, "[");
    for (size_t i = 0; in->tasks != NULL && i < in->n_tasks; i++) {
        if (i > 0) {
            strbuf_puts(&w->sb, ",");
        }
        write_task(&w->sb, &in->tasks[i]);
        flush(w, false);
    }
    strbuf_puts(&w->sb, "]");
}

static void write_interp(struct snapshot_json_out *w, const struct snap_interp *in)
{
    strbuf_puts(&w->sb, "{\"id\":");
    put_int(&w->sb, in->id);
    strbuf_puts(&w->sb, ",\"threads\":[");
    size_t n = in->threads != NULL ? in->n_threads : 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            strbuf_puts(&w->sb, ",");
        }
        write_thread(w, in, &in->threads[i]);
        flush(w, false);
    }
    strbuf_puts(&w->sb, "],\"gc\":");
    write_gc(&w->sb, &in->gc);
    strbuf_puts(&w->sb, ",\"tasks\":");
    write_tasks(w, in);
    if (in->tasks_truncated) {
        strbuf_puts(&w->sb, ",\"tasks_truncated\":true");
    }
    strbuf_puts(&w->sb, "}");
}

static void write_head(struct strbuf *sb, const struct snapshot *s)
{
    strbuf_puts(sb, "{\"pytop\":");
    strbuf_json_string(sb, PACKAGE_VERSION, strlen(PACKAGE_VERSION));
    strbuf_puts(sb, ",\"pid\":");
    put_int(sb, s->pid <= 0 ? -1 : (int64_t)s->pid);
    strbuf_puts(sb, ",\"cmdline\":");
    if (s->cmdline == NULL) {
        strbuf_puts(sb, "null");
    } else {
        strbuf_puts(sb, "[");
        for (size_t i = 0; i < s->n_cmdline; i++) {
            strbuf_puts(sb, i > 0 ? "," : "");
            put_str(sb, s->cmdline[i]);
        }
        strbuf_puts(sb, "]");
    }
    strbuf_puts(sb, ",\"started\":");
    put_time(sb, s->started);
    strbuf_puts(sb, ",\"time\":");
    put_time(sb, s->time);
    strbuf_puts(sb, ",\"python\":{\"version\":");
    put_str(sb, s->python.version);
    strbuf_puts(sb, ",\"hexversion\":");
    put_u64_known(sb, s->python.hexversion);
    strbuf_puts(sb, ",\"free_threaded\":");
    put_bool(sb, s->python.free_threaded);
    strbuf_puts(sb, ",\"debug_build\":");
    put_tri(sb, s->python.debug_build);
    strbuf_puts(sb, ",\"binary\":");
    put_str(sb, s->python.binary);
    strbuf_puts(sb, "}");
}

void snapshot_json_add_warning(struct snapshot_json_out *w, const char *text, size_t len)
{
    if (w->n_warnings++ > 0) {
        strbuf_puts(&w->sb, ",");
    }
    strbuf_json_string(&w->sb, text, len);
}

int snapshot_write_json(const struct snapshot *s, FILE *out, bool newline, struct pt_error *err)
{
    return snapshot_write_json_extra(s, out, newline, NULL, err);
}

int snapshot_write_json_extra(const struct snapshot *s, FILE *out, bool newline,
                              const struct snapshot_json_extra *extra, struct pt_error *err)
{
    struct snapshot_json_out w = {.out = out, .extra = extra, .ops = s->opcodes};
    write_head(&w.sb, s);
    if (extra != NULL && extra->head != NULL) {
        extra->head(extra->ctx, &w);
    }
    strbuf_puts(&w.sb, ",\"interpreters\":[");
    size_t n = s->interps != NULL ? s->n_interps : 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            strbuf_puts(&w.sb, ",");
        }
        write_interp(&w, &s->interps[i]);
    }
    strbuf_puts(&w.sb, "]");
    write_deadlocks(&w.sb, s);
    strbuf_puts(&w.sb, ",\"warnings\":[");
    n = s->warnings != NULL ? s->n_warnings : 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            strbuf_puts(&w.sb, ",");
        }
        put_str(&w.sb, s->warnings[i]);
    }
    w.n_warnings = n;
    if (extra != NULL && extra->warnings != NULL) {
        extra->warnings(extra->ctx, &w);
    }
    strbuf_puts(&w.sb, "]");
    if (extra != NULL && extra->tail != NULL) {
        extra->tail(extra->ctx, &w);
    }
    strbuf_puts(&w.sb, newline ? "}\n" : "}");
    bool nomem = w.sb.failed;
    if (!nomem) {
        flush(&w, true);
    }
    strbuf_free(&w.sb);
    if (nomem) {
        return pt_error_set(err, PT_E_NOMEM, 0, "writing the JSON snapshot");
    }
    errno = 0;
    if (w.write_errno == 0 && fflush(out) != 0) {
        w.write_errno = errno != 0 ? errno : EIO;
    }
    if (w.write_errno != 0 || ferror(out)) {
        int e = w.write_errno != 0 ? w.write_errno : EIO;
        return pt_error_set(err, PT_E_IO, e, "writing the JSON snapshot: %s", strerror(e));
    }
    return 0;
}
