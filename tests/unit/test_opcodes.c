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
    for (int minor = 6; minor <= 15; minor++) {
        const struct opcode_table *t = opcode_table_for(0x0300u | (unsigned)minor);
        assert_non_null(t);
        assert_int_equal(t->key, 0x0300u | (unsigned)minor);
        /* Specialisation came with 3.11; inline caches inside frames only in 3.11 and 3.12. */
        assert_true((t->base != NULL) == (minor >= 11));
        assert_true((t->caches != NULL) == (minor == 11 || minor == 12));
        /* Wordcode came with 3.6. */
        assert_int_equal(t->encoding, OPCODE_WORDCODE);
    }
    const struct opcode_table *t27 = opcode_table_for(0x0207);
    assert_non_null(t27);
    assert_int_equal(t27->encoding, OPCODE_BYTECODE);
    assert_int_equal(t27->have_argument, 90);
    assert_null(t27->base);
    assert_null(t27->caches);
    assert_null(opcode_table_for(0x0305));
    assert_null(opcode_table_for(0x0300));
    assert_null(opcode_table_for(0x0f07));
}

/* The numbers dis gives (Lib/opcode.py of each version) for a few instructions. */
static void test_opcodes_names_match_the_versions_own_numbers(void **state)
{
    (void)state;
    const struct opcode_table *t38 = opcode_table_for(0x0308);
    assert_string_equal(t38->names[1], "POP_TOP");
    assert_string_equal(t38->names[106], "LOAD_ATTR");
    assert_string_equal(t38->names[131], "CALL_FUNCTION");
    assert_null(t38->names[0]);
    const struct opcode_table *t315 = opcode_table_for(0x030f);
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

/* 3.7 (CALL_METHOD, LOAD_METHOD), 3.6 and 2.7 as their dis names them (Lib/opcode.py). */
static void test_opcodes_names_of_37_36_and_27(void **state)
{
    (void)state;
    const struct opcode_table *t37 = opcode_table_for(0x0307);
    assert_string_equal(t37->names[160], "LOAD_METHOD");
    assert_string_equal(t37->names[161], "CALL_METHOD");
    assert_string_equal(t37->names[131], "CALL_FUNCTION");
    assert_string_equal(t37->names[144], "EXTENDED_ARG");
    const struct opcode_table *t36 = opcode_table_for(0x0306);
    assert_null(t36->names[160]);
    assert_null(t36->names[161]);
    assert_string_equal(t36->names[142], "CALL_FUNCTION_EX");
    assert_string_equal(t36->names[127], "STORE_ANNOTATION");
    const struct opcode_table *t27 = opcode_table_for(0x0207);
    assert_string_equal(t27->names[0], "STOP_CODE");
    assert_string_equal(t27->names[131], "CALL_FUNCTION");
    assert_string_equal(t27->names[142], "CALL_FUNCTION_VAR_KW");
    assert_string_equal(t27->names[145], "EXTENDED_ARG");
    /* Its header names 30-33 SLICE, SLICE_1, ...; dis says SLICE+0, SLICE+1, ... */
    assert_string_equal(t27->names[30], "SLICE+0");
    assert_string_equal(t27->names[33], "SLICE+3");
    assert_string_equal(t27->names[41], "STORE_SLICE+1");
    assert_string_equal(t27->names[50], "DELETE_SLICE+0");
    /* A comment after the number, even one running on to the next line, hides no name. */
    assert_string_equal(t27->names[111], "JUMP_IF_FALSE_OR_POP");
    assert_string_equal(t27->names[90], "STORE_NAME");
    /* 3.12's STORE_SLICE is no numbered form. */
    const struct opcode_table *t312 = opcode_table_for(0x030c);
    for (int op = 0; op < 256; op++) {
        assert_true(t312->names[op] == NULL || strchr(t312->names[op], '+') == NULL);
    }
}

/* 2.7: an opcode below HAVE_ARGUMENT is 1 byte, from it 3; wordcode is 2. */
static void test_opcodes_length_follows_the_encoding(void **state)
{
    (void)state;
    const struct opcode_table *t27 = opcode_table_for(0x0207);
    assert_int_equal(opcode_length(t27, 83), 1);  /* RETURN_VALUE */
    assert_int_equal(opcode_length(t27, 89), 1);  /* BUILD_CLASS */
    assert_int_equal(opcode_length(t27, 90), 3);  /* STORE_NAME */
    assert_int_equal(opcode_length(t27, 131), 3); /* CALL_FUNCTION */
    assert_int_equal(opcode_length(t27, 145), 3); /* EXTENDED_ARG */
    assert_int_equal(opcode_length(opcode_table_for(0x0307), 83), 2);
    assert_int_equal(opcode_length(opcode_table_for(0x0306), 131), 2);
    /* No inline caches before 3.11: no owner to step to. */
    const uint8_t code[] = {116, 0, 0, 131, 0, 0, 83};
    assert_int_equal(opcode_owner(t27, code, sizeof code, 3), -1);
}

/* 3.12: CALL (171) has 3 cache units; a caller frame points at its last one. */
static void test_opcodes_owner_steps_over_inline_caches(void **state)
{
    (void)state;
    const struct opcode_table *t = opcode_table_for(0x030c);
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
    assert_int_equal(opcode_owner(opcode_table_for(0x030d), code, sizeof code, 2), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opcodes_every_supported_version_has_a_table),
        cmocka_unit_test(test_opcodes_names_match_the_versions_own_numbers),
        cmocka_unit_test(test_opcodes_names_of_37_36_and_27),
        cmocka_unit_test(test_opcodes_length_follows_the_encoding),
        cmocka_unit_test(test_opcodes_owner_steps_over_inline_caches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
