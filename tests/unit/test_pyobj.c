/* Tests of pyobj: str headers and character conversion, as laid out by real 3.13-3.15 builds. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/pyobj/pyobj.h"

/* The str layout of 64-bit 3.13-3.15 GIL builds (PyASCIIObject is 40 bytes, compact 56). */
static struct py_layout str_layout(void)
{
    struct py_layout L = {0};
    L.unicode.state = 32;
    L.unicode.length = 16;
    L.unicode.ascii_size = 40;
    L.unicode.compact_size = 56;
    L.unicode.kind_shift = 2;
    L.unicode.compact_bit = 5;
    L.unicode.ascii_bit = 6;
    return L;
}

static void make_header(uint8_t *buf, uint64_t length, unsigned kind, bool compact, bool ascii)
{
    uint32_t state = (kind << 2) | ((uint32_t)compact << 5) | ((uint32_t)ascii << 6);
    memset(buf, 0, 64);
    memcpy(buf + 16, &length, 8);
    memcpy(buf + 32, &state, 4);
}

static void test_pyobj_parse_header_finds_ascii_data_after_the_ascii_header(void **state)
{
    (void)state;
    struct py_layout L = str_layout();
    uint8_t buf[64];
    struct pyobj_str_info info;
    make_header(buf, 5, 1, true, true);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), 0);
    assert_int_equal(info.kind, 1);
    assert_int_equal(info.length, 5);
    assert_int_equal(info.data_off, 40);
    assert_int_equal(info.data_bytes, 5);
}

static void test_pyobj_parse_header_finds_wide_data_after_the_compact_header(void **state)
{
    (void)state;
    struct py_layout L = str_layout();
    uint8_t buf[64];
    struct pyobj_str_info info;
    make_header(buf, 3, 2, true, false);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), 0);
    assert_int_equal(info.data_off, 56);
    assert_int_equal(info.data_bytes, 6);
}

static void test_pyobj_parse_header_rejects_bad_kinds_and_legacy_strings(void **state)
{
    (void)state;
    struct py_layout L = str_layout();
    uint8_t buf[64];
    struct pyobj_str_info info;
    struct pt_error err = {0};
    make_header(buf, 3, 3, true, false);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, &err), -1);
    assert_int_equal(err.code, PT_E_FORMAT);
    make_header(buf, 3, 0, true, false);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), -1);
    make_header(buf, 3, 1, false, false);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), -1);
    make_header(buf, 3, 4, true, true);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), -1);
}

static void test_pyobj_parse_header_rejects_truncated_and_huge_strings(void **state)
{
    (void)state;
    struct py_layout L = str_layout();
    uint8_t buf[64];
    struct pyobj_str_info info;
    make_header(buf, 3, 1, true, true);
    assert_int_equal(pyobj_str_parse_header(&L, buf, 30, &info, NULL), -1);
    make_header(buf, UINT64_MAX / 2, 4, true, false);
    assert_int_equal(pyobj_str_parse_header(&L, buf, sizeof buf, &info, NULL), -1);
}

static void test_pyobj_str_to_utf8_encodes_every_kind(void **state)
{
    (void)state;
    char out[64];
    const uint8_t latin1[] = {'g', 'r', 0xfc, 0xdf, 'e'};
    long n = pyobj_str_to_utf8(1, latin1, sizeof latin1, 5, out, sizeof out, NULL);
    assert_int_equal(n, 7);
    assert_memory_equal(out, "gr\xc3\xbc\xc3\x9f" "e", 7);
    const uint16_t ucs2[] = {0x65e5, 0x672c};
    n = pyobj_str_to_utf8(2, (const uint8_t *)ucs2, sizeof ucs2, 2, out, sizeof out, NULL);
    assert_int_equal(n, 6);
    assert_memory_equal(out, "\xe6\x97\xa5\xe6\x9c\xac", 6);
    const uint32_t ucs4[] = {0x1f40d, 'x'};
    n = pyobj_str_to_utf8(4, (const uint8_t *)ucs4, sizeof ucs4, 2, out, sizeof out, NULL);
    assert_int_equal(n, 5);
    assert_memory_equal(out, "\xf0\x9f\x90\x8dx", 5);
}

static void test_pyobj_str_to_utf8_keeps_lone_surrogates_as_three_bytes(void **state)
{
    (void)state;
    char out[8];
    const uint16_t s[] = {0xdc80};
    long n = pyobj_str_to_utf8(2, (const uint8_t *)s, sizeof s, 1, out, sizeof out, NULL);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "\xed\xb2\x80", 3);
}

static void test_pyobj_str_to_utf8_stops_at_capacity_between_characters(void **state)
{
    (void)state;
    char out[5];
    const uint16_t s[] = {0x65e5, 0x672c, 0x8a9e};
    long n = pyobj_str_to_utf8(2, (const uint8_t *)s, sizeof s, 3, out, sizeof out, NULL);
    assert_int_equal(n, 3);
}

static void test_pyobj_str_to_utf8_rejects_short_data_and_bad_code_points(void **state)
{
    (void)state;
    char out[16];
    struct pt_error err = {0};
    const uint32_t big[] = {0x110000};
    assert_int_equal(pyobj_str_to_utf8(4, (const uint8_t *)big, sizeof big, 1, out, sizeof out,
                                       &err),
                     -1);
    assert_int_equal(err.code, PT_E_FORMAT);
    const uint8_t two[] = {'a', 'b'};
    assert_int_equal(pyobj_str_to_utf8(1, two, sizeof two, 3, out, sizeof out, NULL), -1);
    assert_int_equal(pyobj_str_to_utf8(3, two, sizeof two, 1, out, sizeof out, NULL), -1);
}

/* pyobj_read_str() on str objects laid out in this process's own memory. */
static long read_own_str(const uint8_t *obj, char *out, size_t cap)
{
    struct pt_error err = {0};
    struct py_layout L = str_layout();
    struct proc *p = proc_open(getpid(), &err);
    assert_non_null(p);
    long n = pyobj_read_str(p, &L, (uint64_t)(uintptr_t)obj, out, cap, &err);
    proc_close(p);
    return n;
}

static void test_pyobj_read_str_reads_a_str_that_ends_with_its_nul(void **state)
{
    (void)state;
    static uint8_t obj[512];
    char out[64];
    make_header(obj, 5, 1, true, true);
    memcpy(obj + 40, "hello", 6);
    assert_int_equal(read_own_str(obj, out, sizeof out), 5);
    assert_memory_equal(out, "hello", 5);
    /* Longer than the first read, cut at CAP: still checked to end where it says. */
    memset(obj + 40, 'x', 400);
    make_header(obj, 400, 1, true, true);
    obj[440] = 0;
    assert_int_equal(read_own_str(obj, out, sizeof out), (long)sizeof out);
}

static void test_pyobj_read_str_rejects_a_length_its_characters_do_not_end_at(void **state)
{
    (void)state;
    static uint8_t obj[512];
    char out[64];
    /* A hostile length: the characters go on where the str's NUL should be... */
    make_header(obj, 5, 1, true, true);
    memcpy(obj + 40, "hello, world", 13);
    assert_int_equal(read_own_str(obj, out, sizeof out), -1);
    /* ...or past any mapping (the header's limit, 2**40 characters, itself allowed). */
    make_header(obj, (uint64_t)1 << 40, 1, true, true);
    assert_int_equal(read_own_str(obj, out, sizeof out), -1);
}

/* pyobj_str_from_buf(): what a batch read of a name's first bytes gives, without reading. */
static void test_pyobj_str_from_buf_asks_for_more_only_when_the_nul_is_past_the_buffer(void **state)
{
    (void)state;
    struct py_layout L = str_layout();
    uint8_t obj[128];
    char out[64];
    make_header(obj, 5, 1, true, true);
    memcpy(obj + 40, "hello", 6);
    assert_int_equal(pyobj_str_from_buf(&L, obj, sizeof obj, out, sizeof out, NULL), 5);
    assert_memory_equal(out, "hello", 5);
    /* The NUL is the buffer's last byte, then one past it. */
    assert_int_equal(pyobj_str_from_buf(&L, obj, 46, out, sizeof out, NULL), 5);
    assert_int_equal(pyobj_str_from_buf(&L, obj, 45, out, sizeof out, NULL), PYOBJ_STR_MORE);
    /* A str whose characters run on where its NUL should be is refused from the buffer too. */
    memcpy(obj + 40, "hello, world", 13);
    assert_int_equal(pyobj_str_from_buf(&L, obj, sizeof obj, out, sizeof out, NULL), -1);
    /* A length past the buffer: more, whatever the bytes in it say. */
    make_header(obj, 200, 1, true, true);
    assert_int_equal(pyobj_str_from_buf(&L, obj, sizeof obj, out, sizeof out, NULL),
                     PYOBJ_STR_MORE);
}

static void test_pyobj_is_str_needs_the_unicode_subclass_flag(void **state)
{
    (void)state;
    static uint64_t type[32];
    static uint64_t obj[8];
    struct pt_error err = {0};
    struct py_layout L = str_layout();
    L.object.ob_type = 8;
    L.type.flags = 168;
    L.flag_str_subclass = (uint64_t)1 << 28;
    obj[1] = (uint64_t)(uintptr_t)type;
    struct proc *p = proc_open(getpid(), &err);
    assert_non_null(p);
    type[21] = (uint64_t)1 << 28 | 1;
    assert_true(pyobj_is_str(p, &L, (uint64_t)(uintptr_t)obj));
    type[21] = (uint64_t)1 << 27;
    assert_false(pyobj_is_str(p, &L, (uint64_t)(uintptr_t)obj));
    /* Unreadable objects and layouts that do not know the flag say no. */
    assert_false(pyobj_is_str(p, &L, 0x10));
    type[21] = (uint64_t)1 << 28;
    L.flag_str_subclass = 0;
    assert_false(pyobj_is_str(p, &L, (uint64_t)(uintptr_t)obj));
    proc_close(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyobj_parse_header_finds_ascii_data_after_the_ascii_header),
        cmocka_unit_test(test_pyobj_parse_header_finds_wide_data_after_the_compact_header),
        cmocka_unit_test(test_pyobj_parse_header_rejects_bad_kinds_and_legacy_strings),
        cmocka_unit_test(test_pyobj_parse_header_rejects_truncated_and_huge_strings),
        cmocka_unit_test(test_pyobj_str_to_utf8_encodes_every_kind),
        cmocka_unit_test(test_pyobj_str_to_utf8_keeps_lone_surrogates_as_three_bytes),
        cmocka_unit_test(test_pyobj_str_to_utf8_stops_at_capacity_between_characters),
        cmocka_unit_test(test_pyobj_str_to_utf8_rejects_short_data_and_bad_code_points),
        cmocka_unit_test(test_pyobj_read_str_reads_a_str_that_ends_with_its_nul),
        cmocka_unit_test(test_pyobj_str_from_buf_asks_for_more_only_when_the_nul_is_past_the_buffer),
        cmocka_unit_test(test_pyobj_read_str_rejects_a_length_its_characters_do_not_end_at),
        cmocka_unit_test(test_pyobj_is_str_needs_the_unicode_subclass_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
