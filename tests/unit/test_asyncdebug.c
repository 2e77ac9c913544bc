/* test_asyncdebug: the _asyncio debug-offsets parser, on real and hostile section bytes. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/asyncio/asyncdebug.h"
#include "core/util/error.h"
#include "core/util/limits.h"

/* The .AsyncioDebug section of Debian's python3.15 (3.15.2), as 13 uint64 values. */
static const uint64_t SECTION_3_15[13] = {168,    136,   96,   108,  109,  128, 152,
                                          226240, 10856, 1104, 1024, 1032, 1048};

static void section_bytes(const uint64_t *v, uint8_t *out)
{
    for (size_t i = 0; i < 13; i++) {
        for (size_t b = 0; b < 8; b++) {
            out[i * 8 + b] = (uint8_t)(v[i] >> (8 * b));
        }
    }
}

static void test_asyncdebug_parse_offsets_reads_the_3_15_section(void **state)
{
    (void)state;
    uint8_t buf[ASYNCDEBUG_SECTION_SIZE];
    struct asyncdebug_offsets o;
    struct pt_error err = {0};
    section_bytes(SECTION_3_15, buf);
    assert_int_equal(asyncdebug_parse_offsets(buf, sizeof buf, &o, &err), 0);
    assert_int_equal(o.task_size, 168);
    assert_int_equal(o.task_name, 136);
    assert_int_equal(o.task_awaited_by, 96);
    assert_int_equal(o.task_is_task, 108);
    assert_int_equal(o.task_awaited_by_is_set, 109);
    assert_int_equal(o.task_coro, 128);
    assert_int_equal(o.task_node, 152);
    assert_int_equal(o.task_state, 104);
    assert_int_equal(o.interp_tasks_head, 10856);
    assert_int_equal(o.thread_running_task, 1032);
    assert_int_equal(o.thread_tasks_head, 1048);
}

static void test_asyncdebug_parse_offsets_rejects_a_truncated_section(void **state)
{
    (void)state;
    uint8_t buf[ASYNCDEBUG_SECTION_SIZE];
    struct asyncdebug_offsets o;
    struct pt_error err = {0};
    section_bytes(SECTION_3_15, buf);
    assert_int_equal(asyncdebug_parse_offsets(buf, sizeof buf - 1, &o, &err), -1);
    assert_int_equal(err.code, PT_E_FORMAT);
}

static void test_asyncdebug_parse_offsets_rejects_fields_outside_their_structs(void **state)
{
    (void)state;
    uint8_t buf[ASYNCDEBUG_SECTION_SIZE];
    struct asyncdebug_offsets o;
    struct pt_error err = {0};
    uint64_t v[13];
    /* The node past the task's end; an oversized task; a list head past the thread state. */
    const size_t field[] = {6, 0, 12, 8, 4};
    const uint64_t value[] = {164, LIMIT_OBJECT_READ + 1, 1100, UINT64_MAX - 4, 168};
    for (size_t i = 0; i < sizeof field / sizeof field[0]; i++) {
        memcpy(v, SECTION_3_15, sizeof v);
        v[field[i]] = value[i];
        section_bytes(v, buf);
        assert_int_equal(asyncdebug_parse_offsets(buf, sizeof buf, &o, &err), -1);
        assert_int_equal(err.code, PT_E_BADLAYOUT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asyncdebug_parse_offsets_reads_the_3_15_section),
        cmocka_unit_test(test_asyncdebug_parse_offsets_rejects_a_truncated_section),
        cmocka_unit_test(test_asyncdebug_parse_offsets_rejects_fields_outside_their_structs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
