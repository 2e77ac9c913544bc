/* test_snapcopy: deep copies of a snapshot keep everything, tasks included, and share what the
 * original shares. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/util/strbuf.h"
#include "core/model/tasktree.h"
#include "app/snapcopy.h"

static struct snap_str arena_str(struct snapshot *s, const char *c)
{
    return snapshot_strdup(s, c, strlen(c));
}

static struct snap_frame *frames(struct snapshot *s, size_t n, const char *function)
{
    struct snap_frame *f = snapshot_alloc_array(s, n, sizeof *f);
    assert_non_null(f);
    struct snap_str file = arena_str(s, "/srv/app.py");
    for (size_t i = 0; i < n; i++) {
        f[i] = (struct snap_frame){.function = arena_str(s, function),
                                   .name = arena_str(s, function),
                                   .file = file,
                                   .line = (int)(10 + i),
                                   .end_line = -1,
                                   .col = -1,
                                   .end_col = -1,
                                   .first_line = 1};
    }
    return f;
}

/* One interpreter: a thread, and a parent task awaited by two children through one stack. */
static struct snapshot *original(void)
{
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    s->pid = 42;
    s->python.version = arena_str(s, "3.15.2");
    struct snap_interp *in = snapshot_alloc(s, sizeof *in);
    assert_non_null(in);
    s->interps = in;
    s->n_interps = 1;
    in->threads = snapshot_alloc(s, sizeof *in->threads);
    assert_non_null(in->threads);
    in->n_threads = 1;
    in->threads[0] = (struct snap_thread){.tid = 42,
                                          .name = arena_str(s, "MainThread"),
                                          .frames = frames(s, 3, "run"),
                                          .n_frames = 3};
    struct snap_frame *parent = frames(s, 2, "main");
    struct snap_frame *leaf = frames(s, 1, "leaf");
    struct snap_task_awaiter *by = snapshot_alloc_array(s, 2, sizeof *by);
    assert_non_null(by);
    by[0] = (struct snap_task_awaiter){1, parent, 2};
    by[1] = (struct snap_task_awaiter){0, NULL, 0};
    in->tasks = snapshot_alloc_array(s, 3, sizeof *in->tasks);
    assert_non_null(in->tasks);
    in->n_tasks = 3;
    in->tasks_present = true;
    in->tasks_truncated = true;
    in->tasks[0] = (struct snap_task){.id = 1,
                                      .name = arena_str(s, "parent"),
                                      .thread = 42,
                                      .frames = parent,
                                      .n_frames = 2,
                                      .frames_truncated = true};
    in->tasks[1] = (struct snap_task){.id = 2,
                                      .name = arena_str(s, "child-1"),
                                      .frames = leaf,
                                      .n_frames = 1,
                                      .awaited_by = by,
                                      .n_awaited_by = 2,
                                      .awaited_by_truncated = true};
    in->tasks[2] = (struct snap_task){.id = 3,
                                      .name = {NULL, 0},
                                      .frames = leaf,
                                      .n_frames = 1,
                                      .awaited_by = by,
                                      .n_awaited_by = 1};
    return s;
}

static char *tree_of(const struct snapshot *s)
{
    struct strbuf sb = {0};
    const struct snap_interp *in = &s->interps[0];
    assert_int_equal(tasktree_write(&sb, in->tasks, in->n_tasks, NULL, NULL), 0);
    strbuf_puts(&sb, "");
    return sb.data;
}

/* The copy outlives the original: its tasks, awaiters, frames and strings are its own. */
static void test_snapcopy_all_keeps_the_tasks(void **state)
{
    (void)state;
    struct snapshot *s = original();
    char *before = tree_of(s);
    struct pt_error err = {0};
    struct snapshot *d = snapcopy_all(s, &err);
    assert_non_null(d);
    snapshot_free(s);
    const struct snap_interp *in = &d->interps[0];
    assert_true(in->tasks_present);
    assert_true(in->tasks_truncated);
    assert_int_equal(in->n_tasks, 3);
    assert_true(in->tasks[0].frames_truncated);
    assert_true(in->tasks[1].awaited_by_truncated);
    assert_int_equal(in->tasks[1].n_awaited_by, 2);
    assert_int_equal(in->tasks[1].awaited_by[0].task, 1);
    assert_int_equal(in->tasks[1].awaited_by[1].task, 0);
    assert_null(in->tasks[1].awaited_by[1].frames);
    assert_null(in->tasks[2].name.ptr);
    assert_int_equal(in->tasks[0].thread, 42);
    assert_memory_equal(in->tasks[1].name.ptr, "child-1", 7);
    assert_memory_equal(in->threads[0].name.ptr, "MainThread", 10);
    assert_int_equal(in->threads[0].n_frames, 3);
    assert_int_equal(in->threads[0].frames[2].line, 12);
    char *after = tree_of(d);
    assert_string_equal(after, before);
    free(before);
    free(after);
    snapshot_free(d);
}

/* What the original shares stays shared: one copy of a stack several tasks point to. */
static void test_snapcopy_all_shares_what_the_original_shares(void **state)
{
    (void)state;
    struct snapshot *s = original();
    struct pt_error err = {0};
    struct snapshot *d = snapcopy_all(s, &err);
    assert_non_null(d);
    const struct snap_interp *a = &s->interps[0];
    const struct snap_interp *b = &d->interps[0];
    assert_ptr_not_equal(b->tasks[1].frames, a->tasks[1].frames);
    assert_ptr_equal(b->tasks[1].frames, b->tasks[2].frames);
    assert_ptr_equal(b->tasks[1].awaited_by[0].frames, b->tasks[0].frames);
    assert_ptr_equal(b->tasks[0].frames[0].file.ptr, b->tasks[0].frames[1].file.ptr);
    assert_ptr_not_equal(b->tasks[1].frames[0].file.ptr, a->tasks[1].frames[0].file.ptr);
    snapshot_free(s);
    snapshot_free(d);
}

/* The target's name goes with the copy: a dump of the last picture of an exited process still
 * says what it was. An unknown command line stays unknown. */
static void test_snapcopy_all_keeps_the_command_line_and_start(void **state)
{
    (void)state;
    struct snapshot *s = original();
    struct pt_error err = {0};
    struct snapshot *d = snapcopy_all(s, &err);
    assert_non_null(d);
    assert_null(d->cmdline);
    assert_true(d->started < 0);
    snapshot_free(d);
    static const char args[] = "python3\0app.py\0";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, true, &err), 0);
    s->started = 1764479000.5;
    d = snapcopy_all(s, &err);
    assert_non_null(d);
    snapshot_free(s);
    assert_int_equal(d->n_cmdline, 2);
    assert_memory_equal(d->cmdline[0].ptr, "python3", 7);
    assert_memory_equal(d->cmdline[1].ptr, "app.py", 6);
    assert_true(d->cmdline_cut);
    assert_true(d->started == 1764479000.5);
    snapshot_free(d);
}

/* A snapshot without a task graph says so in the copy too. */
static void test_snapcopy_all_keeps_a_missing_graph_missing(void **state)
{
    (void)state;
    struct snapshot *s = original();
    s->interps[0].tasks_present = false;
    s->interps[0].tasks = NULL;
    s->interps[0].n_tasks = 0;
    struct pt_error err = {0};
    struct snapshot *d = snapcopy_all(s, &err);
    assert_non_null(d);
    assert_false(d->interps[0].tasks_present);
    assert_null(d->interps[0].tasks);
    snapshot_free(s);
    snapshot_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapcopy_all_keeps_the_tasks),
        cmocka_unit_test(test_snapcopy_all_shares_what_the_original_shares),
        cmocka_unit_test(test_snapcopy_all_keeps_a_missing_graph_missing),
        cmocka_unit_test(test_snapcopy_all_keeps_the_command_line_and_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
