/* test_snapcodec: a snapshot encoded and decoded is the snapshot it was, field by field and as
 * both writers show it; broken and hostile encodings are refused, never half read. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/layout/opcodes.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/record/snapcodec.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/util/strbuf.h"
#include "core/util/varint.h"
#include "core/write/snapshot_write.h"
#include "snapshot_fixture.h"

static const struct snap_str unknown = {NULL, 0};

/* One frame of each kind, each reason a frame is unreadable, unknown and empty strings. */
static void give_every_frame(struct snapshot *s, struct snap_thread *t)
{
    const struct opcode_table *ops = s->opcodes;
    int op = 0;
    while (op < 255 && ops->names[op] == NULL) {
        op++;
    }
    give_frames(s, t, 9);
    t->frames[0] = py_frame("Worker.run", "/srv/app/worker.py", 41);
    t->frames[0].name = str("run");
    t->frames[0].end_line = 43;
    t->frames[0].col = 8;
    t->frames[0].end_col = 30;
    t->frames[0].first_line = 30;
    t->frames[0].op_offset = 1234;
    t->frames[0].op1 = (uint16_t)(op + 1);
    t->frames[1] = (struct snap_frame){.function = unknown,
                                       .name = unknown,
                                       .file = str(""),
                                       .line = -1,
                                       .end_line = -1,
                                       .col = -1,
                                       .end_col = -1,
                                       .first_line = -1,
                                       .kind = SNAP_FRAME_NATIVE};
    t->frames[2] = t->frames[1];
    t->frames[2].kind = SNAP_FRAME_GC;
    t->frames[3] = t->frames[1];
    t->frames[3].kind = SNAP_FRAME_SHIM;
    t->frames[3].function = str("");
    for (int i = 0; i < 4; i++) {
        struct snap_frame *f = &t->frames[4 + i];
        *f = t->frames[1];
        f->kind = SNAP_FRAME_UNREADABLE;
        f->unreadable = (enum snap_unreadable)(SNAP_UNREADABLE_STACK + i);
    }
    t->frames[8] = py_frame("<module>", "/srv/app/main.py", 2147483647);
    t->frames[8].col = -2147483647 - 1;
    t->frames[8].op_offset = UINT32_MAX;
    t->frames[8].op1 = UINT16_MAX;
}

/* Thread I of seven, each waiting in its own way (the first not read). */
static void give_wait(struct snap_thread *t, int i)
{
    struct snap_wait *w = &t->wait;
    *w = (struct snap_wait){.kind = (enum snap_wait_kind)(SNAP_WAIT_NONE + i),
                            .fd = -1,
                            .owner_held = -1,
                            .since = -1,
                            .left = -1,
                            .requested = -1};
    switch (w->kind) {
    case SNAP_WAIT_LOCK:
        w->syscall = str("futex");
        w->object = str("threading.RLock");
        w->lock = 0x7f0011223340;
        w->variable = str("self.lock");
        w->via = str("Queue.get");
        w->owner_tid = 4243;
        w->since = 2.5;
        break;
    case SNAP_WAIT_GIL:
        w->owner_tid = 4242;
        w->owner_held = 0.125;
        w->since = 0.0;
        break;
    case SNAP_WAIT_IO:
        w->syscall = str("read");
        w->fd = 7;
        w->object = str("TCP 127.0.0.1:5000 -> 127.0.0.1:40000");
        w->since = 12.0;
        break;
    case SNAP_WAIT_SLEEP:
        w->syscall = str("clock_nanosleep");
        w->left = 0.75;
        w->requested = 1.0;
        break;
    case SNAP_WAIT_UNKNOWN:
        w->syscall = str("");
        w->reason = str("no such system call");
        break;
    default:
        break;
    }
}

static void give_tasks(struct snapshot *s, struct snap_interp *in)
{
    struct snap_frame *parent = snapshot_alloc_array(s, 2, sizeof *parent);
    struct snap_frame *leaf = snapshot_alloc_array(s, 1, sizeof *leaf);
    struct snap_task_awaiter *by = snapshot_alloc_array(s, 2, sizeof *by);
    in->tasks = snapshot_alloc_array(s, 3, sizeof *in->tasks);
    assert_true(parent != NULL && leaf != NULL && by != NULL && in->tasks != NULL);
    parent[0] = py_frame("main", "/srv/app/main.py", 10);
    parent[1] = py_frame("runner", "/usr/lib/python3.15/asyncio/runners.py", 118);
    leaf[0] = py_frame("fetch", "/srv/app/net.py", 5);
    by[0] = (struct snap_task_awaiter){1, parent, 2};
    by[1] = (struct snap_task_awaiter){0, NULL, 0};
    in->tasks_present = true;
    in->tasks_truncated = true;
    in->n_tasks = 3;
    in->tasks[0] = (struct snap_task){.id = 1,
                                      .name = str("parent"),
                                      .thread = 4242,
                                      .state = SNAP_TASK_PENDING,
                                      .frames = parent,
                                      .n_frames = 2,
                                      .frames_truncated = true};
    in->tasks[1] = (struct snap_task){.id = 2,
                                      .name = str("child-1"),
                                      .thread = 4242,
                                      .state = SNAP_TASK_CANCELLED,
                                      .frames = leaf,
                                      .n_frames = 1,
                                      .awaited_by = by,
                                      .n_awaited_by = 2,
                                      .awaited_by_truncated = true};
    in->tasks[2] = (struct snap_task){.id = UINT64_MAX,
                                      .name = unknown,
                                      .state = SNAP_TASK_UNKNOWN,
                                      .frames = leaf,
                                      .n_frames = 1,
                                      .awaited_by = by,
                                      .n_awaited_by = 1};
}

static void give_records(struct snapshot *s, struct snap_interp *in)
{
    static const struct snap_gc_record recs[] = {
        {0, 1000, 1500, 117, 4300, 0, 9000, 120000, 0.0005},
        {2, 2000, 9000, 1, 12000000, -1, -1, 130000, -1.0},
        {0, 10000, 10400, 118, 4312, 0, 9100, 121000, 0.0004},
    };
    give_gc(s, in);
    in->gc.collecting = SNAP_YES;
    in->gc.thread = 4243;
    in->gc.generations[2].candidates = 77;
    in->gc.generations[2].duration = 1.5;
    in->gc.recent_present = true;
    in->gc.recent = snapshot_alloc(s, sizeof recs);
    assert_non_null(in->gc.recent);
    memcpy(in->gc.recent, recs, sizeof recs);
    in->gc.n_recent = 3;
    in->gc.read_ns = 10500;
}

/* Every field set, most to something other than its default. */
static struct snapshot *rich_snapshot(void)
{
    struct snapshot *s = bare_snapshot(2, 7);
    static const char args[] = "python3\0\0app.py\0--port=8000";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, true, NULL), 0);
    s->started = 1764479000.5;
    s->python.free_threaded = true;
    s->python.debug_build = SNAP_UNKNOWN;
    s->opcodes = opcode_table_for(0x030f);
    assert_non_null(s->opcodes);
    struct snap_interp *in = &s->interps[0];
    for (int i = 0; i < 7; i++) {
        struct snap_thread *t = &in->threads[i];
        t->gil = (enum snap_bool)(i % 3 - 1);
        t->gil_requested = (enum snap_bool)((i + 1) % 3 - 1);
        t->on_cpu = (enum snap_bool)((i + 2) % 3 - 1);
        t->has_exception = i == 3 ? SNAP_YES : SNAP_UNKNOWN;
        t->in_gc = i == 4 ? SNAP_YES : SNAP_NO;
        give_wait(t, i);
    }
    in->threads[0].name = str("MainThread");
    in->threads[0].main = true;
    in->threads[0].thread_id = UINT64_MAX;
    give_every_frame(s, &in->threads[0]);
    in->threads[0].frames_truncated = true;
    in->threads[1].name = str("");
    in->threads[1].frames_torn = true;
    in->threads[2].tid = 0;
    give_frames(s, &in->threads[2], 0);
    give_records(s, in);
    give_tasks(s, in);
    s->interps[1].id = -5;
    s->interps[1].tasks_present = true;
    s->interps[1].tasks = snapshot_alloc(s, 0);
    s->interps[1].gc.enabled = SNAP_UNKNOWN;
    s->interps[1].gc.collecting = SNAP_UNKNOWN;
    s->waits_present = true;
    s->deadlocks = snapshot_alloc_array(s, 2, sizeof *s->deadlocks);
    assert_non_null(s->deadlocks);
    static pid_t cycle_threads[] = {4242, 4243, 4244};
    static uint64_t cycle_locks[] = {0x7f0011223340, 0x7f0011223380, 0x10};
    s->deadlocks[0] = (struct snap_deadlock){cycle_threads, cycle_locks, 2};
    s->deadlocks[1] = (struct snap_deadlock){cycle_threads + 2, cycle_locks + 2, 1};
    s->n_deadlocks = 2;
    snapshot_warn(s, "thread %d: stack changed while read", 4243);
    snapshot_warn(s, "%s", "");
    snapshot_warn(s, "asyncio tasks of interpreter 1 not read");
    return s;
}

static struct strbuf encode(const struct snapshot *s)
{
    struct strbuf sb = {0};
    struct pt_error err = {0};
    assert_int_equal(snapcodec_encode(s, &sb, &err), 0);
    assert_false(sb.failed);
    assert_true(sb.len > 0);
    return sb;
}

static struct snapshot *decode_ok(const struct strbuf *sb)
{
    struct pt_error err = {0};
    struct snapshot *d = snapcodec_decode(sb->data, sb->len, &err);
    if (d == NULL) {
        fail_msg("decode: %s", err.msg);
    }
    return d;
}

/* Decoding P[0..N) is refused as malformed, with a reason. */
static void assert_refused(const void *p, size_t n, const char *reason)
{
    struct pt_error err = {0};
    struct snapshot *d = snapcodec_decode(p, n, &err);
    if (d != NULL) {
        snapshot_free(d);
        fail_msg("%zu bytes decoded", n);
    }
    assert_int_equal(err.code, PT_E_FORMAT);
    assert_true(strlen(err.msg) > 0);
    if (reason != NULL && strstr(err.msg, reason) == NULL) {
        fail_msg("\"%s\" does not say \"%s\"", err.msg, reason);
    }
}

static char *write_json(const struct snapshot *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_json(s, f, true, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static char *write_text(const struct snapshot *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_text(s, f, NULL, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* Same bytes, and both unknown or both known (an empty string is not an unknown one). */
static void assert_same_str(struct snap_str a, struct snap_str b)
{
    assert_int_equal(a.ptr == NULL, b.ptr == NULL);
    assert_int_equal(a.len, b.len);
    if (a.ptr != NULL && a.len > 0) {
        assert_memory_equal(a.ptr, b.ptr, a.len);
    }
}

static void assert_same_double(double a, double b)
{
    assert_memory_equal(&a, &b, sizeof a);
}

static void assert_same_frames(const struct snap_frame *a, size_t na, const struct snap_frame *b,
                               size_t nb)
{
    assert_int_equal(a == NULL, b == NULL);
    assert_int_equal(na, nb);
    for (size_t i = 0; a != NULL && i < na; i++) {
        assert_same_str(a[i].function, b[i].function);
        assert_same_str(a[i].name, b[i].name);
        assert_same_str(a[i].file, b[i].file);
        assert_int_equal(a[i].line, b[i].line);
        assert_int_equal(a[i].end_line, b[i].end_line);
        assert_int_equal(a[i].col, b[i].col);
        assert_int_equal(a[i].end_col, b[i].end_col);
        assert_int_equal(a[i].first_line, b[i].first_line);
        assert_int_equal(a[i].op_offset, b[i].op_offset);
        assert_int_equal(a[i].op1, b[i].op1);
        assert_int_equal(a[i].kind, b[i].kind);
        assert_int_equal(a[i].unreadable, b[i].unreadable);
    }
}

static void assert_same_wait(const struct snap_wait *a, const struct snap_wait *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_same_str(a->syscall, b->syscall);
    assert_int_equal(a->fd, b->fd);
    assert_same_str(a->object, b->object);
    assert_int_equal(a->lock, b->lock);
    assert_same_str(a->variable, b->variable);
    assert_same_str(a->via, b->via);
    assert_int_equal(a->owner_tid, b->owner_tid);
    assert_same_double(a->owner_held, b->owner_held);
    assert_same_double(a->since, b->since);
    assert_same_double(a->left, b->left);
    assert_same_double(a->requested, b->requested);
    assert_same_str(a->reason, b->reason);
}

static void assert_same_thread(const struct snap_thread *a, const struct snap_thread *b)
{
    assert_int_equal(a->tid, b->tid);
    assert_int_equal(a->thread_id, b->thread_id);
    assert_same_str(a->name, b->name);
    assert_int_equal(a->main, b->main);
    assert_int_equal(a->gil, b->gil);
    assert_int_equal(a->gil_requested, b->gil_requested);
    assert_int_equal(a->on_cpu, b->on_cpu);
    assert_int_equal(a->has_exception, b->has_exception);
    assert_int_equal(a->in_gc, b->in_gc);
    assert_same_frames(a->frames, a->n_frames, b->frames, b->n_frames);
    assert_int_equal(a->frames_truncated, b->frames_truncated);
    assert_int_equal(a->frames_torn, b->frames_torn);
    assert_same_wait(&a->wait, &b->wait);
}

static void assert_same_gc(const struct snap_gc *a, const struct snap_gc *b)
{
    assert_int_equal(a->present, b->present);
    assert_int_equal(a->enabled, b->enabled);
    assert_int_equal(a->collecting, b->collecting);
    assert_int_equal(a->thread, b->thread);
    assert_int_equal(a->generations == NULL, b->generations == NULL);
    assert_int_equal(a->n_generations, b->n_generations);
    for (size_t i = 0; a->generations != NULL && i < a->n_generations; i++) {
        const struct snap_gc_gen *x = &a->generations[i];
        const struct snap_gc_gen *y = &b->generations[i];
        assert_int_equal(x->generation, y->generation);
        assert_int_equal(x->count, y->count);
        assert_int_equal(x->threshold, y->threshold);
        assert_int_equal(x->collections, y->collections);
        assert_int_equal(x->collected, y->collected);
        assert_int_equal(x->uncollectable, y->uncollectable);
        assert_int_equal(x->candidates, y->candidates);
        assert_same_double(x->duration, y->duration);
    }
    assert_int_equal(a->recent_present, b->recent_present);
    assert_int_equal(a->recent == NULL, b->recent == NULL);
    assert_int_equal(a->n_recent, b->n_recent);
    for (size_t i = 0; a->recent != NULL && i < a->n_recent; i++) {
        const struct snap_gc_record *x = &a->recent[i];
        const struct snap_gc_record *y = &b->recent[i];
        assert_int_equal(x->generation, y->generation);
        assert_int_equal(x->start_ns, y->start_ns);
        assert_int_equal(x->stop_ns, y->stop_ns);
        assert_int_equal(x->collections, y->collections);
        assert_int_equal(x->collected, y->collected);
        assert_int_equal(x->uncollectable, y->uncollectable);
        assert_int_equal(x->candidates, y->candidates);
        assert_int_equal(x->heap_size, y->heap_size);
        assert_same_double(x->duration, y->duration);
    }
    assert_int_equal(a->read_ns, b->read_ns);
}

static void assert_same_task(const struct snap_task *a, const struct snap_task *b)
{
    assert_int_equal(a->id, b->id);
    assert_same_str(a->name, b->name);
    assert_int_equal(a->thread, b->thread);
    assert_int_equal(a->state, b->state);
    assert_same_frames(a->frames, a->n_frames, b->frames, b->n_frames);
    assert_int_equal(a->frames_truncated, b->frames_truncated);
    assert_int_equal(a->awaited_by == NULL, b->awaited_by == NULL);
    assert_int_equal(a->n_awaited_by, b->n_awaited_by);
    for (size_t i = 0; a->awaited_by != NULL && i < a->n_awaited_by; i++) {
        const struct snap_task_awaiter *x = &a->awaited_by[i];
        const struct snap_task_awaiter *y = &b->awaited_by[i];
        assert_int_equal(x->task, y->task);
        assert_same_frames(x->frames, x->n_frames, y->frames, y->n_frames);
    }
    assert_int_equal(a->awaited_by_truncated, b->awaited_by_truncated);
}

static void assert_same_interp(const struct snap_interp *a, const struct snap_interp *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->threads == NULL, b->threads == NULL);
    assert_int_equal(a->n_threads, b->n_threads);
    for (size_t i = 0; a->threads != NULL && i < a->n_threads; i++) {
        assert_same_thread(&a->threads[i], &b->threads[i]);
    }
    assert_same_gc(&a->gc, &b->gc);
    assert_int_equal(a->tasks_present, b->tasks_present);
    assert_int_equal(a->tasks == NULL, b->tasks == NULL);
    assert_int_equal(a->n_tasks, b->n_tasks);
    for (size_t i = 0; a->tasks != NULL && i < a->n_tasks; i++) {
        assert_same_task(&a->tasks[i], &b->tasks[i]);
    }
    assert_int_equal(a->tasks_truncated, b->tasks_truncated);
}

/* Every field of A and B alike, NULL where the other is NULL. */
static void assert_same_snapshot(const struct snapshot *a, const struct snapshot *b)
{
    assert_int_equal(a->pid, b->pid);
    assert_int_equal(a->cmdline == NULL, b->cmdline == NULL);
    assert_int_equal(a->n_cmdline, b->n_cmdline);
    for (size_t i = 0; a->cmdline != NULL && i < a->n_cmdline; i++) {
        assert_same_str(a->cmdline[i], b->cmdline[i]);
    }
    assert_int_equal(a->cmdline_cut, b->cmdline_cut);
    assert_same_double(a->started, b->started);
    assert_same_double(a->time, b->time);
    assert_same_str(a->python.version, b->python.version);
    assert_int_equal(a->python.hexversion, b->python.hexversion);
    assert_int_equal(a->python.free_threaded, b->python.free_threaded);
    assert_int_equal(a->python.debug_build, b->python.debug_build);
    assert_same_str(a->python.binary, b->python.binary);
    assert_ptr_equal(a->opcodes, b->opcodes);
    assert_int_equal(a->interps == NULL, b->interps == NULL);
    assert_int_equal(a->n_interps, b->n_interps);
    for (size_t i = 0; a->interps != NULL && i < a->n_interps; i++) {
        assert_same_interp(&a->interps[i], &b->interps[i]);
    }
    assert_int_equal(a->waits_present, b->waits_present);
    assert_int_equal(a->n_deadlocks, b->n_deadlocks);
    for (size_t i = 0; i < a->n_deadlocks; i++) {
        assert_int_equal(a->deadlocks[i].n, b->deadlocks[i].n);
        for (size_t k = 0; k < a->deadlocks[i].n; k++) {
            assert_int_equal(a->deadlocks[i].threads[k], b->deadlocks[i].threads[k]);
            assert_int_equal(a->deadlocks[i].locks[k], b->deadlocks[i].locks[k]);
        }
    }
    assert_int_equal(a->warnings == NULL, b->warnings == NULL);
    assert_int_equal(a->n_warnings, b->n_warnings);
    for (size_t i = 0; a->warnings != NULL && i < a->n_warnings; i++) {
        assert_same_str(a->warnings[i], b->warnings[i]);
    }
}

/* Encoded, decoded and compared, with the original freed first: the copy owns its strings. */
static void assert_round_trip(struct snapshot *s)
{
    char *json = write_json(s);
    char *text = write_text(s);
    struct strbuf sb = encode(s);
    struct snapshot *d = decode_ok(&sb);
    assert_same_snapshot(s, d);
    snapshot_free(s);
    memset(sb.data, 0xa5, sb.len);
    char *json2 = write_json(d);
    char *text2 = write_text(d);
    assert_string_equal(json2, json);
    assert_string_equal(text2, text);
    snapshot_free(d);
    strbuf_free(&sb);
    free(json);
    free(text);
    free(json2);
    free(text2);
}

static void test_snapcodec_round_trip_keeps_every_field(void **state)
{
    (void)state;
    assert_round_trip(rich_snapshot());
}

/* What the JSON does not tell apart is kept apart too: an empty string and an unknown one, an
 * empty array and none. */
static void test_snapcodec_round_trip_keeps_empty_apart_from_unknown(void **state)
{
    (void)state;
    struct snapshot *s = rich_snapshot();
    struct strbuf sb = encode(s);
    struct snapshot *d = decode_ok(&sb);
    const struct snap_thread *t = d->interps[0].threads;
    assert_non_null(t[1].name.ptr);
    assert_int_equal(t[1].name.len, 0);
    assert_null(t[3].name.ptr);
    assert_null(t[0].frames[1].function.ptr);
    assert_non_null(t[0].frames[3].function.ptr);
    assert_non_null(t[2].frames);
    assert_int_equal(t[2].n_frames, 0);
    assert_null(t[3].frames);
    assert_non_null(d->cmdline[1].ptr);
    assert_int_equal(d->cmdline[1].len, 0);
    assert_non_null(d->interps[1].tasks);
    assert_int_equal(d->interps[1].n_tasks, 0);
    assert_null(d->interps[0].tasks[1].awaited_by[1].frames);
    assert_null(d->interps[0].tasks[0].awaited_by);
    assert_int_equal(d->warnings[1].len, 0);
    assert_non_null(d->warnings[1].ptr);
    snapshot_free(s);
    snapshot_free(d);
    strbuf_free(&sb);
}

/* The fixtures other tests use, a bare snapshot and one with nothing known at all. */
static void test_snapcodec_round_trip_keeps_small_snapshots(void **state)
{
    (void)state;
    assert_round_trip(design_snapshot());
    assert_round_trip(bare_snapshot(1, 0));
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    s->started = -1;
    assert_round_trip(s);
}

/* Encoding appends: two snapshots one after the other, each decoded from its own bytes. */
static void test_snapcodec_encode_appends(void **state)
{
    (void)state;
    struct snapshot *a = design_snapshot();
    struct strbuf sb = {0};
    strbuf_puts(&sb, "head");
    assert_int_equal(snapcodec_encode(a, &sb, NULL), 0);
    size_t one = sb.len - 4;
    struct pt_error err = {0};
    struct snapshot *d = snapcodec_decode(sb.data + 4, one, &err);
    assert_non_null(d);
    assert_same_snapshot(a, d);
    snapshot_free(a);
    snapshot_free(d);
    strbuf_free(&sb);
}

/* An instruction table this pytop does not have is left out, not refused. */
static void test_snapcodec_decode_leaves_out_an_unknown_opcode_table(void **state)
{
    (void)state;
    static const struct opcode_table future = {0x0363, NULL, NULL, NULL, OPCODE_WORDCODE, 0};
    struct snapshot *s = design_snapshot();
    s->opcodes = &future;
    struct strbuf sb = encode(s);
    struct snapshot *d = decode_ok(&sb);
    assert_null(d->opcodes);
    assert_int_equal(d->interps[0].n_threads, 1);
    snapshot_free(s);
    snapshot_free(d);
    strbuf_free(&sb);
}

/* Every prefix of a valid encoding is refused, and so is a byte more. */
static void test_snapcodec_decode_refuses_every_truncation(void **state)
{
    (void)state;
    struct snapshot *s = rich_snapshot();
    struct strbuf sb = encode(s);
    for (size_t n = 0; n < sb.len; n++) {
        /* An exact-size copy, so that a read past the end is caught by the sanitizers. */
        char *p = malloc(n > 0 ? n : 1);
        assert_non_null(p);
        memcpy(p, sb.data, n);
        assert_refused(p, n, NULL);
        free(p);
    }
    strbuf_append(&sb, "", 1);
    assert_refused(sb.data, sb.len, "1 bytes after the snapshot");
    snapshot_free(s);
    strbuf_free(&sb);
}

/* The encoder writes what it is given; the decoder refuses what no snapshot can hold. */
static void test_snapcodec_decode_refuses_values_out_of_range(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        struct snapshot *s = design_snapshot();
        struct snap_thread *t = &s->interps[0].threads[0];
        const char *reason = NULL;
        switch (i) {
        case 0:
            t->frames[0].kind = (enum snap_frame_kind)9;
            reason = "frame kind 9";
            break;
        case 1:
            t->gil = (enum snap_bool)2;
            reason = "gil 2";
            break;
        case 2:
            t->wait.kind = (enum snap_wait_kind)42;
            reason = "wait kind 42";
            break;
        case 3:
            s->interps[0].tasks = snapshot_alloc(s, sizeof *s->interps[0].tasks);
            s->interps[0].n_tasks = 1;
            s->interps[0].tasks[0].state = (enum snap_task_state)3;
            reason = "task state 3";
            break;
        case 4:
            t->frames[0].unreadable = (enum snap_unreadable)(-1);
            reason = "unreadable";
            break;
        }
        struct strbuf sb = encode(s);
        assert_refused(sb.data, sb.len, reason);
        snapshot_free(s);
        strbuf_free(&sb);
    }
}

/* The fields of a snapshot up to its interpreters' count, known to nothing. */
static void put_head(struct strbuf *sb, uint64_t version)
{
    varint_put(sb, version);
    varint_put_signed(sb, 1); /* pid */
    varint_put(sb, 0);        /* cmdline */
    varint_put(sb, 0);        /* cmdline_cut */
    varint_put_f64(sb, -1);   /* started */
    varint_put_f64(sb, 0);    /* time */
}

static void put_python(struct strbuf *sb)
{
    varint_put(sb, 0); /* version */
    varint_put(sb, 0); /* hexversion */
    varint_put(sb, 0); /* free_threaded */
    varint_put(sb, 0); /* debug_build unknown */
    varint_put(sb, 0); /* binary */
    varint_put(sb, 0); /* no opcodes */
}

/* Hand-made: counts past the limits and past the bytes, numbers out of range, strings too
 * long, a varint that never ends, a later format. */
static void test_snapcodec_decode_refuses_hostile_bytes(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    assert_refused(NULL, 0, "no format version");
    put_head(&sb, 2);
    assert_refused(sb.data, sb.len, "format version 2 is not known");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, (uint64_t)1 << 40);
    assert_refused(sb.data, sb.len, "interpreters, more than 256");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, 201);
    for (int i = 0; i < 200; i++) {
        varint_put(&sb, 0);
    }
    assert_refused(sb.data, sb.len, "200 interpreters in 200 bytes");
    strbuf_free(&sb);

    varint_put(&sb, 1);
    varint_put_signed(&sb, (int64_t)1 << 40);
    assert_refused(sb.data, sb.len, "a pid 1099511627776 is out of range");
    strbuf_free(&sb);

    varint_put(&sb, 1);
    for (int i = 0; i < 12; i++) {
        strbuf_append(&sb, "\x80", 1);
    }
    assert_refused(sb.data, sb.len, NULL);
    strbuf_free(&sb);

    put_head(&sb, 1);
    varint_put(&sb, (uint64_t)LIMIT_CMDLINE + 2);
    assert_refused(sb.data, sb.len, "a string of 32769 bytes");
    strbuf_free(&sb);

    put_head(&sb, 1);
    varint_put(&sb, 0);
    varint_put(&sb, 0);
    varint_put(&sb, 0);
    varint_put(&sb, 3);
    assert_refused(sb.data, sb.len, "debug_build 2 is not known");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, 1); /* no interpreters */
    varint_put(&sb, 2); /* waits_present */
    assert_refused(sb.data, sb.len, "waits present is 2");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, 1);
    varint_put(&sb, 1);
    varint_put(&sb, 1); /* one deadlock */
    varint_put(&sb, UINT64_MAX);
    assert_refused(sb.data, sb.len, "a deadlock of 18446744073709551615 threads");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, 1);
    varint_put(&sb, 1);
    varint_put(&sb, 0);
    varint_put(&sb, 2);
    varint_put(&sb, 0);
    assert_refused(sb.data, sb.len, "a warning is unknown");
    strbuf_free(&sb);

    varint_put(&sb, 1);
    varint_put_signed(&sb, 1);
    varint_put(&sb, 2);
    varint_put(&sb, 0);
    assert_refused(sb.data, sb.len, "an argument is unknown");
    strbuf_free(&sb);

    put_head(&sb, 1);
    put_python(&sb);
    varint_put(&sb, 1);
    varint_put(&sb, 1);
    varint_put(&sb, 0);
    varint_put(&sb, (uint64_t)SNAPSHOT_MAX_WARNINGS + 2);
    assert_refused(sb.data, sb.len, "257 warnings, more than 256");
    strbuf_free(&sb);
}

/* Writes S's encoding to DIR/NAME, for the fuzzer's seeds. */
static int write_seed(const char *dir, const char *name, struct snapshot *s)
{
    struct strbuf sb = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int rc =
        f != NULL && snapcodec_encode(s, &sb, NULL) == 0 && fwrite(sb.data, 1, sb.len, f) == sb.len
            ? 0
            : -1;
    if (f != NULL && fclose(f) != 0) {
        rc = -1;
    }
    if (rc < 0) {
        fprintf(stderr, "test_snapcodec: cannot write %s\n", path);
    }
    snapshot_free(s);
    strbuf_free(&sb);
    return rc;
}

/* With PYTOP_SNAPCODEC_SEEDS=DIR, writes fuzz_snapcodec's seeds into DIR (tests/fuzz/snapcodec)
 * instead of testing. */
static int write_seeds(const char *dir)
{
    struct snapshot *empty = snapshot_new(NULL);
    if (empty == NULL) {
        return 1;
    }
    empty->started = -1;
    int rc = write_seed(dir, "rich", rich_snapshot());
    rc |= write_seed(dir, "design", design_snapshot());
    rc |= write_seed(dir, "bare", bare_snapshot(2, 3));
    rc |= write_seed(dir, "empty", empty);
    return rc < 0 ? 1 : 0;
}

int main(void)
{
    const char *seeds = getenv("PYTOP_SNAPCODEC_SEEDS");
    if (seeds != NULL) {
        return write_seeds(seeds);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapcodec_round_trip_keeps_every_field),
        cmocka_unit_test(test_snapcodec_round_trip_keeps_empty_apart_from_unknown),
        cmocka_unit_test(test_snapcodec_round_trip_keeps_small_snapshots),
        cmocka_unit_test(test_snapcodec_encode_appends),
        cmocka_unit_test(test_snapcodec_decode_leaves_out_an_unknown_opcode_table),
        cmocka_unit_test(test_snapcodec_decode_refuses_every_truncation),
        cmocka_unit_test(test_snapcodec_decode_refuses_values_out_of_range),
        cmocka_unit_test(test_snapcodec_decode_refuses_hostile_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
