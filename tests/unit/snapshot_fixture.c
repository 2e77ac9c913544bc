/* snapshot_fixture: the snapshots test_snapshot and test_snapshot_write are built from. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "snapshot_fixture.h"

struct snap_str str(const char *c)
{
    struct snap_str s = {c, strlen(c)};
    return s;
}

struct snap_frame py_frame(const char *function, const char *file, int line)
{
    struct snap_frame f = {
        .function = str(function), .name = str(function), .file = str(file),
        .line = line, .end_line = line, .col = -1, .end_col = -1, .kind = SNAP_FRAME_PYTHON,
    };
    return f;
}

/* A thread with no name and no frames, known to be doing nothing. */
struct snap_thread idle_thread(pid_t tid)
{
    struct snap_thread t = {
        .tid = tid, .thread_id = 1000 + (uint64_t)tid,
        .gil = SNAP_NO, .gil_requested = SNAP_NO, .on_cpu = SNAP_NO,
        .has_exception = SNAP_NO, .in_gc = SNAP_NO,
    };
    return t;
}

/* A snapshot of N_INTERPS interpreters holding N_THREADS idle threads each, no frames (and
 * "tasks" null). */
struct snapshot *bare_snapshot(size_t n_interps, size_t n_threads)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->pid = 4242;
    s->time = 1764480000.123;
    s->python.version = str("3.15.2");
    s->python.hexversion = 0x030F02F0;
    s->python.debug_build = SNAP_NO;
    s->python.binary = str("/usr/bin/python3.15");
    s->interps = snapshot_alloc_array(s, n_interps, sizeof *s->interps);
    assert_non_null(s->interps);
    s->n_interps = n_interps;
    for (size_t i = 0; i < n_interps; i++) {
        struct snap_interp *in = &s->interps[i];
        in->id = (int64_t)i;
        in->threads = snapshot_alloc_array(s, n_threads, sizeof *in->threads);
        assert_non_null(in->threads);
        in->n_threads = n_threads;
        for (size_t k = 0; k < n_threads; k++) {
            in->threads[k] = idle_thread((pid_t)(4242 + k));
        }
    }
    return s;
}

/* Every interpreter of S read with no asyncio tasks (an empty list, not null). */
void no_tasks(struct snapshot *s)
{
    for (size_t i = 0; i < s->n_interps; i++) {
        s->interps[i].tasks_present = true;
    }
}

void give_frames(struct snapshot *s, struct snap_thread *t, size_t n)
{
    t->frames = snapshot_alloc_array(s, n, sizeof *t->frames);
    assert_non_null(t->frames);
    t->n_frames = n;
}

void give_gc(struct snapshot *s, struct snap_interp *in)
{
    static const struct snap_gc_gen gens[] = {
        {0, 312, 2000, 118, 4312, 0, -1, -1.0},
        {1, 4, 10, 11, 95, 0, -1, -1.0},
        {2, 0, 0, 1, 12000000, -1, -1, -1.0},
    };
    in->gc.present = true;
    in->gc.enabled = SNAP_YES;
    in->gc.collecting = SNAP_NO;
    in->gc.generations = snapshot_alloc(s, sizeof gens);
    assert_non_null(in->gc.generations);
    memcpy(in->gc.generations, gens, sizeof gens);
    in->gc.n_generations = 3;
}

/* The snapshot DESIGN.md shows. */
struct snapshot *design_snapshot(void)
{
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_interp *in = &s->interps[0];
    struct snap_thread *t = &in->threads[0];
    t->thread_id = 140512345678912;
    t->name = str("MainThread");
    t->main = true;
    give_frames(s, t, 1);
    t->frames[0] = py_frame("Worker.run", "/srv/app/worker.py", 41);
    t->frames[0].name = str("run");
    t->frames[0].col = 8;
    t->frames[0].end_col = 30;
    give_gc(s, in);
    in->gc.n_generations = 1;
    in->gc.recent_present = true;
    static const char args[] = "python3\0app.py\0";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, false, NULL), 0);
    s->started = 1764479000.5;
    return s;
}
