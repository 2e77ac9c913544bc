/* snapcodec: a whole snapshot as bytes and back, every field, bounded on the way back. */
#include "config.h"

#include "core/record/snapcodec.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/layout/opcodes.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/util/strbuf.h"
#include "core/util/varint.h"

/* Bounds of the decoder where limits.h has none. gc.c keeps at most 4 generations and 4 rings
 * of 64 records; these leave room for a later version. A string is at most one argument of the
 * command line (target strings are cut at LIMIT_STRING, pytop's own texts are short). */
enum {
    MAX_GC_GENERATIONS = 64,
    MAX_GC_RECORDS = 4096,
    MAX_STRING = LIMIT_CMDLINE,
    MAX_DEADLOCK_THREADS = LIMIT_INTERPRETERS * LIMIT_THREADS,
};

/* The fewest bytes each item of an array takes, so that a count the bytes left cannot hold is
 * refused before anything is allocated for it. */
enum {
    MIN_STR = 1,
    MIN_FRAME = 12,       /* 3 strings, 9 numbers */
    MIN_WAIT = 9 + 4 * 8, /* 9 numbers and strings, 4 doubles */
    MIN_THREAD = 12 + MIN_WAIT,
    MIN_GC_GEN = 7 + 8,
    MIN_GC_RECORD = 8 + 8,
    MIN_INTERP = 13,
    MIN_TASK = 8,
    MIN_AWAITER = 2,
    MIN_DEADLOCK = 1,
    MIN_DEADLOCK_ENTRY = 2,
};

/* Writing. An array whose pointer may be NULL is varint(n + 1), 0 for NULL; a pointer left
 * NULL with a count is written as NULL. Enums are their distance from their lowest value. */

static void put_bool(struct strbuf *sb, bool v)
{
    varint_put(sb, v ? 1 : 0);
}

static void put_enum(struct strbuf *sb, int v, int lowest)
{
    varint_put(sb, (uint64_t)((int64_t)v - lowest));
}

static void put_array(struct strbuf *sb, const void *p, size_t n)
{
    varint_put(sb, p != NULL ? (uint64_t)n + 1 : 0);
}

static void put_frames(struct strbuf *sb, const struct snap_frame *frames, size_t n)
{
    put_array(sb, frames, n);
    for (size_t i = 0; frames != NULL && i < n; i++) {
        const struct snap_frame *f = &frames[i];
        varint_put_str(sb, f->function);
        varint_put_str(sb, f->name);
        varint_put_str(sb, f->file);
        varint_put_signed(sb, f->line);
        varint_put_signed(sb, f->end_line);
        varint_put_signed(sb, f->col);
        varint_put_signed(sb, f->end_col);
        varint_put_signed(sb, f->first_line);
        varint_put(sb, f->op_offset);
        varint_put(sb, f->op1);
        put_enum(sb, (int)f->kind, SNAP_FRAME_PYTHON);
        put_enum(sb, (int)f->unreadable, SNAP_UNREADABLE_NONE);
    }
}

static void put_wait(struct strbuf *sb, const struct snap_wait *w)
{
    put_enum(sb, (int)w->kind, SNAP_WAIT_NONE);
    varint_put_str(sb, w->syscall);
    varint_put_signed(sb, w->fd);
    varint_put_str(sb, w->object);
    varint_put(sb, w->lock);
    varint_put_str(sb, w->variable);
    varint_put_str(sb, w->via);
    varint_put_signed(sb, w->owner_tid);
    varint_put_f64(sb, w->owner_held);
    varint_put_f64(sb, w->since);
    varint_put_f64(sb, w->left);
    varint_put_f64(sb, w->requested);
    varint_put_str(sb, w->reason);
}

static void put_thread(struct strbuf *sb, const struct snap_thread *t)
{
    varint_put_signed(sb, t->tid);
    varint_put(sb, t->thread_id);
    varint_put_str(sb, t->name);
    put_bool(sb, t->main);
    put_enum(sb, (int)t->gil, SNAP_UNKNOWN);
    put_enum(sb, (int)t->gil_requested, SNAP_UNKNOWN);
    put_enum(sb, (int)t->on_cpu, SNAP_UNKNOWN);
    put_enum(sb, (int)t->has_exception, SNAP_UNKNOWN);
    put_enum(sb, (int)t->in_gc, SNAP_UNKNOWN);
    put_frames(sb, t->frames, t->n_frames);
    put_bool(sb, t->frames_truncated);
    put_bool(sb, t->frames_torn);
    put_wait(sb, &t->wait);
}

static void put_gc(struct strbuf *sb, const struct snap_gc *gc)
{
    put_bool(sb, gc->present);
    put_enum(sb, (int)gc->enabled, SNAP_UNKNOWN);
    put_enum(sb, (int)gc->collecting, SNAP_UNKNOWN);
    varint_put_signed(sb, gc->thread);
    put_array(sb, gc->generations, gc->n_generations);
    for (size_t i = 0; gc->generations != NULL && i < gc->n_generations; i++) {
        const struct snap_gc_gen *g = &gc->generations[i];
        varint_put_signed(sb, g->generation);
        varint_put_signed(sb, g->count);
        varint_put_signed(sb, g->threshold);
        varint_put_signed(sb, g->collections);
        varint_put_signed(sb, g->collected);
        varint_put_signed(sb, g->uncollectable);
        varint_put_signed(sb, g->candidates);
        varint_put_f64(sb, g->duration);
    }
    put_bool(sb, gc->recent_present);
    put_array(sb, gc->recent, gc->n_recent);
    for (size_t i = 0; gc->recent != NULL && i < gc->n_recent; i++) {
        const struct snap_gc_record *r = &gc->recent[i];
        varint_put_signed(sb, r->generation);
        varint_put_signed(sb, r->start_ns);
        varint_put_signed(sb, r->stop_ns);
        varint_put_signed(sb, r->collections);
        varint_put_signed(sb, r->collected);
        varint_put_signed(sb, r->uncollectable);
        varint_put_signed(sb, r->candidates);
        varint_put_signed(sb, r->heap_size);
        varint_put_f64(sb, r->duration);
    }
    varint_put_signed(sb, gc->read_ns);
}

static void put_task(struct strbuf *sb, const struct snap_task *t)
{
    varint_put(sb, t->id);
    varint_put_str(sb, t->name);
    varint_put_signed(sb, t->thread);
    put_enum(sb, (int)t->state, SNAP_TASK_UNKNOWN);
    put_frames(sb, t->frames, t->n_frames);
    put_bool(sb, t->frames_truncated);
    put_array(sb, t->awaited_by, t->n_awaited_by);
    for (size_t i = 0; t->awaited_by != NULL && i < t->n_awaited_by; i++) {
        varint_put(sb, t->awaited_by[i].task);
        put_frames(sb, t->awaited_by[i].frames, t->awaited_by[i].n_frames);
    }
    put_bool(sb, t->awaited_by_truncated);
}

static void put_interp(struct strbuf *sb, const struct snap_interp *in)
{
    varint_put_signed(sb, in->id);
    put_array(sb, in->threads, in->n_threads);
    for (size_t i = 0; in->threads != NULL && i < in->n_threads; i++) {
        put_thread(sb, &in->threads[i]);
    }
    put_gc(sb, &in->gc);
    put_bool(sb, in->tasks_present);
    put_array(sb, in->tasks, in->n_tasks);
    for (size_t i = 0; in->tasks != NULL && i < in->n_tasks; i++) {
        put_task(sb, &in->tasks[i]);
    }
    put_bool(sb, in->tasks_truncated);
}

int snapcodec_encode(const struct snapshot *s, struct strbuf *out, struct pt_error *err)
{
    varint_put(out, SNAPCODEC_VERSION);
    varint_put_signed(out, s->pid);
    put_array(out, s->cmdline, s->n_cmdline);
    for (size_t i = 0; s->cmdline != NULL && i < s->n_cmdline; i++) {
        varint_put_str(out, s->cmdline[i]);
    }
    put_bool(out, s->cmdline_cut);
    varint_put_f64(out, s->started);
    varint_put_f64(out, s->time);
    varint_put_str(out, s->python.version);
    varint_put(out, s->python.hexversion);
    put_bool(out, s->python.free_threaded);
    put_enum(out, (int)s->python.debug_build, SNAP_UNKNOWN);
    varint_put_str(out, s->python.binary);
    /* The table by its version: a pointer to static data means nothing in a file. */
    put_bool(out, s->opcodes != NULL);
    if (s->opcodes != NULL) {
        varint_put_signed(out, s->opcodes->key >> 8);
        varint_put_signed(out, s->opcodes->key & 0xff);
    }
    put_array(out, s->interps, s->n_interps);
    for (size_t i = 0; s->interps != NULL && i < s->n_interps; i++) {
        put_interp(out, &s->interps[i]);
    }
    put_bool(out, s->waits_present);
    size_t n_deadlocks = s->deadlocks != NULL ? s->n_deadlocks : 0;
    varint_put(out, n_deadlocks);
    for (size_t i = 0; i < n_deadlocks; i++) {
        const struct snap_deadlock *d = &s->deadlocks[i];
        size_t n = d->threads != NULL && d->locks != NULL ? d->n : 0;
        varint_put(out, n);
        for (size_t k = 0; k < n; k++) {
            varint_put_signed(out, d->threads[k]);
            varint_put(out, d->locks[k]);
        }
    }
    put_array(out, s->warnings, s->n_warnings);
    for (size_t i = 0; s->warnings != NULL && i < s->n_warnings; i++) {
        varint_put_str(out, s->warnings[i]);
    }
    if (out->failed) {
        return pt_error_set(err, PT_E_NOMEM, 0, "encoding a snapshot");
    }
    return 0;
}

/* Reading. The cursor's first failure ends the reading (every later read gives 0); a value
 * out of its range does the same, through refuse(), and says why. */
struct decoder {
    struct varint_cursor c;
    struct snapshot *s;
    size_t n; /* bytes in all, for where a refusal happened */
    bool nomem;
    char why[160];
};

static void refuse(struct decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void refuse(struct decoder *d, const char *fmt, ...)
{
    if (d->c.bad) {
        return;
    }
    char what[120];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(d->why, sizeof d->why, "%s at byte %zu", what, d->n - d->c.left);
    d->c.bad = true;
    d->c.left = 0;
}

/* Stops the reading on out of memory (not the bytes' fault). */
static void nomem(struct decoder *d)
{
    d->nomem = true;
    d->c.bad = true;
    d->c.left = 0;
}

static void *alloc(struct decoder *d, size_t n, size_t size)
{
    if (d->c.bad) {
        return NULL;
    }
    void *p = snapshot_alloc_array(d->s, n, size);
    if (p == NULL) {
        nomem(d);
    }
    return p;
}

static bool get_bool(struct decoder *d, const char *what)
{
    uint64_t v = varint_get(&d->c);
    if (v > 1) {
        refuse(d, "%s is %" PRIu64 ", not a flag", what, v);
        return false;
    }
    return v == 1;
}

static int get_enum(struct decoder *d, int lowest, int highest, const char *what)
{
    uint64_t v = varint_get(&d->c);
    if (v > (uint64_t)((int64_t)highest - lowest)) {
        if (v <= INT32_MAX) {
            refuse(d, "%s %" PRId64 " is not known", what, (int64_t)lowest + (int64_t)v);
        } else {
            refuse(d, "%s is not known", what);
        }
        return lowest;
    }
    return (int)((int64_t)lowest + (int64_t)v);
}

static int64_t get_signed(struct decoder *d, int64_t lowest, int64_t highest, const char *what)
{
    int64_t v = varint_get_signed(&d->c);
    if (v < lowest || v > highest) {
        refuse(d, "%s %" PRId64 " is out of range", what, v);
        return 0;
    }
    return v;
}

static int get_int(struct decoder *d, const char *what)
{
    return (int)get_signed(d, INT_MIN, INT_MAX, what);
}

static pid_t get_pid(struct decoder *d, const char *what)
{
    return (pid_t)get_signed(d, INT32_MIN, INT32_MAX, what);
}

static uint64_t get_unsigned(struct decoder *d, uint64_t highest, const char *what)
{
    uint64_t v = varint_get(&d->c);
    if (v > highest) {
        refuse(d, "%s %" PRIu64 " is out of range", what, v);
        return 0;
    }
    return v;
}

/* An array's count as put_array() wrote it: *PRESENT false for a NULL array. MIN_BYTES is
 * the least an item takes. */
static size_t get_array(struct decoder *d, size_t max, size_t min_bytes, bool *present,
                        const char *what)
{
    uint64_t v = varint_get(&d->c);
    *present = v > 0 && !d->c.bad;
    if (v == 0) {
        return 0;
    }
    uint64_t n = v - 1;
    if (n > max) {
        refuse(d, "%" PRIu64 " %s, more than %zu", n, what, max);
    } else if (n > d->c.left / min_bytes) {
        refuse(d, "%" PRIu64 " %s in %zu bytes", n, what, d->c.left);
    }
    if (d->c.bad) {
        *present = false;
        return 0;
    }
    return (size_t)n;
}

/* A string copied into the arena; unknown stays unknown, empty stays empty. */
static struct snap_str get_str(struct decoder *d)
{
    struct varint_cursor peek = d->c;
    uint64_t v = varint_get(&peek);
    if (!peek.bad && v > (uint64_t)MAX_STRING + 1) {
        refuse(d, "a string of %" PRIu64 " bytes, more than %d", v - 1, (int)MAX_STRING);
    }
    struct snap_str in = varint_get_str(&d->c, MAX_STRING);
    if (d->c.bad || in.ptr == NULL) {
        return (struct snap_str){NULL, 0};
    }
    struct snap_str out = snapshot_strdup(d->s, in.ptr, in.len);
    if (out.ptr == NULL) {
        nomem(d);
    }
    return out;
}

/* A string that is never unknown (an argument, a warning). */
static struct snap_str get_known_str(struct decoder *d, const char *what)
{
    struct snap_str str = get_str(d);
    if (str.ptr == NULL) {
        refuse(d, "%s is unknown", what);
    }
    return str;
}

static void get_frame(struct decoder *d, struct snap_frame *f)
{
    f->function = get_str(d);
    f->name = get_str(d);
    f->file = get_str(d);
    f->line = get_int(d, "a line");
    f->end_line = get_int(d, "an end line");
    f->col = get_int(d, "a column");
    f->end_col = get_int(d, "an end column");
    f->first_line = get_int(d, "a first line");
    f->op_offset = (uint32_t)get_unsigned(d, UINT32_MAX, "an instruction offset");
    f->op1 = (uint16_t)get_unsigned(d, UINT16_MAX, "an opcode");
    f->kind = get_enum(d, SNAP_FRAME_PYTHON, SNAP_FRAME_UNREADABLE, "a frame kind");
    f->unreadable =
        get_enum(d, SNAP_UNREADABLE_NONE, SNAP_UNREADABLE_NOMEM, "an unreadable reason");
}

/* A stack, NULL as it was written. */
static struct snap_frame *get_frames(struct decoder *d, size_t *n)
{
    bool present;
    *n = get_array(d, LIMIT_FRAMES, MIN_FRAME, &present, "frames");
    struct snap_frame *frames = present ? alloc(d, *n, sizeof *frames) : NULL;
    for (size_t i = 0; frames != NULL && i < *n && !d->c.bad; i++) {
        get_frame(d, &frames[i]);
    }
    if (frames == NULL) {
        *n = 0;
    }
    return frames;
}

static void get_wait(struct decoder *d, struct snap_wait *w)
{
    w->kind = get_enum(d, SNAP_WAIT_NONE, SNAP_WAIT_UNKNOWN, "a wait kind");
    w->syscall = get_str(d);
    w->fd = get_int(d, "a descriptor");
    w->object = get_str(d);
    w->lock = varint_get(&d->c);
    w->variable = get_str(d);
    w->via = get_str(d);
    w->owner_tid = get_pid(d, "an owner");
    w->owner_held = varint_get_f64(&d->c);
    w->since = varint_get_f64(&d->c);
    w->left = varint_get_f64(&d->c);
    w->requested = varint_get_f64(&d->c);
    w->reason = get_str(d);
}

static void get_thread(struct decoder *d, struct snap_thread *t)
{
    t->tid = get_pid(d, "a thread id");
    t->thread_id = varint_get(&d->c);
    t->name = get_str(d);
    t->main = get_bool(d, "main");
    t->gil = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "gil");
    t->gil_requested = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "gil_requested");
    t->on_cpu = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "on_cpu");
    t->has_exception = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "has_exception");
    t->in_gc = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "in_gc");
    t->frames = get_frames(d, &t->n_frames);
    t->frames_truncated = get_bool(d, "frames_truncated");
    t->frames_torn = get_bool(d, "frames_torn");
    get_wait(d, &t->wait);
}

static void get_gc(struct decoder *d, struct snap_gc *gc)
{
    gc->present = get_bool(d, "gc present");
    gc->enabled = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "gc enabled");
    gc->collecting = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "gc collecting");
    gc->thread = get_pid(d, "the collecting thread");
    bool present;
    size_t n = get_array(d, MAX_GC_GENERATIONS, MIN_GC_GEN, &present, "generations");
    gc->generations = present ? alloc(d, n, sizeof *gc->generations) : NULL;
    gc->n_generations = gc->generations != NULL ? n : 0;
    for (size_t i = 0; i < gc->n_generations && !d->c.bad; i++) {
        struct snap_gc_gen *g = &gc->generations[i];
        g->generation = get_int(d, "a generation");
        g->count = varint_get_signed(&d->c);
        g->threshold = varint_get_signed(&d->c);
        g->collections = varint_get_signed(&d->c);
        g->collected = varint_get_signed(&d->c);
        g->uncollectable = varint_get_signed(&d->c);
        g->candidates = varint_get_signed(&d->c);
        g->duration = varint_get_f64(&d->c);
    }
    gc->recent_present = get_bool(d, "gc records present");
    n = get_array(d, MAX_GC_RECORDS, MIN_GC_RECORD, &present, "gc records");
    gc->recent = present ? alloc(d, n, sizeof *gc->recent) : NULL;
    gc->n_recent = gc->recent != NULL ? n : 0;
    for (size_t i = 0; i < gc->n_recent && !d->c.bad; i++) {
        struct snap_gc_record *r = &gc->recent[i];
        r->generation = get_int(d, "a record's generation");
        r->start_ns = varint_get_signed(&d->c);
        r->stop_ns = varint_get_signed(&d->c);
        r->collections = varint_get_signed(&d->c);
        r->collected = varint_get_signed(&d->c);
        r->uncollectable = varint_get_signed(&d->c);
        r->candidates = varint_get_signed(&d->c);
        r->heap_size = varint_get_signed(&d->c);
        r->duration = varint_get_f64(&d->c);
    }
    gc->read_ns = varint_get_signed(&d->c);
}

static void get_task(struct decoder *d, struct snap_task *t)
{
    t->id = varint_get(&d->c);
    t->name = get_str(d);
    t->thread = get_pid(d, "a task's thread");
    t->state = get_enum(d, SNAP_TASK_UNKNOWN, SNAP_TASK_FINISHED, "a task state");
    t->frames = get_frames(d, &t->n_frames);
    t->frames_truncated = get_bool(d, "a task's frames_truncated");
    bool present;
    size_t n = get_array(d, LIMIT_TASK_EDGES, MIN_AWAITER, &present, "awaiters");
    t->awaited_by = present ? alloc(d, n, sizeof *t->awaited_by) : NULL;
    t->n_awaited_by = t->awaited_by != NULL ? n : 0;
    for (size_t i = 0; i < t->n_awaited_by && !d->c.bad; i++) {
        struct snap_task_awaiter *a = &t->awaited_by[i];
        a->task = varint_get(&d->c);
        a->frames = get_frames(d, &a->n_frames);
    }
    t->awaited_by_truncated = get_bool(d, "awaited_by_truncated");
}

static void get_interp(struct decoder *d, struct snap_interp *in)
{
    in->id = varint_get_signed(&d->c);
    bool present;
    size_t n = get_array(d, LIMIT_THREADS, MIN_THREAD, &present, "threads");
    in->threads = present ? alloc(d, n, sizeof *in->threads) : NULL;
    in->n_threads = in->threads != NULL ? n : 0;
    for (size_t i = 0; i < in->n_threads && !d->c.bad; i++) {
        get_thread(d, &in->threads[i]);
    }
    get_gc(d, &in->gc);
    in->tasks_present = get_bool(d, "tasks present");
    n = get_array(d, LIMIT_ASYNCIO_TASKS, MIN_TASK, &present, "tasks");
    in->tasks = present ? alloc(d, n, sizeof *in->tasks) : NULL;
    in->n_tasks = in->tasks != NULL ? n : 0;
    for (size_t i = 0; i < in->n_tasks && !d->c.bad; i++) {
        get_task(d, &in->tasks[i]);
    }
    in->tasks_truncated = get_bool(d, "tasks_truncated");
}

static void get_python(struct decoder *d, struct snapshot *s)
{
    s->python.version = get_str(d);
    s->python.hexversion = varint_get(&d->c);
    s->python.free_threaded = get_bool(d, "free_threaded");
    s->python.debug_build = get_enum(d, SNAP_UNKNOWN, SNAP_YES, "debug_build");
    s->python.binary = get_str(d);
    if (get_bool(d, "opcodes present")) {
        int major = (int)get_signed(d, 0, 255, "an instruction table's major version");
        int minor = (int)get_signed(d, 0, 255, "an instruction table's minor version");
        s->opcodes = d->c.bad ? NULL : opcode_table_for((unsigned)major << 8 | (unsigned)minor);
    }
}

static void get_deadlocks(struct decoder *d, struct snapshot *s)
{
    uint64_t v = varint_get(&d->c);
    if (v > MAX_DEADLOCK_THREADS || v > d->c.left / MIN_DEADLOCK) {
        refuse(d, "%" PRIu64 " deadlocks in %zu bytes", v, d->c.left);
    }
    size_t n = (size_t)v;
    if (d->c.bad || n == 0) {
        return;
    }
    s->deadlocks = alloc(d, n, sizeof *s->deadlocks);
    for (size_t i = 0; s->deadlocks != NULL && i < n && !d->c.bad; i++) {
        struct snap_deadlock *dl = &s->deadlocks[i];
        uint64_t len = varint_get(&d->c);
        if (len > MAX_DEADLOCK_THREADS || len > d->c.left / MIN_DEADLOCK_ENTRY) {
            refuse(d, "a deadlock of %" PRIu64 " threads in %zu bytes", len, d->c.left);
            len = 0;
        }
        dl->threads = alloc(d, (size_t)len, sizeof *dl->threads);
        dl->locks = alloc(d, (size_t)len, sizeof *dl->locks);
        for (size_t k = 0; dl->locks != NULL && k < len && !d->c.bad; k++) {
            dl->threads[k] = get_pid(d, "a deadlocked thread");
            dl->locks[k] = varint_get(&d->c);
        }
        dl->n = d->c.bad ? 0 : (size_t)len;
        s->n_deadlocks = d->c.bad ? i : i + 1;
    }
}

/* The fields after the version, in the order snapcodec_encode() writes them. */
static void get_snapshot(struct decoder *d, struct snapshot *s)
{
    s->pid = get_pid(d, "a pid");
    bool present;
    size_t n = get_array(d, LIMIT_CMDLINE, MIN_STR, &present, "arguments");
    s->cmdline = present ? alloc(d, n, sizeof *s->cmdline) : NULL;
    s->n_cmdline = s->cmdline != NULL ? n : 0;
    for (size_t i = 0; i < s->n_cmdline && !d->c.bad; i++) {
        s->cmdline[i] = get_known_str(d, "an argument");
    }
    s->cmdline_cut = get_bool(d, "cmdline_cut");
    s->started = varint_get_f64(&d->c);
    s->time = varint_get_f64(&d->c);
    get_python(d, s);
    n = get_array(d, LIMIT_INTERPRETERS, MIN_INTERP, &present, "interpreters");
    s->interps = present ? alloc(d, n, sizeof *s->interps) : NULL;
    s->n_interps = s->interps != NULL ? n : 0;
    for (size_t i = 0; i < s->n_interps && !d->c.bad; i++) {
        get_interp(d, &s->interps[i]);
    }
    s->waits_present = get_bool(d, "waits present");
    get_deadlocks(d, s);
    n = get_array(d, SNAPSHOT_MAX_WARNINGS, MIN_STR, &present, "warnings");
    s->warnings = present ? alloc(d, n, sizeof *s->warnings) : NULL;
    s->n_warnings = s->warnings != NULL ? n : 0;
    for (size_t i = 0; i < s->n_warnings && !d->c.bad; i++) {
        s->warnings[i] = get_known_str(d, "a warning");
    }
}

struct snapshot *snapcodec_decode(const void *p, size_t n, struct pt_error *err)
{
    struct decoder d = {.c = varint_cursor(p, n), .n = n};
    uint64_t version = varint_get(&d.c);
    if (d.c.bad) {
        pt_error_set(err, PT_E_FORMAT, 0, "snapshot encoding: no format version");
        return NULL;
    }
    if (version != SNAPCODEC_VERSION) {
        pt_error_set(err, PT_E_FORMAT, 0,
                     "snapshot encoding: format version %" PRIu64
                     " is not known (this pytop reads %d)",
                     version, (int)SNAPCODEC_VERSION);
        return NULL;
    }
    d.s = snapshot_new(err);
    if (d.s == NULL) {
        return NULL;
    }
    get_snapshot(&d, d.s);
    if (!d.c.bad && d.c.left > 0) {
        refuse(&d, "%zu bytes after the snapshot", d.c.left);
    }
    if (d.nomem) {
        pt_error_set(err, PT_E_NOMEM, 0, "decoding a snapshot of %zu bytes", n);
    } else if (d.c.bad) {
        pt_error_set(err, PT_E_FORMAT, 0, "snapshot encoding: %s",
                     d.why[0] != '\0' ? d.why : "it ends early or a number is malformed");
    }
    if (d.c.bad) {
        snapshot_free(d.s);
        return NULL;
    }
    return d.s;
}
