/* test_sampler_window: the window as it slides, grows, shrinks and resets; a brute-force count. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler_window_sliding_drops_old_samples),
        cmocka_unit_test(test_sampler_slides_bucket_by_bucket),
        cmocka_unit_test(test_sampler_longer_window_keeps_what_was_counted_and_slides_it_later),
        cmocka_unit_test(test_sampler_shorter_window_starts_afresh),
        cmocka_unit_test(test_sampler_window_since_the_reset_never_slides),
        cmocka_unit_test(test_sampler_counts_time_running_backwards_in_the_newest_bucket),
        cmocka_unit_test(test_sampler_agrees_with_a_brute_force_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
