/* test_opcodes: the generated instruction tables and the lookups on them. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/layout/opcodes.h"

static void test_opcodes_every_supported_version_has_a_table(void **state)
{
    (void)state;
    for (int minor = 8; minor <= 15; minor++) {
        const struct opcode_table *t = opcode_table_for(3, minor);
        assert_non_null(t);
        assert_int_equal(t->minor, minor);
        /* Specialisation came with 3.11; inline caches inside frames only in 3.11 and 3.12. */
        assert_true((t->base != NULL) == (minor >= 11));
        assert_true((t->caches != NULL) == (minor == 11 || minor == 12));
    }
    assert_null(opcode_table_for(3, 7));
    assert_null(opcode_table_for(2, 7));
}

/* The numbers dis gives (Lib/opcode.py of each version) for a few instructions. */
static void test_opcodes_names_match_the_versions_own_numbers(void **state)
{
    (void)state;
    const struct opcode_table *t38 = opcode_table_for(3, 8);
    assert_string_equal(t38->names[1], "POP_TOP");
    assert_string_equal(t38->names[106], "LOAD_ATTR");
    assert_string_equal(t38->names[131], "CALL_FUNCTION");
    assert_null(t38->names[0]);
    const struct opcode_table *t315 = opcode_table_for(3, 15);
    struct opcode_name n = opcode_describe(t315, 186);
    assert_string_equal(n.name, "LOAD_ATTR_INSTANCE_VALUE");
    assert_string_equal(n.base_name, "LOAD_ATTR");
    assert_string_equal(n.specialised, "LOAD_ATTR_INSTANCE_VALUE");
    n = opcode_describe(t315, 130);
    assert_string_equal(n.base_name, "BINARY_OP");
    assert_string_equal(n.specialised, "BINARY_OP_ADD_INT");
    n = opcode_describe(t315, 50);
    assert_string_equal(n.base_name, "CALL");
    assert_int_equal(n.base, 50);
    assert_null(n.specialised);
    /* Before 3.11 nothing is specialised; a number that is no instruction has no name. */
    n = opcode_describe(t38, 106);
    assert_string_equal(n.base_name, "LOAD_ATTR");
    assert_null(n.specialised);
    assert_null(opcode_describe(t38, 0).name);
    assert_null(opcode_describe(t38, 300).name);
    assert_null(opcode_describe(NULL, 1).name);
}

/* 3.12: CALL (171) has 3 cache units; a caller frame points at its last one. */
static void test_opcodes_owner_steps_over_inline_caches(void **state)
{
    (void)state;
    const struct opcode_table *t = opcode_table_for(3, 12);
    assert_int_equal(t->caches[171], 3);
    /* RESUME 0; CALL 0 + 3 caches; POP_TOP; RETURN_CONST 0. */
    const uint8_t code[] = {151, 0, 171, 0, 0, 0, 0, 0, 0, 0, 1, 0, 121, 0};
    assert_string_equal(t->names[151], "RESUME");
    assert_string_equal(t->names[171], "CALL");
    assert_int_equal(opcode_owner(t, code, sizeof code, 0), 0);
    assert_int_equal(opcode_owner(t, code, sizeof code, 2), 2);
    assert_int_equal(opcode_owner(t, code, sizeof code, 8), 2);  /* the last cache */
    assert_int_equal(opcode_owner(t, code, sizeof code, 10), 10); /* POP_TOP */
    /* Outside the code, at an odd byte, or through a unit that is no instruction: -1. */
    assert_int_equal(opcode_owner(t, code, sizeof code, 14), -1);
    assert_int_equal(opcode_owner(t, code, sizeof code, 3), -1);
    const uint8_t bad[] = {0xff, 0, 1, 0};
    assert_null(t->names[0xff]);
    assert_int_equal(opcode_owner(t, bad, sizeof bad, 2), -1);
    assert_int_equal(opcode_owner(opcode_table_for(3, 13), code, sizeof code, 2), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opcodes_every_supported_version_has_a_table),
        cmocka_unit_test(test_opcodes_names_match_the_versions_own_numbers),
        cmocka_unit_test(test_opcodes_owner_steps_over_inline_caches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
