/* Tests of gcwatch: which thread state runs a collection, told from walks' reads of the GIL's
 * last holder and switch count and the GC's collecting flag and collection counts. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/walk/gcwatch.h"

enum { COLLECTOR = 0x1000, OTHER = 0x2000 };

/* N walks that read no collection while COLLECTOR keeps the GIL (5 switches so far, COUNTS
 * collections). */
static void idle(struct gcwatch *w, int n, int64_t counts)
{
    struct gcwatch_head h = {0, COLLECTOR, 5, counts};
    for (int i = 0; i < n; i++) {
        gcwatch_update(w, &h, NULL);
    }
}

/* One walk that reads a collection running, and its late read. */
static uint64_t busy(struct gcwatch *w, uint64_t holder, uint64_t switches, uint64_t late_switches,
                     int64_t late_counts)
{
    struct gcwatch_head h = {1, holder, switches, late_counts};
    struct gcwatch_late l = {true, late_switches, late_counts};
    return gcwatch_update(w, &h, &l);
}

static void test_gcwatch_names_the_thread_that_started_the_collection_amid_no_switch(void **state)
{
    (void)state;
    struct gcwatch w = {0};
    idle(&w, 3, 7);
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, 7), COLLECTOR);
    /* The collector releases the GIL: others take it, the counts stand still. */
    assert_int_equal(busy(&w, OTHER, 9, 12, 7), COLLECTOR);
    assert_int_equal(busy(&w, OTHER, 40, 41, 7), COLLECTOR);
}

static void test_gcwatch_forgets_the_collector_once_the_counts_move(void **state)
{
    (void)state;
    struct gcwatch w = {0};
    idle(&w, 3, 7);
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, 7), COLLECTOR);
    /* A collection ended and another began between two walks: who runs it is unknown. */
    assert_int_equal(busy(&w, OTHER, 9, 9, 8), 0);
    assert_int_equal(busy(&w, OTHER, 9, 9, 8), 0);
}

static void test_gcwatch_cannot_tell_when_another_thread_took_the_gil_around_the_start(void **state)
{
    (void)state;
    struct gcwatch w = {0};
    idle(&w, 3, 7);
    /* The switch count moved after the first of those walks: OTHER may have started it. */
    assert_int_equal(busy(&w, OTHER, 6, 6, 7), 0);
    assert_int_equal(busy(&w, OTHER, 6, 6, 7), 0);
}

static void test_gcwatch_cannot_tell_a_collection_it_did_not_see_start(void **state)
{
    (void)state;
    struct gcwatch w = {0};
    /* Running at the first walk, or after only two: the switch count of three walks before
     * its start is unknown. */
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, 7), 0);
    gcwatch_reset(&w);
    idle(&w, 2, 7);
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, 7), 0);
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, 7), 0);
}

static void test_gcwatch_cannot_carry_without_counts_or_late_read(void **state)
{
    (void)state;
    struct gcwatch w = {0};
    idle(&w, 3, -1);
    assert_int_equal(busy(&w, COLLECTOR, 5, 5, -1), COLLECTOR);
    assert_int_equal(busy(&w, OTHER, 9, 9, -1), 0);
    gcwatch_reset(&w);
    idle(&w, 3, 7);
    struct gcwatch_head b = {1, COLLECTOR, 5, 7};
    struct gcwatch_late failed = {false, 0, -1};
    assert_int_equal(gcwatch_update(&w, &b, &failed), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcwatch_names_the_thread_that_started_the_collection_amid_no_switch),
        cmocka_unit_test(test_gcwatch_forgets_the_collector_once_the_counts_move),
        cmocka_unit_test(
            test_gcwatch_cannot_tell_when_another_thread_took_the_gil_around_the_start),
        cmocka_unit_test(test_gcwatch_cannot_tell_a_collection_it_did_not_see_start),
        cmocka_unit_test(test_gcwatch_cannot_carry_without_counts_or_late_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
