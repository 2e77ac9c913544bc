/* Tests of codemark: when the target's code marker is believed, and when it stops being. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pyobj/code.h"
#include "core/pyobj/codemark.h"

enum { INTERP = 0x1000, OTHER_INTERP = 0x2000 };

static void test_codemark_counter_vouches_while_it_stays_above_what_was_read(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_NEXT_VERSION);
    assert_true(codemark_is_vouching(&m));
    assert_int_equal(codemark_take(&m, INTERP, true, 1000), 1000);
    assert_int_equal(codemark_version_below(&m, 1000), 1000);
    /* Code objects made before the counter was read, and one made while the walk ran. */
    codemark_saw_version(&m, 10);
    codemark_saw_version(&m, 1000);
    /* Making that one bumped the counter: 1001 is consistent, and unchanged after it too. */
    assert_int_equal(codemark_take(&m, INTERP, true, 1001), 1001);
    assert_int_equal(codemark_take(&m, INTERP, true, 1001), 1001);
    assert_true(codemark_is_vouching(&m));
}

static void test_codemark_counter_not_above_a_version_read_after_it_is_believed_no_more(
    void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_GLOBAL_NEXT_VERSION);
    assert_int_equal(codemark_take(&m, INTERP, true, 1000), 1000);
    codemark_saw_version(&m, 1000);
    /* A code object the counter numbered 1000 exists, yet the counter still says 1000: it is
     * not what numbers code objects (a wrong offset), and never vouches again. */
    assert_true(codemark_take(&m, INTERP, true, 1000) == CODE_GENERATION_NONE);
    assert_false(codemark_is_vouching(&m));
    assert_true(m.broken);
    assert_true(codemark_take(&m, INTERP, true, 5000) == CODE_GENERATION_NONE);
}

static void test_codemark_counter_that_goes_back_is_believed_no_more(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_NEXT_VERSION);
    assert_int_equal(codemark_take(&m, INTERP, true, 500), 500);
    assert_true(codemark_take(&m, INTERP, true, 499) == CODE_GENERATION_NONE);
    assert_true(m.broken);
    assert_true(codemark_take(&m, INTERP, true, 501) == CODE_GENERATION_NONE);
}

static void test_codemark_worn_out_counter_vouches_for_nothing(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_NEXT_VERSION);
    /* Read as 4 bytes: the upper half is not the counter's. */
    assert_int_equal(codemark_take(&m, INTERP, true, 0xffffffffull), 0xffffffffull);
    assert_true(codemark_take(&m, INTERP, true, 0x100000000ull) == CODE_GENERATION_NONE);
    assert_false(codemark_is_vouching(&m));
    assert_false(m.broken);
}

static void test_codemark_unread_or_absent_marker_vouches_for_nothing(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_NEXT_VERSION);
    assert_true(codemark_take(&m, INTERP, false, 1000) == CODE_GENERATION_NONE);
    assert_true(codemark_is_vouching(&m));
    codemark_init(&m, CODE_MARKER_NONE);
    assert_false(codemark_is_vouching(&m));
    assert_true(codemark_take(&m, INTERP, true, 1000) == CODE_GENERATION_NONE);
    assert_int_equal(codemark_version_below(&m, CODE_GENERATION_NONE), 0);
}

static void test_codemark_another_interpreter_starts_afresh_in_a_new_epoch(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_NEXT_VERSION);
    assert_int_equal(codemark_take(&m, INTERP, true, 4000), 4000);
    codemark_saw_version(&m, 3999);
    uint64_t epoch = m.epoch;
    /* A subinterpreter became the first of the list: its own counter, lower, is no failure. */
    assert_int_equal(codemark_take(&m, OTHER_INTERP, true, 10), 10);
    assert_true(m.epoch != epoch);
    assert_true(codemark_is_vouching(&m));
}

static void test_codemark_generation_has_no_version_bound_but_must_not_go_back(void **state)
{
    (void)state;
    struct codemark m;
    codemark_init(&m, CODE_MARKER_GENERATION);
    assert_int_equal(codemark_take(&m, INTERP, true, 0), 0);
    assert_int_equal(codemark_version_below(&m, 0), 0);
    /* A generation is 64 bits wide, and counts frees, not co_versions. */
    codemark_saw_version(&m, 1u << 20);
    assert_true(codemark_take(&m, INTERP, true, 1ull << 40) == 1ull << 40);
    assert_true(codemark_take(&m, INTERP, true, 7) == CODE_GENERATION_NONE);
    assert_true(m.broken);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codemark_counter_vouches_while_it_stays_above_what_was_read),
        cmocka_unit_test(
            test_codemark_counter_not_above_a_version_read_after_it_is_believed_no_more),
        cmocka_unit_test(test_codemark_counter_that_goes_back_is_believed_no_more),
        cmocka_unit_test(test_codemark_worn_out_counter_vouches_for_nothing),
        cmocka_unit_test(test_codemark_unread_or_absent_marker_vouches_for_nothing),
        cmocka_unit_test(test_codemark_another_interpreter_starts_afresh_in_a_new_epoch),
        cmocka_unit_test(test_codemark_generation_has_no_version_bound_but_must_not_go_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
