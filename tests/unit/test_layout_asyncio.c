/* test_layout_asyncio: the asyncio tables and the capabilities derived from them. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"

static uint64_t hex(unsigned minor)
{
    return 0x030000f0ULL | ((uint64_t)minor << 16);
}

static void select_table(unsigned minor, struct layout_asyncio *A)
{
    struct py_layout L;
    struct pt_error e = {0};
    memset(&L, 0, sizeof L);
    assert_int_equal(layout_from_table(hex(minor), &L, &e), 0);
    assert_int_equal(layout_asyncio_select(&L, A, &e), 0);
}

static void test_layout_asyncio_frame_objects_use_yield_from_opcode(void **state)
{
    (void)state;
    struct layout_asyncio A;
    for (unsigned minor = 8; minor <= 10; minor++) {
        select_table(minor, &A);
        assert_int_equal(A.yield_from, LAYOUT_YF_NEXT_OPCODE);
        assert_true(layout_has(A.gen_frame));
        assert_string_equal(A.registry_weak, "_all_tasks");
        assert_null(A.registry_strong);
        assert_int_equal(A.lasti_scale, minor == 10 ? 2 : 1);
        assert_int_equal(A.stack, minor == 10 ? LAYOUT_STACK_DEPTH : LAYOUT_STACK_POINTER);
    }
}

/* 3.6 and 3.7: frame objects as 3.8's; no task names; 3.7's registry is asyncio.tasks'
 * _all_tasks (the C module's set), 3.6's a class attribute of _PyTask beside the C tasks' set,
 * which only the _asyncio module's static all_tasks holds. */
static void test_layout_asyncio_before_3_8_has_no_task_names(void **state)
{
    (void)state;
    struct layout_asyncio A;
    for (unsigned minor = 6; minor <= 7; minor++) {
        select_table(minor, &A);
        assert_int_equal(A.yield_from, LAYOUT_YF_NEXT_OPCODE);
        assert_int_equal(A.stack, LAYOUT_STACK_POINTER);
        assert_int_equal(A.lasti_scale, 1);
        assert_false(layout_has(A.task.name));
        assert_int_equal(layout_has(A.task.callback0), minor == 7);
        assert_string_equal(A.registry_weak, "_all_tasks");
        assert_null(A.registry_strong);
        if (minor == 6) {
            assert_string_equal(A.registry_owner, "_PyTask");
            assert_string_equal(A.registry_c_symbol, "all_tasks");
        } else {
            assert_null(A.registry_owner);
            assert_null(A.registry_c_symbol);
        }
    }
    select_table(8, &A);
    assert_true(layout_has(A.task.name));
    assert_null(A.registry_owner);
    assert_null(A.registry_c_symbol);
}

static void test_layout_asyncio_embedded_frames_check_resume(void **state)
{
    (void)state;
    struct layout_asyncio A;
    for (unsigned minor = 11; minor <= 12; minor++) {
        select_table(minor, &A);
        assert_int_equal(A.yield_from, LAYOUT_YF_RESUME_OPARG);
        assert_int_equal(A.stack, LAYOUT_STACK_LOCALSPLUS);
        assert_false(layout_has(A.gen_frame));
        assert_true(A.op_resume[0] >= 0);
    }
    assert_string_equal(A.registry_weak, "_scheduled_tasks");
    assert_string_equal(A.registry_strong, "_eager_tasks");
}

static void test_layout_asyncio_int_task_names_only_from_3_12(void **state)
{
    (void)state;
    struct layout_asyncio A;
    /* The versions pytop reads through tables (3.13+ have debug offsets). */
    for (unsigned minor = 8; minor <= 12; minor++) {
        select_table(minor, &A);
        assert_int_equal(A.int_task_names, minor >= 12);
        /* The module state's registries and its debug_offsets pointer are 3.14+'s. */
        assert_false(layout_has(A.modstate.non_asyncio_tasks));
        assert_false(layout_has(A.modstate.debug_offsets));
    }
}

static void test_layout_asyncio_refuses_a_version_without_table(void **state)
{
    (void)state;
    struct py_layout L;
    struct layout_asyncio A;
    struct pt_error e = {0};
    memset(&L, 0, sizeof L);
    L.hexversion = 0x020712f0; /* 2.7: no asyncio */
    assert_int_equal(layout_asyncio_select(&L, &A, &e), -1);
    assert_int_equal(e.code, PT_E_UNSUPPORTED);
}

static void test_layout_asyncio_refuses_3_14_without_its_debug_offsets(void **state)
{
    (void)state;
    struct py_layout L;
    struct layout_asyncio A;
    struct pt_error e = {0};
    memset(&L, 0, sizeof L);
    L.hexversion = hex(14);
    assert_int_equal(layout_asyncio_select(&L, &A, &e), -1);
    assert_int_equal(e.code, PT_E_BADLAYOUT);
}

static void test_layout_asyncio_refuses_a_frame_kind_that_does_not_match(void **state)
{
    (void)state;
    struct py_layout L;
    struct layout_asyncio A;
    struct pt_error e = {0};
    memset(&L, 0, sizeof L);
    assert_int_equal(layout_from_table(hex(9), &L, &e), 0);
    L.frames = FRAMES_INTERPRETER;
    assert_int_equal(layout_asyncio_select(&L, &A, &e), -1);
    assert_int_equal(e.code, PT_E_BADLAYOUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_asyncio_frame_objects_use_yield_from_opcode),
        cmocka_unit_test(test_layout_asyncio_before_3_8_has_no_task_names),
        cmocka_unit_test(test_layout_asyncio_embedded_frames_check_resume),
        cmocka_unit_test(test_layout_asyncio_int_task_names_only_from_3_12),
        cmocka_unit_test(test_layout_asyncio_refuses_a_version_without_table),
        cmocka_unit_test(test_layout_asyncio_refuses_3_14_without_its_debug_offsets),
        cmocka_unit_test(test_layout_asyncio_refuses_a_frame_kind_that_does_not_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
