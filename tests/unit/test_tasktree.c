/* test_tasktree: the asyncio task tree drawn as pstree draws it, and the tasks in the JSON and
 * text writers. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "core/util/strbuf.h"
#include "core/model/tasktree.h"

static struct snap_str str(const char *c)
{
    struct snap_str s = {c, strlen(c)};
    return s;
}

static struct snap_frame frame(const char *function, const char *file, int line)
{
    struct snap_frame f = {.function = str(function),
                           .name = str(function),
                           .file = str(file),
                           .line = line,
                           .end_line = -1,
                           .col = -1,
                           .end_col = -1,
                           .first_line = -1};
    return f;
}

static char *draw(const struct snap_task *tasks, size_t n)
{
    struct strbuf sb = {0};
    struct pt_error err = {0};
    assert_int_equal(tasktree_write(&sb, tasks, n, NULL, &err), 0);
    strbuf_puts(&sb, "");
    return sb.data;
}

/* A parent awaiting two children through two coroutine frames, which the children share. */
struct family {
    struct snap_frame parent_stack[2];
    struct snap_frame child_stack[1];
    struct snap_task_awaiter by_parent;
    struct snap_task tasks[3];
};

static void family_init(struct family *f)
{
    f->parent_stack[0] = frame("inner", "a.py", 2);
    f->parent_stack[1] = frame("outer", "a.py", 9);
    f->child_stack[0] = frame("leaf", "b.py", 5);
    f->by_parent = (struct snap_task_awaiter){1, f->parent_stack, 2};
    f->tasks[0] = (struct snap_task){
        .id = 1, .name = str("parent"), .frames = f->parent_stack, .n_frames = 2};
    for (int i = 1; i <= 2; i++) {
        f->tasks[i] = (struct snap_task){.id = (uint64_t)i + 1,
                                         .name = str(i == 1 ? "c1" : "c2"),
                                         .frames = f->child_stack,
                                         .n_frames = 1,
                                         .awaited_by = &f->by_parent,
                                         .n_awaited_by = 1};
    }
}

/* The family drawn: a task awaiting nothing shows its own stack; the order is the lists'. */
static void test_tasktree_draws_like_pstree(void **state)
{
    (void)state;
    struct family fam;
    family_init(&fam);
    char *text = draw(fam.tasks, 3);
    assert_string_equal(text, "└── (T) parent\n"
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
        {.id = 1,
         .name = str("a"),
         .frames = unknown_line,
         .n_frames = 1,
         .awaited_by = &by_future,
         .n_awaited_by = 1},
        {.id = 2, .name = str("hidden"), .awaited_by = &by_unlisted, .n_awaited_by = 1},
        {.id = 3, .name = {NULL, 0}},
    };
    char *text = draw(tasks, 3);
    assert_string_equal(text, "└── (T) a\n"
                              "    └──  f c.py\n"
                              "└── (T) ?\n");
    free(text);
}

/* Tasks without names (before 3.8) are drawn by their coroutines, the outermost frame of their
 * stacks, as asyncio's repr names them, in the tree and in a cycle. */
static void test_tasktree_draws_a_task_without_name_by_its_coroutine(void **state)
{
    (void)state;
    struct snap_frame stack[] = {frame("leaf", "b.py", 5), frame("worker", "b.py", 9)};
    struct snap_task_awaiter by1 = {1, stack, 2};
    struct snap_task_awaiter by2 = {2, NULL, 0};
    struct snap_task tasks[] = {
        {.id = 1, .name = {NULL, 0}, .frames = stack, .n_frames = 2},
        {.id = 2,
         .name = {NULL, 0},
         .frames = stack,
         .n_frames = 1,
         .awaited_by = &by1,
         .n_awaited_by = 1},
    };
    char *text = draw(tasks, 2);
    assert_string_equal(text, "└── (T) coro=worker()\n"
                              "    └──  worker b.py:9\n"
                              "        └──  leaf b.py:5\n"
                              "            └── (T) coro=leaf()\n"
                              "                └──  leaf b.py:5\n");
    free(text);
    tasks[0].awaited_by = &by2;
    tasks[0].n_awaited_by = 1;
    text = draw(tasks, 2);
    assert_string_equal(text, "ERROR: await-graph contains cycles - cannot print a tree!\n\n"
                              "cycle: coro=worker() → coro=leaf() → coro=worker()\n");
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

static struct tasktree_node node(const struct tasktree *t, size_t i)
{
    struct tasktree_node n;
    assert_true(i < tasktree_size(t));
    tasktree_node(t, i, &n);
    return n;
}

static void assert_label(const struct tasktree_node *n, const char *label)
{
    assert_false(n->is_task);
    assert_int_equal(n->label.len, strlen(label));
    assert_memory_equal(n->label.ptr, label, strlen(label));
}

/* The nodes a front end draws itself are the same tree as the text: roots, coroutine frames
 * shared by the children, the listed tasks and the frames they stand for. */
static void test_tasktree_nodes_are_the_drawn_tree(void **state)
{
    (void)state;
    struct family fam;
    family_init(&fam);
    const struct snap_task *tasks = fam.tasks;
    struct pt_error err = {0};
    struct tasktree *t = tasktree_new(tasks, 3, &err);
    assert_non_null(t);
    struct strbuf cycles = {0};
    assert_int_equal(tasktree_write_cycles(&cycles, t, &err), 0);
    assert_int_equal(cycles.len, 0);
    size_t roots = 0;
    size_t root = 0;
    for (size_t i = 0; i < tasktree_size(t); i++) {
        struct tasktree_node n = node(t, i);
        if (n.root) {
            roots++;
            root = i;
        }
    }
    assert_int_equal(roots, 1);
    struct tasktree_node parent = node(t, root);
    assert_true(parent.is_task);
    assert_int_equal(parent.id, 1);
    assert_ptr_equal(parent.task, &tasks[0]);
    assert_int_equal(parent.n_kids, 1);
    struct tasktree_node outer = node(t, parent.kids[0]);
    assert_label(&outer, "outer a.py:9");
    assert_ptr_equal(outer.frame, &fam.parent_stack[1]);
    assert_int_equal(outer.n_kids, 1);
    struct tasktree_node inner = node(t, outer.kids[0]);
    assert_label(&inner, "inner a.py:2");
    assert_int_equal(inner.n_kids, 2);
    struct tasktree_node c1 = node(t, inner.kids[0]);
    struct tasktree_node c2 = node(t, inner.kids[1]);
    assert_ptr_equal(c1.task, &tasks[1]);
    assert_ptr_equal(c2.task, &tasks[2]);
    assert_false(c1.root);
    assert_int_equal(c1.n_kids, 1);
    struct tasktree_node leaf = node(t, c1.kids[0]);
    assert_label(&leaf, "leaf b.py:5");
    assert_ptr_equal(leaf.frame, &fam.child_stack[0]);
    assert_int_equal(leaf.n_kids, 0);
    tasktree_free(t);
    tasktree_free(NULL);
}

/* A node with one kid keeps it in itself; more go to an array that grows: five children
 * awaited through one frame are drawn, and listed as kids, in the order of the lists. */
static void test_tasktree_node_kids_grow_past_the_first(void **state)
{
    (void)state;
    struct snap_frame parent_stack[] = {frame("gather", "p.py", 3)};
    struct snap_frame child_stack[] = {frame("work", "c.py", 7)};
    struct snap_task_awaiter by_parent = {1, parent_stack, 1};
    static const char *names[] = {"p", "k1", "k2", "k3", "k4", "k5"};
    struct snap_task tasks[6];
    for (size_t i = 0; i < 6; i++) {
        tasks[i] = (struct snap_task){.id = i + 1,
                                      .name = str(names[i]),
                                      .frames = i ? child_stack : parent_stack,
                                      .n_frames = 1,
                                      .awaited_by = i ? &by_parent : NULL,
                                      .n_awaited_by = i ? 1 : 0};
    }
    struct pt_error err = {0};
    struct tasktree *t = tasktree_new(tasks, 6, &err);
    assert_non_null(t);
    size_t root = SIZE_MAX;
    for (size_t i = 0; i < tasktree_size(t); i++) {
        if (node(t, i).root) {
            root = i;
        }
    }
    assert_int_not_equal(root, SIZE_MAX);
    struct tasktree_node p = node(t, root);
    assert_int_equal(p.n_kids, 1);
    struct tasktree_node gather = node(t, p.kids[0]);
    assert_label(&gather, "gather p.py:3");
    assert_int_equal(gather.n_kids, 5);
    for (size_t k = 0; k < 5; k++) {
        struct tasktree_node kid = node(t, gather.kids[k]);
        assert_ptr_equal(kid.task, &tasks[k + 1]);
        assert_int_equal(kid.n_kids, 1);
        struct tasktree_node work = node(t, kid.kids[0]);
        assert_label(&work, "work c.py:7");
        assert_int_equal(work.n_kids, 0);
    }
    tasktree_free(t);
    char *text = draw(tasks, 6);
    assert_string_equal(text, "└── (T) p\n"
                              "    └──  gather p.py:3\n"
                              "        ├── (T) k1\n"
                              "        │   └──  work c.py:7\n"
                              "        ├── (T) k2\n"
                              "        │   └──  work c.py:7\n"
                              "        ├── (T) k3\n"
                              "        │   └──  work c.py:7\n"
                              "        ├── (T) k4\n"
                              "        │   └──  work c.py:7\n"
                              "        └── (T) k5\n"
                              "            └──  work c.py:7\n");
    free(text);
}

/* A ring of tasks: the cycles are written for the front end too, and no node is a root. */
static void test_tasktree_nodes_report_cycles(void **state)
{
    (void)state;
    struct snap_task_awaiter by1 = {1, NULL, 0};
    struct snap_task_awaiter by2 = {2, NULL, 0};
    struct snap_task tasks[] = {
        {.id = 1, .name = str("one"), .awaited_by = &by2, .n_awaited_by = 1},
        {.id = 2, .name = str("two"), .awaited_by = &by1, .n_awaited_by = 1},
    };
    struct pt_error err = {0};
    struct tasktree *t = tasktree_new(tasks, 2, &err);
    assert_non_null(t);
    struct strbuf sb = {0};
    assert_int_equal(tasktree_write_cycles(&sb, t, &err), 1);
    assert_non_null(strstr(sb.data, "cycle: one → two → one\n"));
    for (size_t i = 0; i < tasktree_size(t); i++) {
        assert_false(node(t, i).root);
    }
    strbuf_free(&sb);
    tasktree_free(t);
}

static void test_snapshot_write_json_lists_tasks_and_awaiters(void **state)
{
    (void)state;
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    struct snap_frame stack[] = {frame("main", "m.py", 3)};
    struct snap_task_awaiter aw[] = {{5, stack, 1}, {0, NULL, 0}};
    struct snap_task task = {.id = 6,
                             .name = str("Task-2"),
                             .thread = 42,
                             .state = SNAP_TASK_PENDING,
                             .awaited_by = aw,
                             .n_awaited_by = 2};
    struct snap_interp interps[2] = {{.id = 0, .tasks_present = true, .tasks = &task, .n_tasks = 1},
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

static void test_snapshot_write_text_draws_the_task_tree_after_gc(void **state)
{
    (void)state;
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    struct snap_frame stack[] = {frame("main", "m.py", 3)};
    struct snap_task task = {.id = 6, .name = str("Task-1"), .frames = stack, .n_frames = 1};
    struct snap_interp interps[2] = {{.id = 0, .tasks_present = true, .tasks = &task, .n_tasks = 1},
                                     {.id = 1, .tasks_present = true}};
    s->interps = interps;
    s->n_interps = 2;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(snapshot_write_text(s, f, NULL, &err), 0);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "\nAsyncio tasks of interpreter 0 (1):\n"
                                "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 (T) Task-1\n"
                                "    \xe2\x94\x94\xe2\x94\x80\xe2\x94\x80  main m.py:3\n"));
    /* An interpreter without tasks says nothing of them. */
    assert_null(strstr(buf, "Asyncio tasks of interpreter 1"));
    free(buf);
    s->interps = NULL;
    s->n_interps = 0;
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasktree_draws_like_pstree),
        cmocka_unit_test(test_tasktree_follows_pstree_for_unknowns_and_futures),
        cmocka_unit_test(test_tasktree_draws_a_task_without_name_by_its_coroutine),
        cmocka_unit_test(test_tasktree_reports_cycles_instead_of_looping),
        cmocka_unit_test(test_tasktree_draws_a_deep_chain),
        cmocka_unit_test(test_tasktree_nodes_are_the_drawn_tree),
        cmocka_unit_test(test_tasktree_node_kids_grow_past_the_first),
        cmocka_unit_test(test_tasktree_nodes_report_cycles),
        cmocka_unit_test(test_snapshot_write_json_lists_tasks_and_awaiters),
        cmocka_unit_test(test_snapshot_write_text_draws_the_task_tree_after_gc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
