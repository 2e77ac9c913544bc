/* test_sampler_heat: the source heat view's counts (sampler_heat.c through the window), over
 * synthetic compact samples whose code objects carry a real (3.8-style) line table, and
 * snapshots; and the annotated source written of them (heat_text.c). */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/layout/layout.h"
#include "core/pyobj/code.h"
#include "core/sampler/sampler.h"
#include "core/sampler/sampler_heat.h"
#include "core/sampler/sampler_window.h"
#include "core/sampler/sampler_window_int.h"
#include "core/walk/sample.h"
#include "core/write/heat_text.h"
#include "sampler_fixture.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"


/* co_lnotab of f (first line 10): bytes 0-1 on line 10, 2-3 on 11, 4 on 12. */
static uint8_t LNOTAB[] = {2, 1, 2, 1};

static struct code_info code(uint64_t serial, const char *qualname, int first_line)
{
    struct code_info c = code_entry(serial, qualname, first_line);
    c.linetable = LNOTAB;
    c.linetable_len = sizeof LNOTAB;
    return c;
}

struct at {
    const struct code_info *code;
    uint32_t offset;
};

/* One sample of thread 7 whose stack is STACK[0..N), innermost first. */
static void add(struct sampler_window *w, const struct at *stack, size_t n, double now)
{
    struct sample_frame frames[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        frames[i] = (struct sample_frame){stack[i].code, stack[i].code->serial, stack[i].offset,
                                          SNAP_FRAME_PYTHON, SNAP_UNREADABLE_NONE};
    }
    struct sample_thread t = {.tid = 7, .thread_id = 70, .gil = SNAP_YES, .on_cpu = SNAP_UNKNOWN,
                              .in_gc = SNAP_NO, .frames = frames, .n_frames = n};
    struct sample smp = {.threads = &t, .n_threads = 1, .warning = ""};
    sampler_window_add_sample(w, &smp, NULL, now);
}

static struct sampler_heat *heat_at(struct sampler_window *w, double now)
{
    return heat_stats(w->heat, sampler_window_bucket_number(w, now),
                      sampler_window_span(w, now), SAMPLER_MODE_WALL, NULL, NULL, NULL);
}

static const struct sampler_heat_line *line(const struct sampler_heat *h, int n)
{
    return heat_find_line(h, n);
}

static void test_heat_counts_lines_own_and_total_once_per_stack(void **state)
{
    (void)state;
    struct py_layout L = {0};
    L.linetable = LINETABLE_LNOTAB;
    struct sampler_window w;
    assert_int_equal(sampler_window_init(&w, 10.0, NULL), 0);
    struct code_info f = code(1, "f", 10);
    struct code_info g = code(2, "g", 30);
    struct code_info main_code = code(3, "main", 1);
    const struct at before[] = {{&f, 0}, {&main_code, 0}};
    add(&w, before, 2, 1.0); /* before the view asked: not counted there */
    assert_int_equal(sampler_window_set_heat(&w, "f", 1, FILE_NAME, strlen(FILE_NAME), 10, &L,
                                             1.5, NULL),
                     0);
    const struct at on10[] = {{&f, 0}, {&main_code, 0}};
    const struct at rec[] = {{&f, 4}, {&f, 2}, {&f, 4}, {&main_code, 0}};
    const struct at under[] = {{&g, 0}, {&f, 4}, {&main_code, 0}};
    const struct at other[] = {{&g, 0}, {&main_code, 0}};
    add(&w, on10, 2, 2.0);
    add(&w, on10, 2, 2.1);
    add(&w, rec, 4, 2.2);
    add(&w, under, 3, 2.3);
    add(&w, other, 2, 2.4);
    struct sampler_heat *h = heat_at(&w, 2.5);
    assert_non_null(h);
    assert_int_equal(h->thread_samples, 5);
    assert_int_equal(h->own, 3);
    assert_int_equal(h->total, 4);
    assert_int_equal(h->n_lines, 3);
    assert_int_equal(line(h, 10)->own, 2);
    assert_int_equal(line(h, 10)->total, 2);
    /* The recursive stack is on 11 and 12 (twice): each counted once in total. */
    assert_int_equal(line(h, 11)->own, 0);
    assert_int_equal(line(h, 11)->total, 1);
    assert_int_equal(line(h, 12)->own, 1);
    assert_int_equal(line(h, 12)->total, 2);
    /* Own shares add up to the function's. */
    uint64_t sum = 0;
    for (size_t i = 0; i < h->n_lines; i++) {
        sum += h->lines[i].own;
    }
    assert_int_equal(sum, h->own);
    assert_memory_equal(h->function.ptr, "f", 1);
    assert_int_equal(h->first_line, 10);
    assert_false(h->instructions); /* no opcode table asked */
    free(h);
    sampler_window_free(&w);
}

static void test_heat_slides_with_the_window_and_starts_afresh(void **state)
{
    (void)state;
    struct py_layout L = {0};
    L.linetable = LINETABLE_LNOTAB;
    struct sampler_window w;
    assert_int_equal(sampler_window_init(&w, 1.0, NULL), 0);
    struct code_info f = code(1, "f", 10);
    const struct at on11[] = {{&f, 2}};
    const struct at on12[] = {{&f, 4}};
    assert_int_equal(sampler_window_set_heat(&w, "f", 1, FILE_NAME, strlen(FILE_NAME), 10, &L,
                                             0.0, NULL),
                     0);
    add(&w, on11, 1, 5.0);
    add(&w, on12, 1, 6.5);
    struct sampler_heat *h = heat_at(&w, 6.6);
    assert_int_equal(h->thread_samples, 1); /* the first slid out */
    assert_null(line(h, 11));
    assert_int_equal(line(h, 12)->own, 1);
    free(h);
    /* A reset forgets; another function asked for counts afresh, its own lines only. */
    sampler_window_clear(&w);
    h = heat_at(&w, 6.7);
    assert_int_equal(h->thread_samples, 0);
    assert_int_equal(h->n_lines, 0);
    free(h);
    struct code_info g = code(2, "g", 10);
    assert_int_equal(sampler_window_set_heat(&w, "g", 1, FILE_NAME, strlen(FILE_NAME), 10, &L,
                                             6.8, NULL),
                     0);
    const struct at both[] = {{&f, 2}, {&g, 4}};
    add(&w, both, 2, 6.9);
    h = heat_at(&w, 7.0);
    assert_int_equal(h->n_lines, 1);
    assert_int_equal(line(h, 12)->own, 0);
    assert_int_equal(line(h, 12)->total, 1);
    free(h);
    /* Stopped: nothing is counted, nothing kept. */
    assert_int_equal(sampler_window_set_heat(&w, NULL, 0, NULL, 0, 0, NULL, 7.1, NULL), 0);
    assert_null(w.heat);
    add(&w, both, 2, 7.2);
    sampler_window_free(&w);
}

static struct snapshot *snap_at_lines(const int *lines, size_t n)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    memset(&s->interps[0], 0, sizeof s->interps[0]);
    s->n_interps = 1;
    struct snap_thread *t = snapshot_alloc(s, sizeof *t);
    memset(t, 0, sizeof *t);
    t->tid = 7;
    t->frames = snapshot_alloc_array(s, n, sizeof *t->frames);
    t->n_frames = n;
    for (size_t i = 0; i < n; i++) {
        struct snap_frame *f = &t->frames[i];
        memset(f, 0, sizeof *f);
        f->function = (struct snap_str){"f", 1};
        f->file = (struct snap_str){FILE_NAME, strlen(FILE_NAME)};
        f->first_line = 10;
        f->line = lines[i];
    }
    s->interps[0].threads = t;
    s->interps[0].n_threads = 1;
    return s;
}

/* Lines of a fake source: "line N" for 1..40. */
static const char *fake_line(void *ctx, const char *file, size_t file_len, int n, size_t *len)
{
    static char buf[32];
    (void)ctx;
    (void)file;
    (void)file_len;
    if (n < 1 || n > 40) {
        return NULL;
    }
    if (n == 10) {
        snprintf(buf, sizeof buf, "def f():");
    } else if (n == 14) {
        snprintf(buf, sizeof buf, "x = 1");
    } else {
        snprintf(buf, sizeof buf, "    body %d", n);
    }
    *len = strlen(buf);
    return buf;
}

static void test_heat_from_snapshots_and_its_annotated_source(void **state)
{
    (void)state;
    struct sampler_opts o = {.rate_hz = 100, .window_s = 10};
    struct sampler *s = sampler_new(NULL, NULL, &o, NULL);
    assert_non_null(s);
    assert_null(sampler_heat(s, 1.0));
    assert_int_equal(sampler_set_heat(s, "f", 1, FILE_NAME, strlen(FILE_NAME), 10, 1.0, NULL), 0);
    const int a[] = {12};
    const int b[] = {11, 12};
    sampler_add(s, snap_at_lines(a, 1), 2.0);
    sampler_add(s, snap_at_lines(a, 1), 2.1);
    sampler_add(s, snap_at_lines(b, 2), 2.2);
    struct sampler_heat *h = sampler_heat(s, 2.3);
    assert_non_null(h);
    assert_int_equal(h->thread_samples, 3);
    assert_int_equal(line(h, 12)->own, 2);
    assert_int_equal(line(h, 12)->total, 3);
    assert_int_equal(line(h, 11)->own, 1);
    assert_true(h->span_s > 0.2 && h->span_s <= 1.31);
    /* The body runs from the def to the line before the next statement at its indentation. */
    struct snapshot_source src = {fake_line, NULL};
    struct heat_range r = heat_source_range(h, &src);
    assert_true(r.readable);
    assert_int_equal(r.first, 10);
    assert_int_equal(r.last, 13);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(heat_write_text(h, &src, "Process 7", out, NULL), 0);
    fclose(out);
    assert_non_null(strstr(text, "Source heat of f (\"/srv/app/worker.py\", first line 10)"));
    assert_non_null(strstr(text, "     12   66.7   100.0      body 12\n"));
    assert_non_null(strstr(text, "     13                     body 13\n"));
    assert_null(strstr(text, "x = 1"));
    free(text);
    /* A module's code: the whole file. */
    struct sampler_heat module = *h;
    module.function = (struct snap_str){"<module>", 8};
    module.first_line = 1;
    r = heat_source_range(&module, &src);
    assert_int_equal(r.first, 1);
    assert_int_equal(r.last, 40);
    /* Unreadable source: the counted lines alone. */
    r = heat_source_range(h, NULL);
    assert_false(r.readable);
    assert_int_equal(r.first, 11);
    assert_int_equal(r.last, 12);
    free(h);
    sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heat_counts_lines_own_and_total_once_per_stack),
        cmocka_unit_test(test_heat_slides_with_the_window_and_starts_afresh),
        cmocka_unit_test(test_heat_from_snapshots_and_its_annotated_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
