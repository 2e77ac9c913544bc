/* test_sampler: the statistics over synthetic snapshots and compact samples. */
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

#include "core/pyobj/code.h"
#include "core/util/error.h"
#include "core/walk/sample.h"
#include "core/sampler/sampler.h"
#include "core/sampler/sampler_window.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "sampler_fixture.h"

static void test_sampler_gil_share_is_of_the_threads_own_samples(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10);
    for (int i = 0; i < 4; i++) {
        struct snapshot *snap = snap_threads(2);
        thread_of(snap, 0)->gil = i < 3 ? SNAP_YES : SNAP_NO;
        thread_of(snap, 0)->on_cpu = i == 0 ? SNAP_YES : SNAP_UNKNOWN;
        thread_of(snap, 0)->in_gc = i == 1 ? SNAP_YES : SNAP_NO;
        /* The second thread is seen in half the samples only, holding the GIL in one. */
        if (i % 2 == 1) {
            snap->interps[0].n_threads = 1;
        } else {
            thread_of(snap, 1)->gil = i == 0 ? SNAP_YES : SNAP_UNKNOWN;
        }
        sampler_add(s, snap, 1.0 + i * 0.01);
    }
    struct sampler_stats *st = sampler_stats(s, 1.04);
    assert_non_null(st);
    assert_int_equal(st->samples, 4);
    assert_int_equal(st->errors, 0);
    assert_int_equal(st->n_threads, 2);
    assert_int_equal(st->thread_samples, 6);
    assert_int_equal(st->gc_samples, 1);
    const struct sampler_thread *t0 = sampler_stats_find_thread(st, 0, 100, 1000);
    const struct sampler_thread *t1 = sampler_stats_find_thread(st, 0, 101, 1001);
    assert_non_null(t0);
    assert_non_null(t1);
    assert_ptr_equal(t0, &st->threads[0]);
    assert_int_equal(t0->samples, 4);
    assert_true(t0->gil_pct == 75.0);
    /* Of the samples whose CPU state was read (one, on a CPU): unknown is neither yes nor no. */
    assert_true(t0->cpu_pct == 100.0);
    assert_true(t0->gc_pct == 25.0);
    assert_int_equal(t0->gil_samples, 3);
    assert_int_equal(t1->samples, 2);
    assert_true(t1->gil_pct == 50.0);
    assert_null(sampler_stats_find_thread(st, 1, 100, 1000));
    assert_null(sampler_stats_find_thread(st, 0, 100, 1001));
    sampler_stats_free(st);
    sampler_free(s);
}

/* Four threads of each sample: on a CPU without the GIL, holding the GIL off CPU, handling an
 * exception asleep, asleep; each innermost in a function of its own (a, b, c, d). */
static struct snapshot *snap_modes(void)
{
    struct snapshot *snap = snap_threads(4);
    static const char *const names[4] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; i++) {
        struct snap_thread *t = thread_of(snap, i);
        t->gil = i == 1 ? SNAP_YES : SNAP_NO;
        t->on_cpu = i == 0 ? SNAP_YES : SNAP_NO;
        t->has_exception = i == 2 ? SNAP_YES : SNAP_NO;
        t->frames = snapshot_alloc(snap, sizeof *t->frames);
        t->frames[0] = (struct snap_frame){.function = snapshot_strdup(snap, names[i], 1),
                                           .name = snapshot_strdup(snap, names[i], 1),
                                           .file = snapshot_strdup(snap, "m.py", 4),
                                           .first_line = (int)i + 1,
                                           .kind = SNAP_FRAME_PYTHON};
        t->n_frames = 1;
    }
    return snap;
}

static void test_sampler_mode_counts_only_matching_thread_samples(void **state)
{
    (void)state;
    /* Which thread (index) each mode counts: wall all four. */
    static const int counted[SAMPLER_MODE_COUNT] = {-1, 0, 1, 2};
    for (int m = 0; m < SAMPLER_MODE_COUNT; m++) {
        struct sampler *s = new_sampler(10);
        sampler_set_mode(s, (enum sampler_mode)m);
        assert_int_equal(sampler_get_mode(s), m);
        for (int i = 0; i < 3; i++) {
            sampler_add(s, snap_modes(), 1.0 + i * 0.01);
        }
        struct sampler_stats *st = sampler_stats(s, 1.03);
        assert_non_null(st);
        assert_int_equal(st->mode, m);
        assert_int_equal(st->samples, 3);
        assert_int_equal(st->thread_samples, counted[m] < 0 ? 12 : 3);
        /* Every thread stays listed, seen in each sample; only matching samples count. */
        assert_int_equal(st->n_threads, 4);
        for (size_t i = 0; i < 4; i++) {
            const struct sampler_thread *t = &st->threads[i];
            bool counts = counted[m] < 0 || counted[m] == (int)i;
            assert_int_equal(t->seen, 3);
            assert_int_equal(t->samples, counts ? 3 : 0);
            assert_true(counts ? !isnan(t->gil_pct) : isnan(t->gil_pct));
        }
        assert_int_equal(st->n_functions, counted[m] < 0 ? 4 : 1);
        if (counted[m] >= 0) {
            char want[2] = {(char)('a' + counted[m]), '\0'};
            assert_int_equal(st->functions[0].function.len, 1);
            assert_memory_equal(st->functions[0].function.ptr, want, 1);
            assert_int_equal(st->functions[0].own, 3);
        }
        /* The CPU share of own samples: the states were read with these snapshots. */
        for (size_t i = 0; i < st->n_functions; i++) {
            const struct sampler_function *f = &st->functions[i];
            assert_int_equal(f->own_state, f->own);
            assert_int_equal(f->own_on_cpu, f->function.ptr[0] == 'a' ? f->own : 0);
        }
        sampler_stats_free(st);
        sampler_free(s);
    }
}

static void test_sampler_mode_change_starts_afresh_and_names_parse(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10);
    sampler_add(s, snap_modes(), 1.0);
    sampler_set_mode(s, SAMPLER_MODE_GIL);
    struct sampler_stats *st = sampler_stats(s, 1.01);
    assert_non_null(st);
    assert_int_equal(st->samples, 0);
    assert_int_equal(st->thread_samples, 0);
    sampler_stats_free(st);
    sampler_free(s);
    for (int m = 0; m < SAMPLER_MODE_COUNT; m++) {
        assert_int_equal(sampler_mode_parse(sampler_mode_name((enum sampler_mode)m)), m);
    }
    assert_string_equal(sampler_mode_name(SAMPLER_MODE_EXCEPTION), "exception");
    assert_int_equal(sampler_mode_parse("CPU"), -1);
    assert_int_equal(sampler_mode_parse(""), -1);
}

/* A compact sample whose thread's stack was not read (--active-only) keeps the thread known
 * and counts nothing of it. */
static void test_sampler_thread_not_read_is_seen_but_not_counted(void **state)
{
    (void)state;
    struct sampler_window w;
    assert_int_equal(sampler_window_init(&w, 1.0, NULL), 0);
    struct sample_thread t[2] = {
        {.tid = 7, .thread_id = 70, .gil = SNAP_YES, .on_cpu = SNAP_UNKNOWN, .in_gc = SNAP_NO},
        {.tid = 8, .thread_id = 80, .gil = SNAP_NO, .on_cpu = SNAP_UNKNOWN, .in_gc = SNAP_NO,
         .not_read = true},
    };
    struct sample smp = {.threads = t, .n_threads = 2, .warning = ""};
    enum snap_bool on_cpu[2] = {SNAP_YES, SNAP_UNKNOWN};
    sampler_window_add_sample(&w, &smp, on_cpu, 1.0);
    struct sampler_window_view v = {.only = SAMPLER_TABLE_NONE};
    assert_true(sampler_window_view(&w, 1.0, &v));
    assert_int_equal(v.counts.thread_samples, 1);
    uint32_t ti = sampler_table_find_thread(&w.table, 0, 8, 80);
    assert_int_not_equal(ti, SAMPLER_TABLE_NONE);
    assert_int_equal(v.threads[ti].seen, 1);
    assert_int_equal(v.threads[ti].samples, 0);
    ti = sampler_table_find_thread(&w.table, 0, 7, 70);
    assert_int_equal(v.threads[ti].samples, 1);
    assert_int_equal(v.threads[ti].cpu, 1);
    sampler_window_view_free(&v);
    sampler_window_free(&w);
}

static void test_sampler_gc_share_is_unknown_while_who_collects_is(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10);
    for (int i = 0; i < 4; i++) {
        struct snapshot *snap = snap_threads(2);
        /* A collection runs in the last two samples; which thread runs it is unknown. */
        thread_of(snap, 0)->in_gc = i < 2 ? SNAP_NO : SNAP_UNKNOWN;
        thread_of(snap, 1)->in_gc = i < 2 ? SNAP_NO : SNAP_UNKNOWN;
        sampler_add(s, snap, 1.0 + i * 0.01);
    }
    struct sampler_stats *st = sampler_stats(s, 1.04);
    assert_non_null(st);
    assert_int_equal(st->gc_samples, 2);
    assert_true(isnan(sampler_stats_find_thread(st, 0, 100, 1000)->gc_pct));
    assert_true(isnan(sampler_stats_find_thread(st, 0, 101, 1001)->gc_pct));
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_counts_a_recursive_function_once_per_stack(void **state)
{
    (void)state;
    static const char *const deep[] = {"f", "g", "f", "f", "h"};
    static const char *const shallow[] = {"g"};
    struct sampler *s = new_sampler(10);
    for (int i = 0; i < 3; i++) {
        struct snapshot *snap = snap_threads(2);
        set_stack(snap, thread_of(snap, 0), deep, 5);
        set_stack(snap, thread_of(snap, 1), shallow, 1);
        sampler_add(s, snap, 5.0 + i * 0.1);
    }
    struct sampler_stats *st = sampler_stats(s, 5.3);
    assert_non_null(st);
    assert_int_equal(st->thread_samples, 6);
    assert_int_equal(st->n_functions, 3);
    const struct sampler_function *f = find_function(st, "f");
    const struct sampler_function *g = find_function(st, "g");
    const struct sampler_function *h = find_function(st, "h");
    assert_non_null(f);
    assert_non_null(g);
    assert_non_null(h);
    assert_int_equal(f->own, 3);
    assert_int_equal(f->total, 3);
    assert_int_equal(g->own, 3);
    assert_int_equal(g->total, 6);
    assert_int_equal(h->own, 0);
    assert_int_equal(h->total, 3);
    assert_int_equal(f->first_line, 'f');
    assert_int_equal(f->file.len, strlen(FILE_NAME));
    assert_memory_equal(f->file.ptr, FILE_NAME, f->file.len);
    /* Most own first, then most total. */
    assert_ptr_equal(g, &st->functions[0]);
    assert_ptr_equal(f, &st->functions[1]);
    assert_ptr_equal(h, &st->functions[2]);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_keeps_functions_of_one_name_in_two_places_apart(void **state)
{
    (void)state;
    static const char *const lambdas[] = {"<lambda>", "<lambda>"};
    struct sampler *s = new_sampler(10);
    struct snapshot *snap = snap_threads(1);
    set_stack(snap, thread_of(snap, 0), lambdas, 2);
    thread_of(snap, 0)->frames[1].first_line = 99;
    sampler_add(s, snap, 1);
    struct sampler_stats *st = sampler_stats(s, 1);
    assert_non_null(st);
    assert_int_equal(st->n_functions, 2);
    assert_int_equal(st->functions[0].own, 1);
    assert_int_equal(st->functions[1].own, 0);
    assert_int_equal(st->functions[1].total, 1);
    assert_int_equal(st->functions[1].first_line, 99);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_skips_shim_frames_and_counts_unnamed_ones_as_unreadable(void **state)
{
    (void)state;
    static const char *const stack[] = {"shim", "a", "b"};
    struct sampler *s = new_sampler(10);
    struct snapshot *snap = snap_threads(1);
    struct snap_thread *t = thread_of(snap, 0);
    set_stack(snap, t, stack, 3);
    t->frames[0].kind = SNAP_FRAME_SHIM;
    t->frames[2].function = str(NULL);
    t->frames[2].file = str(NULL);
    t->frames[2].first_line = -1;
    t->name = str(NULL);
    sampler_add(s, snap, 1);
    struct sampler_stats *st = sampler_stats(s, 1);
    assert_non_null(st);
    assert_int_equal(st->n_functions, 2);
    assert_null(find_function(st, "shim"));
    assert_int_equal(find_function(st, "a")->own, 1);
    /* A frame with neither name nor file was not read: never a function without a name. */
    const struct sampler_function *unknown = &st->functions[1];
    static const char label[] = "<unreadable frame: code object unreadable>";
    assert_non_null(unknown->function.ptr);
    assert_int_equal(unknown->function.len, strlen(label));
    assert_memory_equal(unknown->function.ptr, label, strlen(label));
    assert_int_equal(unknown->unreadable, SNAP_UNREADABLE_CODE);
    assert_null(unknown->file.ptr);
    assert_int_equal(unknown->first_line, -1);
    assert_int_equal(unknown->total, 1);
    assert_null(st->threads[0].name.ptr);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_counts_errors_and_failed_samples(void **state)
{
    (void)state;
    struct pt_error err = {0};
    struct sampler *s = new_sampler(10);
    sampler_add_error(s, 1.0);
    assert_int_equal(sampler_sample(s, 1.1, &err), -1); /* no target */
    assert_int_equal(err.code, PT_E_IO);
    assert_int_equal(sampler_sample(s, 1.2, NULL), -1);
    sampler_add(s, snap_threads(1), 1.3);
    struct sampler_stats *st = sampler_stats(s, 2.0);
    assert_non_null(st);
    assert_int_equal(st->errors, 3);
    assert_int_equal(st->samples, 1);
    assert_true(near(st->window_s, 1.0));
    assert_true(near(st->achieved_hz, 1.0));
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_reset_forgets_counts_but_keeps_the_latest_snapshot(void **state)
{
    (void)state;
    static const char *const stack[] = {"a"};
    struct sampler *s = new_sampler(10);
    assert_null(sampler_latest(s));
    struct snapshot *snap = snap_threads(3);
    set_stack(snap, thread_of(snap, 0), stack, 1);
    sampler_add(s, snap, 1);
    sampler_add_error(s, 1.1);
    assert_ptr_equal(sampler_latest(s), snap);
    sampler_reset(s);
    struct sampler_stats *st = sampler_stats(s, 1.2);
    assert_non_null(st);
    assert_int_equal(st->samples, 0);
    assert_int_equal(st->errors, 0);
    assert_int_equal(st->thread_samples, 0);
    assert_int_equal(st->n_threads, 0);
    assert_int_equal(st->n_functions, 0);
    assert_true(st->window_s == 0 && st->achieved_hz == 0);
    sampler_stats_free(st);
    assert_ptr_equal(sampler_latest(s), snap);
    /* Counting starts afresh. */
    sampler_add(s, snap_threads(1), 2);
    st = sampler_stats(s, 2.5);
    assert_non_null(st);
    assert_int_equal(st->samples, 1);
    assert_true(near(st->window_s, 0.5));
    sampler_stats_free(st);
    struct snapshot *taken = sampler_take_latest(s);
    assert_non_null(taken);
    assert_null(sampler_latest(s));
    snapshot_free(taken);
    sampler_free(s);
}

/* One thread whose stack holds N distinct functions. */
static struct snapshot *snap_many_functions(size_t n, size_t first)
{
    struct snapshot *s = snap_threads(1);
    struct snap_thread *t = thread_of(s, 0);
    t->frames = snapshot_alloc_array(s, n, sizeof *t->frames);
    assert_non_null(t->frames);
    t->n_frames = n;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        int len = snprintf(name, sizeof name, "fn_%zu", first + i);
        t->frames[i].function = snapshot_strdup(s, name, (size_t)len);
        t->frames[i].file = str(FILE_NAME);
        t->frames[i].first_line = 1;
    }
    return s;
}

static void test_sampler_caps_distinct_functions_and_says_so(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(1.0);
    sampler_add(s, snap_many_functions(SAMPLER_MAX_FUNCTIONS + 100, 0), 10.0);
    struct sampler_stats *st = sampler_stats(s, 10.0);
    assert_non_null(st);
    assert_int_equal(st->n_functions, SAMPLER_MAX_FUNCTIONS);
    assert_true(st->functions_truncated);
    assert_false(st->threads_truncated);
    assert_int_equal(st->functions[0].own, 1);
    assert_int_equal(st->thread_samples, 1);
    sampler_stats_free(st);
    /* Once those have left the window, new functions fit again. */
    sampler_add(s, snap_many_functions(1000, 1000000), 12.0);
    st = sampler_stats(s, 12.0);
    assert_non_null(st);
    assert_int_equal(st->n_functions, 1000);
    assert_false(st->functions_truncated);
    assert_non_null(find_function(st, "fn_1000000"));
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_caps_distinct_threads_and_says_so(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10);
    enum { BATCH = 4096 };
    size_t rounds = SAMPLER_MAX_THREADS / BATCH + 1;
    for (size_t r = 0; r < rounds; r++) {
        struct snapshot *snap = snap_threads(BATCH);
        for (size_t k = 0; k < BATCH; k++) {
            thread_of(snap, k)->tid = (pid_t)(1 + r * BATCH + k);
        }
        sampler_add(s, snap, 1.0 + (double)r * 0.001);
    }
    struct sampler_stats *st = sampler_stats(s, 2.0);
    assert_non_null(st);
    assert_int_equal(st->n_threads, SAMPLER_MAX_THREADS);
    assert_int_equal(st->thread_samples, SAMPLER_MAX_THREADS);
    assert_true(st->threads_truncated);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_stats_thread_counts_that_thread_only(void **state)
{
    (void)state;
    static const char *const a[] = {"a", "shared"};
    static const char *const b[] = {"b", "shared"};
    struct sampler *s = new_sampler(10);
    for (int i = 0; i < 4; i++) {
        struct snapshot *snap = snap_threads(2);
        set_stack(snap, thread_of(snap, 0), a, 2);
        set_stack(snap, thread_of(snap, 1), b, 2);
        sampler_add(s, snap, 1 + i * 0.1);
    }
    struct sampler_thread_key key = {.interp_id = 0, .tid = 101, .thread_id = 1001};
    struct sampler_stats *st = sampler_stats_thread(s, 1.5, &key);
    assert_non_null(st);
    assert_int_equal(st->thread_samples, 4);
    assert_int_equal(st->n_threads, 2);
    assert_int_equal(st->n_functions, 2);
    assert_int_equal(find_function(st, "b")->own, 4);
    assert_int_equal(find_function(st, "shared")->total, 4);
    assert_null(find_function(st, "a"));
    sampler_stats_free(st);
    key.tid = 999;
    st = sampler_stats_thread(s, 1.5, &key);
    assert_non_null(st);
    assert_int_equal(st->thread_samples, 0);
    assert_int_equal(st->n_functions, 0);
    assert_int_equal(st->n_threads, 2);
    sampler_stats_free(st);
    st = sampler_stats(s, 1.5);
    assert_non_null(st);
    assert_int_equal(find_function(st, "shared")->total, 8);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_keeps_the_last_name_a_thread_had(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10);
    const char *names[] = {"Thread-1", "worker", NULL};
    for (int i = 0; i < 3; i++) {
        struct snapshot *snap = snap_threads(1);
        thread_of(snap, 0)->name = str(names[i]);
        sampler_add(s, snap, 1 + i);
    }
    struct sampler_stats *st = sampler_stats(s, 3);
    assert_non_null(st);
    assert_int_equal(st->threads[0].samples, 3);
    assert_int_equal(st->threads[0].name.len, 6);
    assert_memory_equal(st->threads[0].name.ptr, "worker", 6);
    sampler_stats_free(st);
    sampler_free(s);
}

/* ---- compact samples: frames as code identities ---- */

static struct code_info code(uint64_t serial, const char *qualname, int first_line)
{
    return code_entry(serial, qualname, first_line);
}

/* Adds one sample of one thread (tid 7) whose stack is CODES[0..N), innermost first. */
static void add_compact(struct sampler_window *w, const struct code_info *const *codes, size_t n,
                        double now)
{
    struct sample_frame frames[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        frames[i] = (struct sample_frame){codes[i], codes[i] != NULL ? codes[i]->serial : 0, 0,
                                          SNAP_FRAME_PYTHON, SNAP_UNREADABLE_NONE};
    }
    struct sample_thread t = {.tid = 7,
                              .thread_id = 70,
                              .gil = SNAP_YES,
                              .on_cpu = SNAP_UNKNOWN,
                              .in_gc = SNAP_NO,
                              .frames = frames,
                              .n_frames = n};
    struct sample smp = {.threads = &t, .n_threads = 1, .warning = ""};
    sampler_window_add_sample(w, &smp, NULL, now);
}

/* The own and total counts of the function (QUALNAME, first line LINE) in W at NOW. */
static void func_counts(const struct sampler_window *w, double now, const char *qualname, int line,
                        uint64_t *own, uint64_t *total)
{
    struct sampler_window_view v = {.only = SAMPLER_TABLE_NONE};
    assert_true(sampler_window_view(w, now, &v));
    *own = *total = 0;
    for (uint32_t i = 0; i < w->table.funcs.n; i++) {
        const struct sampler_table_func *f = sampler_table_func_at(&w->table, i);
        if (f->used && f->first_line == line && f->function_len == strlen(qualname) &&
            memcmp(f->function, qualname, f->function_len) == 0) {
            *own += v.funcs[i].own;
            *total += v.funcs[i].total;
        }
    }
    sampler_window_view_free(&v);
}

static void test_sampler_counts_code_objects_of_one_function_as_one(void **state)
{
    (void)state;
    struct sampler_window w;
    assert_int_equal(sampler_window_init(&w, 1.0, NULL), 0);
    /* Two code objects (a cache refilled after a generation change) of one function, and a
     * function of the same name that starts elsewhere. */
    struct code_info f1 = code(1, "Worker.run", 10);
    struct code_info f2 = code(2, "Worker.run", 10);
    struct code_info other = code(3, "Worker.run", 50);
    const struct code_info *a[] = {&f1};
    const struct code_info *b[] = {&f2};
    const struct code_info *c[] = {&other};
    add_compact(&w, a, 1, 10.0);
    add_compact(&w, b, 1, 10.001);
    add_compact(&w, c, 1, 10.002);
    uint64_t own;
    uint64_t total;
    func_counts(&w, 10.003, "Worker.run", 10, &own, &total);
    assert_int_equal(own, 2);
    assert_int_equal(total, 2);
    func_counts(&w, 10.003, "Worker.run", 50, &own, &total);
    assert_int_equal(own, 1);
    sampler_window_free(&w);
}

static void test_sampler_hint_never_serves_a_replaced_code_object(void **state)
{
    (void)state;
    struct sampler_window w;
    assert_int_equal(sampler_window_init(&w, 1.0, NULL), 0);
    /* The same depth holds first f, then g (a new code object: a new serial), then f again. */
    struct code_info main_code = code(1, "main", 1);
    struct code_info f = code(2, "f", 20);
    struct code_info g = code(3, "g", 30);
    const struct code_info *s1[] = {&f, &main_code};
    const struct code_info *s2[] = {&g, &main_code};
    for (int i = 0; i < 5; i++) {
        add_compact(&w, s1, 2, 20.0 + i * 0.001);
    }
    for (int i = 0; i < 3; i++) {
        add_compact(&w, s2, 2, 20.01 + i * 0.001);
    }
    add_compact(&w, s1, 2, 20.02);
    uint64_t own;
    uint64_t total;
    func_counts(&w, 20.03, "f", 20, &own, &total);
    assert_int_equal(own, 6);
    func_counts(&w, 20.03, "g", 30, &own, &total);
    assert_int_equal(own, 3);
    func_counts(&w, 20.03, "main", 1, &own, &total);
    assert_int_equal(own, 0);
    assert_int_equal(total, 9);
    sampler_window_free(&w);
}

static void test_sampler_counts_compact_and_snapshot_samples_alike(void **state)
{
    (void)state;
    struct sampler_window compact;
    struct sampler_window full;
    assert_int_equal(sampler_window_init(&compact, 1.0, NULL), 0);
    assert_int_equal(sampler_window_init(&full, 1.0, NULL), 0);
    struct code_info main_code = code(1, "main", 1);
    struct code_info rec = code(2, "descend", 5);
    /* descend recursing three deep, then main; and an unknown frame on top. */
    const struct code_info *stack[] = {NULL, &rec, &rec, &rec, &main_code};
    add_compact(&compact, stack, 5, 30.0);
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    s->n_interps = 1;
    struct snap_thread *t = snapshot_alloc(s, sizeof *t);
    memset(t, 0, sizeof *t);
    t->tid = 7;
    t->thread_id = 70;
    t->gil = SNAP_YES;
    t->frames = snapshot_alloc_array(s, 5, sizeof *t->frames);
    t->n_frames = 5;
    for (size_t i = 0; i < 5; i++) {
        struct snap_frame *f = &t->frames[i];
        memset(f, 0, sizeof *f);
        f->line = f->first_line = -1;
        if (stack[i] != NULL) {
            f->function = str(stack[i]->qualname);
            f->file = str(FILE_NAME);
            f->first_line = stack[i]->firstlineno;
        }
    }
    memset(&s->interps[0], 0, sizeof s->interps[0]);
    s->interps[0].threads = t;
    s->interps[0].n_threads = 1;
    sampler_window_add(&full, s, 30.0);
    const char *names[] = {"main", "descend"};
    const int lines[] = {1, 5};
    for (size_t i = 0; i < 2; i++) {
        uint64_t own_a;
        uint64_t total_a;
        uint64_t own_b;
        uint64_t total_b;
        func_counts(&compact, 30.001, names[i], lines[i], &own_a, &total_a);
        func_counts(&full, 30.001, names[i], lines[i], &own_b, &total_b);
        assert_int_equal(own_a, own_b);
        assert_int_equal(total_a, total_b);
        assert_int_equal(total_a, 1);
    }
    assert_int_equal(compact.table.funcs.live, full.table.funcs.live);
    assert_int_equal(compact.table.funcs.live, 3); /* main, descend and the unknown one */
    snapshot_free(s);
    sampler_window_free(&compact);
    sampler_window_free(&full);
}

/* A run of failed samples waits ever longer for the next (from the rate's period, doubling, up
 * to 0.25 s; 1 ms at --rate max, so a failing sample never spins) and the statistics say why. */
static void test_sampler_backs_off_a_run_of_failed_samples_and_says_why(void **state)
{
    (void)state;
    static const double want[] = {0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25};
    struct sampler *s = new_sampler(10);
    struct pt_error err = {0};
    double t = 1000.0;
    struct sampler_stats *st = sampler_stats(s, t);
    assert_null(st->last_error.ptr);
    assert_true(st->backoff_s == 0);
    sampler_stats_free(st);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(sampler_sample(s, t, &err), -1);
        assert_true(near(sampler_due(s, t), t + want[i]));
        assert_true(near(sampler_due(s, t + 1), t + 1));
        t = sampler_due(s, t);
    }
    st = sampler_stats(s, t);
    assert_int_equal(st->errors, 7);
    assert_non_null(st->last_error.ptr);
    assert_int_equal(st->last_error.len, strlen("no target to sample"));
    assert_memory_equal(st->last_error.ptr, "no target to sample", st->last_error.len);
    assert_true(near(st->backoff_s, 0.25));
    sampler_stats_free(st);
    sampler_free(s);

    struct sampler_opts opts = {.rate_hz = 0, .window_s = 10};
    s = sampler_new(NULL, NULL, &opts, &err);
    assert_non_null(s);
    assert_int_equal(sampler_sample(s, t, &err), -1);
    assert_true(near(sampler_due(s, t), t + 0.001));
    assert_int_equal(sampler_sample(s, t + 0.001, &err), -1);
    assert_true(near(sampler_due(s, t + 0.001), t + 0.003));
    sampler_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler_gil_share_is_of_the_threads_own_samples),
        cmocka_unit_test(test_sampler_gc_share_is_unknown_while_who_collects_is),
        cmocka_unit_test(test_sampler_mode_counts_only_matching_thread_samples),
        cmocka_unit_test(test_sampler_mode_change_starts_afresh_and_names_parse),
        cmocka_unit_test(test_sampler_thread_not_read_is_seen_but_not_counted),
        cmocka_unit_test(test_sampler_counts_a_recursive_function_once_per_stack),
        cmocka_unit_test(test_sampler_keeps_functions_of_one_name_in_two_places_apart),
        cmocka_unit_test(test_sampler_skips_shim_frames_and_counts_unnamed_ones_as_unreadable),
        cmocka_unit_test(test_sampler_counts_errors_and_failed_samples),
        cmocka_unit_test(test_sampler_reset_forgets_counts_but_keeps_the_latest_snapshot),
        cmocka_unit_test(test_sampler_caps_distinct_functions_and_says_so),
        cmocka_unit_test(test_sampler_caps_distinct_threads_and_says_so),
        cmocka_unit_test(test_sampler_stats_thread_counts_that_thread_only),
        cmocka_unit_test(test_sampler_keeps_the_last_name_a_thread_had),
        cmocka_unit_test(test_sampler_counts_code_objects_of_one_function_as_one),
        cmocka_unit_test(test_sampler_hint_never_serves_a_replaced_code_object),
        cmocka_unit_test(test_sampler_counts_compact_and_snapshot_samples_alike),
        cmocka_unit_test(test_sampler_backs_off_a_run_of_failed_samples_and_says_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
