/* test_tasks: the _asyncio debug-offsets parser, the task tree drawing, and the tasks in the
 * JSON writer. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/snapshot.h"
#include "core/strbuf.h"
#include "core/tasks.h"
#include "core/tasktree.h"

/* The .AsyncioDebug section of Debian's python3.15 (3.15.2), as 13 uint64 values. */
static const uint64_t SECTION_3_15[13] = {168, 136, 96, 108, 109, 128, 152,
                                          226240, 10856, 1104, 1024, 1032, 1048};

static void section_bytes(const uint64_t *v, uint8_t *out)
{
    for (size_t i = 0; i < 13; i++) {
        for (size_t b = 0; b < 8; b++) {
            out[i * 8 + b] = (uint8_t)(v[i] >> (8 * b));
        }
    }
}

static void test_tasks_parse_offsets_reads_the_3_15_section(void **state)
{
    (void)state;
    uint8_t buf[TASKS_DEBUG_SECTION_SIZE];
    struct tasks_offsets o;
    struct pt_error err = {0};
    section_bytes(SECTION_3_15, buf);
    assert_int_equal(tasks_parse_offsets(buf, sizeof buf, &o, &err), 0);
    assert_int_equal(o.task_size, 168);
    assert_int_equal(o.task_name, 136);
    assert_int_equal(o.task_awaited_by, 96);
    assert_int_equal(o.task_is_task, 108);
    assert_int_equal(o.task_awaited_by_is_set, 109);
    assert_int_equal(o.task_coro, 128);
    assert_int_equal(o.task_node, 152);
    assert_int_equal(o.task_state, 104);
    assert_int_equal(o.interp_tasks_head, 10856);
    assert_int_equal(o.thread_running_task, 1032);
    assert_int_equal(o.thread_tasks_head, 1048);
}

static void test_tasks_parse_offsets_rejects_a_truncated_section(void **state)
{
    (void)state;
    uint8_t buf[TASKS_DEBUG_SECTION_SIZE];
    struct tasks_offsets o;
    struct pt_error err = {0};
    section_bytes(SECTION_3_15, buf);
    assert_int_equal(tasks_parse_offsets(buf, sizeof buf - 1, &o, &err), -1);
    assert_int_equal(err.code, PT_E_FORMAT);
}

static void test_tasks_parse_offsets_rejects_fields_outside_their_structs(void **state)
{
    (void)state;
    uint8_t buf[TASKS_DEBUG_SECTION_SIZE];
    struct tasks_offsets o;
    struct pt_error err = {0};
    uint64_t v[13];
    /* The node past the task's end; an oversized task; a list head past the thread state. */
    const size_t field[] = {6, 0, 12, 8, 4};
    const uint64_t value[] = {164, LIMIT_OBJECT_READ + 1, 1100, UINT64_MAX - 4, 168};
    for (size_t i = 0; i < sizeof field / sizeof field[0]; i++) {
        memcpy(v, SECTION_3_15, sizeof v);
        v[field[i]] = value[i];
        section_bytes(v, buf);
        assert_int_equal(tasks_parse_offsets(buf, sizeof buf, &o, &err), -1);
        assert_int_equal(err.code, PT_E_BADLAYOUT);
    }
}

static struct snap_str str(const char *c)
{
    struct snap_str s = {c, strlen(c)};
    return s;
}

static struct snap_frame frame(const char *function, const char *file, int line)
{
    struct snap_frame f = {.function = str(function), .name = str(function), .file = str(file),
                           .line = line, .end_line = -1, .col = -1, .end_col = -1,
                           .first_line = -1};
    return f;
}

static char *draw(const struct snap_task *tasks, size_t n)
{
    struct strbuf sb = {0};
    struct pt_error err = {0};
    assert_int_equal(tasktree_write(&sb, tasks, n, &err), 0);
    strbuf_puts(&sb, "");
    return sb.data;
}

/* A parent awaiting two children through two coroutine frames, which the children share; a
 * task awaiting nothing shows its own stack; the order is the lists' order. */
static void test_tasktree_draws_like_pstree(void **state)
{
    (void)state;
    struct snap_frame parent_stack[] = {frame("inner", "a.py", 2), frame("outer", "a.py", 9)};
    struct snap_frame child_stack[] = {frame("leaf", "b.py", 5)};
    struct snap_task_awaiter by_parent = {1, parent_stack, 2};
    struct snap_task tasks[] = {
        {.id = 1, .name = str("parent"), .frames = parent_stack, .n_frames = 2},
        {.id = 2, .name = str("c1"), .frames = child_stack, .n_frames = 1,
         .awaited_by = &by_parent, .n_awaited_by = 1},
        {.id = 3, .name = str("c2"), .frames = child_stack, .n_frames = 1,
         .awaited_by = &by_parent, .n_awaited_by = 1},
    };
    char *text = draw(tasks, 3);
    assert_string_equal(text,
                        "└── (T) parent\n"
                        "    └──  outer a.py:9\n"
                        "        └──  inner a.py:2\n"
                        "            ├── (T) c1\n"
                        "            │   └──  leaf b.py:5\n"
                        "            └── (T) c2\n"
                        "                └──  leaf b.py:5\n");
    free(text);
}

/* Lines unknown: "function file"; a task whose awaiter was not listed is hidden as pstree
 * hides it; a future (not a task) awaiting leaves the task a root. */
static void test_tasktree_follows_pstree_for_unknowns_and_futures(void **state)
{
    (void)state;
    struct snap_frame unknown_line[] = {frame("f", "c.py", -1)};
    struct snap_task_awaiter by_unlisted = {99, NULL, 0};
    struct snap_task_awaiter by_future = {0, NULL, 0};
    struct snap_task tasks[] = {
        {.id = 1, .name = str("a"), .frames = unknown_line, .n_frames = 1,
         .awaited_by = &by_future, .n_awaited_by = 1},
        {.id = 2, .name = str("hidden"), .awaited_by = &by_unlisted, .n_awaited_by = 1},
        {.id = 3, .name = {NULL, 0}},
    };
    char *text = draw(tasks, 3);
    assert_string_equal(text, "└── (T) a\n"
                              "    └──  f c.py\n"
                              "└── (T) ?\n");
    free(text);
}

/* Tasks awaiting each other in a ring are reported, not drawn (nor looped on). */
static void test_tasktree_reports_cycles_instead_of_looping(void **state)
{
    (void)state;
    struct snap_task_awaiter by1 = {1, NULL, 0};
    struct snap_task_awaiter by2 = {2, NULL, 0};
    struct snap_task_awaiter by3 = {3, NULL, 0};
    struct snap_task tasks[] = {
        {.id = 1, .name = str("one"), .awaited_by = &by3, .n_awaited_by = 1},
        {.id = 2, .name = str("two"), .awaited_by = &by1, .n_awaited_by = 1},
        {.id = 3, .name = str("three"), .awaited_by = &by2, .n_awaited_by = 1},
    };
    char *text = draw(tasks, 3);
    assert_string_equal(text, "ERROR: await-graph contains cycles - cannot print a tree!\n\n"
                              "cycle: one → two → three → one\n");
    free(text);
    struct snap_task self[] = {{.id = 7, .name = str("me"), .awaited_by = &by1, .n_awaited_by = 1}};
    by1.task = 7;
    text = draw(self, 1);
    assert_string_equal(text, "ERROR: await-graph contains cycles - cannot print a tree!\n\n"
                              "cycle: me → me\n");
    free(text);
}

/* A long chain draws without recursion: each task awaits the one before. */
static void test_tasktree_draws_a_deep_chain(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct snap_task *tasks = calloc(N, sizeof *tasks);
    struct snap_task_awaiter *by = calloc(N, sizeof *by);
    assert_non_null(tasks);
    assert_non_null(by);
    for (size_t i = 0; i < N; i++) {
        tasks[i].id = i + 1;
        tasks[i].name = str("t");
        if (i > 0) {
            by[i].task = i;
            tasks[i].awaited_by = &by[i];
            tasks[i].n_awaited_by = 1;
        }
    }
    char *text = draw(tasks, N);
    size_t lines = 0;
    for (const char *p = text; *p != '\0'; p++) {
        lines += *p == '\n';
    }
    assert_int_equal(lines, N);
    free(text);
    free(tasks);
    free(by);
}

static void test_snapshot_write_json_lists_tasks_and_awaiters(void **state)
{
    (void)state;
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    struct snap_frame stack[] = {frame("main", "m.py", 3)};
    struct snap_task_awaiter aw[] = {{5, stack, 1}, {0, NULL, 0}};
    struct snap_task task = {.id = 6, .name = str("Task-2"), .thread = 42,
                             .state = SNAP_TASK_PENDING, .awaited_by = aw, .n_awaited_by = 2};
    struct snap_interp interps[2] = {{.id = 0, .tasks_present = true, .tasks = &task,
                                      .n_tasks = 1},
                                     {.id = 1}};
    s->interps = interps;
    s->n_interps = 2;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(snapshot_write_json(s, f, false, &err), 0);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "\"tasks\":[{\"id\":6,\"name\":\"Task-2\",\"thread\":42,"
                                "\"state\":\"pending\",\"coroutine_stack\":[],\"awaited_by\":"
                                "[{\"task\":5,\"coroutine_stack\":[{\"function\":\"main\""));
    assert_non_null(strstr(buf, "{\"task\":null,\"coroutine_stack\":[]}]}]}"));
    assert_non_null(strstr(buf, "\"tasks\":null}"));
    free(buf);
    s->interps = NULL;
    s->n_interps = 0;
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks_parse_offsets_reads_the_3_15_section),
        cmocka_unit_test(test_tasks_parse_offsets_rejects_a_truncated_section),
        cmocka_unit_test(test_tasks_parse_offsets_rejects_fields_outside_their_structs),
        cmocka_unit_test(test_tasktree_draws_like_pstree),
        cmocka_unit_test(test_tasktree_follows_pstree_for_unknowns_and_futures),
        cmocka_unit_test(test_tasktree_reports_cycles_instead_of_looping),
        cmocka_unit_test(test_tasktree_draws_a_deep_chain),
        cmocka_unit_test(test_snapshot_write_json_lists_tasks_and_awaiters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
