/* test_sampler: the window statistics over synthetic snapshots. */
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

static const char *const FILE_NAME = "/srv/app/worker.py";

/* Without libm: the tests compare with what the sampler computes, for positive times. */
static bool near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

static int64_t bucket_of(double t, double width)
{
    return (int64_t)(t / width);
}

static struct snap_str str(const char *c)
{
    struct snap_str s = {c, c != NULL ? strlen(c) : 0};
    return s;
}

static struct sampler *new_sampler(double window_s)
{
    struct sampler_opts opts = {.rate_hz = 100, .window_s = window_s};
    struct pt_error err = {0};
    struct sampler *s = sampler_new(NULL, NULL, &opts, &err);
    assert_non_null(s);
    return s;
}

/* A snapshot of one interpreter holding N_THREADS idle threads without frames: thread K has
 * tid 100 + K and thread_id 1000 + K. */
static struct snapshot *snap_threads(size_t n_threads)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->pid = 4242;
    s->time = 1764480000.5;
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    assert_non_null(s->interps);
    s->n_interps = 1;
    struct snap_interp *in = &s->interps[0];
    in->threads = snapshot_alloc_array(s, n_threads > 0 ? n_threads : 1, sizeof *in->threads);
    assert_non_null(in->threads);
    in->n_threads = n_threads;
    for (size_t k = 0; k < n_threads; k++) {
        struct snap_thread *t = &in->threads[k];
        t->tid = (pid_t)(100 + k);
        t->thread_id = 1000 + k;
        t->gil = SNAP_NO;
        t->gil_requested = SNAP_NO;
        t->on_cpu = SNAP_NO;
        t->has_exception = SNAP_NO;
        t->in_gc = SNAP_NO;
    }
    return s;
}

static struct snap_thread *thread_of(struct snapshot *s, size_t k)
{
    return &s->interps[0].threads[k];
}

/* Gives thread T the stack FUNCTIONS[0..N) (innermost first), all in FILE_NAME; a function's
 * first line is its name's first letter, so equal names are one function. */
static void set_stack(struct snapshot *s, struct snap_thread *t, const char *const *functions,
                      size_t n)
{
    t->frames = snapshot_alloc_array(s, n > 0 ? n : 1, sizeof *t->frames);
    assert_non_null(t->frames);
    t->n_frames = n;
    for (size_t i = 0; i < n; i++) {
        struct snap_frame *f = &t->frames[i];
        f->function = snapshot_strdup(s, functions[i], strlen(functions[i]));
        f->name = f->function;
        f->file = str(FILE_NAME);
        f->line = 10 + (int)i;
        f->first_line = functions[i][0];
        f->end_line = f->col = f->end_col = -1;
        f->kind = SNAP_FRAME_PYTHON;
    }
}

static const struct sampler_function *find_function(const struct sampler_stats *st,
                                                    const char *name)
{
    for (size_t i = 0; i < st->n_functions; i++) {
        const struct sampler_function *f = &st->functions[i];
        if (f->function.ptr != NULL && f->function.len == strlen(name) &&
            memcmp(f->function.ptr, name, f->function.len) == 0) {
            return f;
        }
    }
    return NULL;
}

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
    assert_true(t0->cpu_pct == 25.0); /* unknown is not yes */
    assert_true(t0->gc_pct == 25.0);
    assert_int_equal(t0->gil_samples, 3);
    assert_int_equal(t1->samples, 2);
    assert_true(t1->gil_pct == 50.0);
    assert_null(sampler_stats_find_thread(st, 1, 100, 1000));
    assert_null(sampler_stats_find_thread(st, 0, 100, 1001));
    sampler_stats_free(st);
    sampler_free(s);
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

static void test_sampler_window_sliding_drops_old_samples(void **state)
{
    (void)state;
    static const char *const old_stack[] = {"old"};
    static const char *const new_stack[] = {"new"};
    struct sampler *s = new_sampler(1.0);
    for (int i = 0; i < 10; i++) {
        struct snapshot *snap = snap_threads(2);
        set_stack(snap, thread_of(snap, 0), old_stack, 1);
        thread_of(snap, 0)->gil = SNAP_YES;
        sampler_add(s, snap, 100.0 + i * 0.05);
        if (i == 4) {
            sampler_add_error(s, 100.21);
        }
    }
    struct sampler_stats *st = sampler_stats(s, 100.5);
    assert_non_null(st);
    assert_int_equal(st->samples, 10);
    assert_int_equal(st->errors, 1);
    assert_true(near(st->window_s, 0.5));
    assert_true(near(st->achieved_hz, 20.0));
    sampler_stats_free(st);

    /* Statistics asked for later, with no sample since, no longer count what is past. */
    st = sampler_stats(s, 101.3);
    assert_non_null(st);
    assert_true(st->samples > 0 && st->samples < 10);
    assert_int_equal(st->errors, 0);
    assert_true(st->window_s <= 1.0 && st->window_s > 0.98);
    sampler_stats_free(st);
    st = sampler_stats(s, 102.0);
    assert_non_null(st);
    assert_int_equal(st->samples, 0);
    assert_int_equal(st->n_threads, 0);
    assert_int_equal(st->n_functions, 0);
    assert_null(st->threads);
    assert_null(st->functions);
    sampler_stats_free(st);

    /* A new sample slides the window: only the new thread and function remain. */
    struct snapshot *snap = snap_threads(1);
    thread_of(snap, 0)->tid = 555;
    set_stack(snap, thread_of(snap, 0), new_stack, 1);
    sampler_add(s, snap, 101.6);
    st = sampler_stats(s, 101.6);
    assert_non_null(st);
    assert_int_equal(st->samples, 1);
    assert_int_equal(st->n_threads, 1);
    assert_int_equal(st->threads[0].tid, 555);
    assert_int_equal(st->threads[0].gil_samples, 0);
    assert_int_equal(st->n_functions, 1);
    assert_non_null(find_function(st, "new"));
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_slides_bucket_by_bucket(void **state)
{
    (void)state;
    /* One sample every 10 ms over 3 s in a 1 s window: the window holds the last second. */
    struct sampler *s = new_sampler(1.0);
    for (int i = 0; i < 300; i++) {
        sampler_add(s, snap_threads(1), 50.0 + i * 0.01);
        if (i >= 150) {
            struct sampler_stats *st = sampler_stats(s, 50.0 + i * 0.01);
            assert_non_null(st);
            /* The oldest bucket (1/64 s) may be partly gone. */
            assert_true(st->samples >= 98 && st->samples <= 101);
            assert_int_equal(st->threads[0].samples, st->samples);
            sampler_stats_free(st);
        }
    }
    sampler_free(s);
}

/* Samples of one thread running FUNCTION, every STEP seconds from FROM until before TO. */
static void add_run(struct sampler *s, const char *function, double from, double to, double step)
{
    const char *const stack[] = {function};
    for (int i = 0; from + i * step < to - 1e-9; i++) {
        struct snapshot *snap = snap_threads(1);
        set_stack(snap, thread_of(snap, 0), stack, 1);
        sampler_add(s, snap, from + i * step);
    }
}

static uint64_t own_of(const struct sampler_stats *st, const char *function)
{
    const struct sampler_function *f = find_function(st, function);
    return f != NULL ? f->own : 0;
}

static void test_sampler_longer_window_keeps_what_was_counted_and_slides_it_later(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(1.0);
    add_run(s, "early", 100.0, 101.0, 0.01);
    add_run(s, "late", 101.0, 102.0, 0.01);
    struct pt_error err = {0};
    assert_int_equal(sampler_set_window(s, 10.0, 102.0, &err), 0);
    /* The 1 s window held the last second: that is what the 10 s one starts with, and it
     * says it covers one second so far. */
    struct sampler_stats *st = sampler_stats(s, 102.0);
    assert_non_null(st);
    assert_true(near(st->window_limit, 10.0));
    assert_true(st->samples >= 98 && st->samples <= 101);
    assert_int_equal(own_of(st, "early"), 0);
    assert_true(own_of(st, "late") >= 98);
    assert_true(st->window_s > 0.98 && st->window_s <= 1.0 + 1e-9);
    assert_true(st->achieved_hz > 97 && st->achieved_hz < 102);
    sampler_stats_free(st);
    /* It grows to 10 s, then slides: "late" is gone after 10 s more (a bucket late at most). */
    add_run(s, "later", 102.0, 108.0, 0.01);
    st = sampler_stats(s, 108.0);
    assert_true(st->samples >= 698 && st->samples <= 701);
    assert_true(own_of(st, "late") >= 98);
    assert_true(st->window_s > 6.9 && st->window_s < 7.01);
    assert_int_equal(st->n_threads, 1);
    assert_int_equal(st->threads[0].samples, st->samples);
    sampler_stats_free(st);
    add_run(s, "later", 108.0, 112.3, 0.01);
    st = sampler_stats(s, 112.3);
    assert_int_equal(own_of(st, "late"), 0);
    assert_true(st->samples >= 990 && st->samples <= 1001);
    assert_true(st->window_s <= 10.0 + 1e-9 && st->window_s > 9.8);
    assert_int_equal(st->threads[0].samples, st->samples);
    assert_int_equal(own_of(st, "later"), st->samples);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_shorter_window_starts_afresh(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(10.0);
    add_run(s, "before", 100.0, 105.0, 0.01);
    struct pt_error err = {0};
    assert_int_equal(sampler_set_window(s, 1.0, 105.0, &err), 0);
    struct sampler_stats *st = sampler_stats(s, 105.0);
    assert_int_equal(st->samples, 0);
    assert_int_equal(st->n_functions, 0);
    assert_true(near(st->window_limit, 1.0));
    sampler_stats_free(st);
    add_run(s, "after", 105.0, 107.0, 0.01);
    st = sampler_stats(s, 107.0);
    assert_int_equal(own_of(st, "before"), 0);
    assert_true(st->samples >= 98 && st->samples <= 101);
    sampler_stats_free(st);
    sampler_free(s);
}

static void test_sampler_window_since_the_reset_never_slides(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(INFINITY);
    add_run(s, "first", 1000.0, 1100.0, 0.5);
    add_run(s, "second", 1100.0, 5000.0, 10.0);
    struct sampler_stats *st = sampler_stats(s, 5000.0);
    assert_true(isinf(st->window_limit));
    assert_int_equal(own_of(st, "first"), 200);
    assert_int_equal(own_of(st, "second"), 390);
    assert_true(near(st->window_s, 4000.0));
    sampler_stats_free(st);
    /* A longer window from 60 s: what the 60 s held stays, and never slides out. */
    struct pt_error err = {0};
    assert_int_equal(sampler_set_window(s, 60.0, 5000.0, &err), 0);
    st = sampler_stats(s, 5000.0);
    assert_int_equal(st->samples, 0);
    sampler_stats_free(st);
    add_run(s, "kept", 5000.0, 5100.0, 1.0);
    assert_int_equal(sampler_set_window(s, INFINITY, 5100.0, &err), 0);
    add_run(s, "new", 5100.0, 9000.0, 100.0);
    st = sampler_stats(s, 9000.0);
    uint64_t kept = own_of(st, "kept");
    assert_true(kept >= 59 && kept <= 61);
    assert_int_equal(own_of(st, "new"), 39);
    /* It reaches back to where the 60 s window began. */
    assert_true(st->window_s > 3959 && st->window_s < 3962);
    sampler_stats_free(st);
    /* The reset still forgets it all. */
    sampler_reset(s);
    add_run(s, "fresh", 9000.0, 9010.0, 1.0);
    st = sampler_stats(s, 9010.0);
    assert_int_equal(st->samples, 10);
    assert_int_equal(own_of(st, "kept"), 0);
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

static void test_sampler_counts_time_running_backwards_in_the_newest_bucket(void **state)
{
    (void)state;
    struct sampler *s = new_sampler(1);
    sampler_add(s, snap_threads(1), 10);
    sampler_add(s, snap_threads(1), 5);
    sampler_add(s, snap_threads(1), NAN);
    struct sampler_stats *st = sampler_stats(s, 10);
    assert_non_null(st);
    assert_int_equal(st->samples, 3);
    sampler_stats_free(st);
    sampler_free(s);
}

/* ---- against a brute-force count ---- */

enum { RAND_SAMPLES = 3000, RAND_THREADS = 5, RAND_DEPTH = 7, RAND_FUNCS = 8 };

struct rand_thread {
    bool present;
    enum snap_bool gil;
    enum snap_bool cpu;
    enum snap_bool gc;
    int depth;
    int stack[RAND_DEPTH];
};

struct rand_sample {
    double t;
    struct rand_thread threads[RAND_THREADS];
};

static const char *const RAND_NAMES[RAND_FUNCS] = {"a", "b", "c", "d", "e", "f", "g", "h"};

static struct snapshot *rand_snapshot(const struct rand_sample *r)
{
    struct snapshot *s = snap_threads(RAND_THREADS);
    size_t n = 0;
    for (size_t k = 0; k < RAND_THREADS; k++) {
        const struct rand_thread *rt = &r->threads[k];
        if (!rt->present) {
            continue;
        }
        struct snap_thread *t = thread_of(s, n++);
        const char *names[RAND_DEPTH];
        for (int i = 0; i < rt->depth; i++) {
            names[i] = RAND_NAMES[rt->stack[i]];
        }
        t->tid = (pid_t)(100 + k);
        t->thread_id = 1000 + k;
        t->gil = rt->gil;
        t->on_cpu = rt->cpu;
        t->in_gc = rt->gc;
        set_stack(s, t, names, (size_t)rt->depth);
    }
    s->interps[0].n_threads = n;
    return s;
}

static enum snap_bool rand_flag(void)
{
    int r = rand() % 3;
    return r == 0 ? SNAP_NO : r == 1 ? SNAP_YES : SNAP_UNKNOWN;
}

static void rand_fill(struct rand_sample *r, double t)
{
    r->t = t;
    for (size_t k = 0; k < RAND_THREADS; k++) {
        struct rand_thread *rt = &r->threads[k];
        rt->present = rand() % 4 != 0;
        rt->gil = rand_flag();
        rt->cpu = rand_flag();
        rt->gc = rand_flag();
        rt->depth = rand() % (RAND_DEPTH + 1);
        for (int i = 0; i < rt->depth; i++) {
            rt->stack[i] = rand() % RAND_FUNCS;
        }
    }
}

/* What the window at NOW must hold, counted the slow way, compared with ST. */
static void check_against_brute_force(const struct rand_sample *rs, size_t n, double now,
                                      double width, const struct sampler_stats *st)
{
    int64_t k_now = bucket_of(now, width);
    uint64_t samples = 0;
    uint64_t thread_samples = 0;
    uint64_t per_thread[RAND_THREADS][4] = {{0}};
    uint64_t own[RAND_FUNCS] = {0};
    uint64_t total[RAND_FUNCS] = {0};
    for (size_t i = 0; i < n; i++) {
        if (bucket_of(rs[i].t, width) <= k_now - SAMPLER_BUCKETS) {
            continue;
        }
        samples++;
        for (size_t k = 0; k < RAND_THREADS; k++) {
            const struct rand_thread *rt = &rs[i].threads[k];
            if (!rt->present) {
                continue;
            }
            thread_samples++;
            per_thread[k][0]++;
            per_thread[k][1] += rt->gil == SNAP_YES;
            per_thread[k][2] += rt->cpu == SNAP_YES;
            per_thread[k][3] += rt->gc == SNAP_YES;
            bool seen[RAND_FUNCS] = {false};
            for (int d = 0; d < rt->depth; d++) {
                own[rt->stack[d]] += d == 0;
                total[rt->stack[d]] += !seen[rt->stack[d]];
                seen[rt->stack[d]] = true;
            }
        }
    }
    assert_int_equal(st->samples, samples);
    assert_int_equal(st->thread_samples, thread_samples);
    size_t live_threads = 0;
    for (size_t k = 0; k < RAND_THREADS; k++) {
        const struct sampler_thread *t =
            sampler_stats_find_thread(st, 0, (pid_t)(100 + k), 1000 + k);
        live_threads += per_thread[k][0] > 0;
        if (per_thread[k][0] == 0) {
            assert_null(t);
            continue;
        }
        assert_non_null(t);
        assert_int_equal(t->samples, per_thread[k][0]);
        assert_int_equal(t->gil_samples, per_thread[k][1]);
        assert_int_equal(t->cpu_samples, per_thread[k][2]);
        assert_int_equal(t->gc_samples, per_thread[k][3]);
    }
    assert_int_equal(st->n_threads, live_threads);
    size_t live_funcs = 0;
    for (size_t f = 0; f < RAND_FUNCS; f++) {
        const struct sampler_function *fn = find_function(st, RAND_NAMES[f]);
        live_funcs += total[f] > 0;
        if (total[f] == 0) {
            assert_null(fn);
            continue;
        }
        assert_non_null(fn);
        assert_int_equal(fn->own, own[f]);
        assert_int_equal(fn->total, total[f]);
    }
    assert_int_equal(st->n_functions, live_funcs);
}

/* ---- compact samples: frames as code identities ---- */

static struct code_info code(uint64_t serial, const char *qualname, int first_line)
{
    struct code_info c = {0};
    c.addr = 0x1000 * serial;
    c.serial = serial;
    c.qualname = (char *)qualname;
    c.qualname_len = strlen(qualname);
    c.name = c.qualname;
    c.name_len = c.qualname_len;
    c.filename = (char *)FILE_NAME;
    c.filename_len = strlen(FILE_NAME);
    c.firstlineno = first_line;
    return c;
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
    sampler_window_add_sample(w, &smp, now);
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

static void test_sampler_agrees_with_a_brute_force_count(void **state)
{
    (void)state;
    const double window = 0.64;
    const double width = window / SAMPLER_BUCKETS;
    struct rand_sample *rs = calloc(RAND_SAMPLES, sizeof *rs);
    assert_non_null(rs);
    srand(12345);
    struct sampler *s = new_sampler(window);
    double t = 1000.0;
    for (size_t i = 0; i < RAND_SAMPLES; i++) {
        /* Mostly dense, now and then a pause longer than the window. */
        t += rand() % 50 == 0 ? 0.3 + (rand() % 100) / 100.0 : (rand() % 100) / 4000.0;
        rand_fill(&rs[i], t);
        sampler_add(s, rand_snapshot(&rs[i]), t);
        if (i % 7 == 0 || i + 1 == RAND_SAMPLES) {
            double later = t + (i % 3 == 0 ? (rand() % 100) / 100.0 : 0);
            struct sampler_stats *st = sampler_stats(s, later);
            assert_non_null(st);
            check_against_brute_force(rs, i + 1, later, width, st);
            sampler_stats_free(st);
        }
    }
    sampler_free(s);
    free(rs);
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
        cmocka_unit_test(test_sampler_counts_a_recursive_function_once_per_stack),
        cmocka_unit_test(test_sampler_keeps_functions_of_one_name_in_two_places_apart),
        cmocka_unit_test(test_sampler_skips_shim_frames_and_counts_unnamed_ones_as_unreadable),
        cmocka_unit_test(test_sampler_window_sliding_drops_old_samples),
        cmocka_unit_test(test_sampler_slides_bucket_by_bucket),
        cmocka_unit_test(test_sampler_longer_window_keeps_what_was_counted_and_slides_it_later),
        cmocka_unit_test(test_sampler_shorter_window_starts_afresh),
        cmocka_unit_test(test_sampler_window_since_the_reset_never_slides),
        cmocka_unit_test(test_sampler_counts_errors_and_failed_samples),
        cmocka_unit_test(test_sampler_reset_forgets_counts_but_keeps_the_latest_snapshot),
        cmocka_unit_test(test_sampler_caps_distinct_functions_and_says_so),
        cmocka_unit_test(test_sampler_caps_distinct_threads_and_says_so),
        cmocka_unit_test(test_sampler_stats_thread_counts_that_thread_only),
        cmocka_unit_test(test_sampler_keeps_the_last_name_a_thread_had),
        cmocka_unit_test(test_sampler_counts_time_running_backwards_in_the_newest_bucket),
        cmocka_unit_test(test_sampler_agrees_with_a_brute_force_count),
        cmocka_unit_test(test_sampler_counts_code_objects_of_one_function_as_one),
        cmocka_unit_test(test_sampler_hint_never_serves_a_replaced_code_object),
        cmocka_unit_test(test_sampler_counts_compact_and_snapshot_samples_alike),
        cmocka_unit_test(test_sampler_backs_off_a_run_of_failed_samples_and_says_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
