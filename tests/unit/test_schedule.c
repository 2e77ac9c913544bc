/* test_schedule: one sample at a random point of each period of the rate, missed periods
 * skipped, and no phase locking with a target's own period. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/sampler/schedule.h"

#define RATE 100.0
#define PERIOD (1.0 / RATE)
#define SLOTS 20000

static void test_schedule_first_sample_is_due_at_once(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, RATE, 5.0, 1);
    assert_true(schedule_due(&s) == 5.0);
}

static void test_schedule_puts_each_sample_in_its_own_period(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, RATE, 10.0, 42);
    double due = schedule_due(&s);
    for (int k = 1; k <= SLOTS; k++) {
        double next = schedule_next(&s, due); /* the sample taken the moment it was due */
        double slot = 10.0 + k * PERIOD;
        assert_true(next >= slot - 1e-9);
        assert_true(next < slot + PERIOD + 1e-9);
        assert_true(schedule_due(&s) == next);
        due = next;
    }
}

/* The points are spread evenly over the period: each tenth of it gets about a tenth of them,
 * and the mean interval is the period (the rate is kept). */
static void test_schedule_spreads_points_evenly_and_keeps_the_rate(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, RATE, 0.0, 7);
    int tenths[10] = {0};
    double due = schedule_due(&s);
    for (int k = 1; k <= SLOTS; k++) {
        due = schedule_next(&s, due);
        double phase = (due - k * PERIOD) / PERIOD;
        int t = (int)(phase * 10);
        assert_true(t >= 0 && t < 10);
        tenths[t]++;
    }
    for (int t = 0; t < 10; t++) {
        assert_in_range(tenths[t], SLOTS / 10 * 9 / 10, SLOTS / 10 * 11 / 10);
    }
    double mean = due / SLOTS;
    assert_true(fabs(mean - PERIOD) < PERIOD / 100);
}

/* A thread busy for the first half of every 1.25 ms (eight turns a period of the rate): a
 * strict grid sees it at one phase, always busy or always idle; the schedule sees it busy in
 * about half of the samples, whatever the phase it started at. */
static void test_schedule_does_not_lock_to_a_targets_period(void **state)
{
    (void)state;
    const double turn = PERIOD / 8;
    for (int start = 0; start < 8; start++) {
        struct schedule s;
        schedule_start(&s, RATE, start * turn / 8, (uint64_t)start);
        double due = schedule_due(&s);
        int busy = 0;
        for (int k = 0; k < SLOTS; k++) {
            busy += fmod(due, turn) < turn / 2;
            due = schedule_next(&s, due);
        }
        assert_in_range(busy, SLOTS * 45 / 100, SLOTS * 55 / 100);
    }
}

static void test_schedule_skips_missed_periods(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, RATE, 0.0, 3);
    /* The first sample took 35.5 ms: the next is in the period 35.5 ms is in, and may be due
     * already (then it is taken at once). */
    double next = schedule_next(&s, 0.0355);
    assert_true(next >= 0.03 - 1e-12 && next < 0.04);
    /* Then on in order. */
    double after = schedule_next(&s, 0.0355);
    assert_true(after >= 0.04 - 1e-12 && after < 0.05);
    /* A sample taken late inside its period does not skip the next one. */
    double again = schedule_next(&s, 0.0401);
    assert_true(again >= 0.05 - 1e-12 && again < 0.06);
}

static void test_schedule_back_to_back_without_a_rate(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, 0, 1.0, 0);
    assert_true(schedule_due(&s) == 1.0);
    assert_true(schedule_next(&s, 1.25) == 1.25);
    assert_true(schedule_due(&s) == 1.25);
    schedule_start(&s, -5, 2.0, 0);
    assert_true(schedule_next(&s, 2.5) == 2.5);
}

/* A clock far ahead (a step, or a suspend) restarts from it instead of counting slots. */
static void test_schedule_survives_a_leap_of_the_clock(void **state)
{
    (void)state;
    struct schedule s;
    schedule_start(&s, RATE, 1.0, 9);
    double next = schedule_next(&s, 1e15);
    assert_true(next >= 1e15 && next <= 1e15 + PERIOD);
    next = schedule_next(&s, 1e300);
    assert_true(next >= 1e300);
    assert_true(isfinite(next));
}

static void test_schedule_seeds_pick_different_points(void **state)
{
    (void)state;
    struct schedule a;
    struct schedule b;
    struct schedule c;
    schedule_start(&a, RATE, 0.0, 1);
    schedule_start(&b, RATE, 0.0, 1);
    schedule_start(&c, RATE, 0.0, 2);
    int same_ab = 0;
    int same_ac = 0;
    for (int k = 0; k < 100; k++) {
        double na = schedule_next(&a, 0.0 + k * PERIOD);
        double nb = schedule_next(&b, 0.0 + k * PERIOD);
        double nc = schedule_next(&c, 0.0 + k * PERIOD);
        same_ab += na == nb;
        same_ac += na == nc;
    }
    assert_int_equal(same_ab, 100);
    assert_true(same_ac < 5);
    assert_true(schedule_seed() != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_first_sample_is_due_at_once),
        cmocka_unit_test(test_schedule_puts_each_sample_in_its_own_period),
        cmocka_unit_test(test_schedule_spreads_points_evenly_and_keeps_the_rate),
        cmocka_unit_test(test_schedule_does_not_lock_to_a_targets_period),
        cmocka_unit_test(test_schedule_skips_missed_periods),
        cmocka_unit_test(test_schedule_back_to_back_without_a_rate),
        cmocka_unit_test(test_schedule_survives_a_leap_of_the_clock),
        cmocka_unit_test(test_schedule_seeds_pick_different_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
