/* test_layout: the code markers the layouts name, and the build family a target's kind picks. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"
#include "core/layout/gen.h"
#include "core/layout/layout.h"

static uint64_t hex(unsigned minor)
{
    return 0x030000f0ULL | ((uint64_t)minor << 16);
}

static void test_layout_tables_name_the_global_counter_only_where_headers_declare_it(void **state)
{
    (void)state;
    for (unsigned minor = 8; minor <= 12; minor++) {
        struct py_layout L;
        struct pt_error e = {0};
        memset(&L, 0, sizeof L);
        assert_int_equal(layout_from_table(hex(minor), &L, &e), 0);
        /* co_version and the global it comes from are 3.12's; before, nothing vouches. */
        assert_int_equal(L.code_marker,
                         minor == 12 ? CODE_MARKER_GLOBAL_NEXT_VERSION : CODE_MARKER_NONE);
        assert_true(layout_has(L.code.version) == (minor == 12));
        assert_true(!layout_has(L.code.version) || L.code.version + 4 <= L.code.size);
    }
}

/* A 3.13 layout as its debug offsets leave it, before the build is known. */
static struct py_layout layout_3_13(void)
{
    struct py_layout L;
    memset(&L, 0, sizeof L);
    L.hexversion = hex(13);
    L.interp.size = LAYOUT_NONE;
    L.code_marker = CODE_MARKER_NEXT_VERSION;
    return L;
}

static void test_layout_pick_build_takes_the_family_of_the_targets_kind(void **state)
{
    (void)state;
    size_t n = 0;
    const struct layout_build_gen *v = layout_build_variants(13, &n);
    int64_t want[2] = {-1, -1};
    for (size_t i = 0; i < n; i++) {
        want[v[i].ref_debug == 1] = v[i].interp_func_next_version;
    }
    /* Release and debug builds of 3.13 lay the counter out differently. */
    assert_true(want[0] > 0 && want[1] > 0 && want[0] != want[1]);
    for (int debug = 0; debug <= 1; debug++) {
        struct py_layout L = layout_3_13();
        layout_pick_build(&L, debug == 1);
        assert_int_equal(L.interp.func_next_version, (uint64_t)want[debug]);
        assert_int_equal(L.code_marker, CODE_MARKER_NEXT_VERSION);
    }
}

static void test_layout_pick_build_drops_a_counter_outside_the_interpreter_state(void **state)
{
    (void)state;
    struct py_layout L = layout_3_13();
    L.interp.size = 4096; /* what the target's debug offsets say; the family's field lies past it */
    layout_pick_build(&L, false);
    assert_false(layout_has(L.interp.func_next_version));
    assert_int_equal(L.code_marker, CODE_MARKER_NONE);
}

static void test_layout_pick_build_without_a_family_drops_the_counter_keeps_a_generation(
    void **state)
{
    (void)state;
    struct py_layout L = layout_3_13();
    L.hexversion = hex(3); /* no families at all */
    layout_pick_build(&L, false);
    assert_false(layout_has(L.interp.func_next_version));
    assert_int_equal(L.code_marker, CODE_MARKER_NONE);
    L = layout_3_13();
    L.hexversion = hex(14);
    L.code_marker = CODE_MARKER_GENERATION;
    layout_pick_build(&L, true);
    assert_int_equal(L.code_marker, CODE_MARKER_GENERATION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_tables_name_the_global_counter_only_where_headers_declare_it),
        cmocka_unit_test(test_layout_pick_build_takes_the_family_of_the_targets_kind),
        cmocka_unit_test(test_layout_pick_build_drops_a_counter_outside_the_interpreter_state),
        cmocka_unit_test(
            test_layout_pick_build_without_a_family_drops_the_counter_keeps_a_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
