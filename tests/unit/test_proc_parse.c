/* test_proc_parse: parsing the kernel's maps and stat text, hostile lines included. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc.h"

static void expect_error(int rc, const struct pt_error *err, enum pt_errcode code)
{
    assert_int_equal(rc, -1);
    assert_string_equal(pt_error_name(err->code), pt_error_name(code));
}

static void test_proc_maps_parse_reads_every_kind_of_line(void **state)
{
    (void)state;
    static const char text[] =
        "55d32f21a000-55d32f21c000 r--p 00000000 fe:00 247498                     /usr/bin/head\n"
        "55d32f21c000-55d32f222000 r-xp 00002000 fe:00 247498                     /usr/bin/head\n"
        "003ff000-00400000 rw-p 00000000 fe:01 123 "
        "/var/cache/pytop-pythons/root/usr/bin/python3.15\n"
        "56000898d000-5600089ae000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f4abef7d000-7f4abef7f000 r-xp 00000000 00:00 0                          [vdso]\n"
        "7f4abef80000-7f4abef90000 rw-s 00000000 00:05 77 \n"
        "7f4abef90000-7f4abefa0000 ---p 00000000 00:00 0\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
    struct proc_map *maps = NULL;
    size_t n = 0;
    struct pt_error err = {0};
    assert_int_equal(proc_maps_parse(text, sizeof text - 1, &maps, &n, &err), 0);
    assert_int_equal(n, 8);
    assert_int_equal(maps[1].start, 0x55d32f21c000);
    assert_int_equal(maps[1].offset, 0x2000);
    assert_int_equal(maps[1].inode, 247498);
    assert_true(maps[1].readable && !maps[1].writable && maps[1].executable);
    assert_string_equal(maps[1].path, "/usr/bin/head");
    assert_int_equal(maps[2].start, 0x3ff000);
    assert_true(maps[2].readable && maps[2].writable && !maps[2].executable);
    assert_string_equal(maps[2].path, "/var/cache/pytop-pythons/root/usr/bin/python3.15");
    assert_string_equal(maps[4].path, "[vdso]");
    assert_string_equal(maps[5].path, "");
    assert_int_equal(maps[5].inode, 77);
    assert_string_equal(maps[6].path, "");
    assert_false(maps[6].readable || maps[6].writable || maps[6].executable);
    assert_int_equal(maps[7].start, 0xffffffffff600000);
    assert_string_equal(maps[7].path, "[vsyscall]");
    proc_maps_free(maps, n);
    maps = (struct proc_map *)1;
    assert_int_equal(proc_maps_parse("", 0, &maps, &n, &err), 0); /* and none at all */
    assert_int_equal(n, 0);
    assert_null(maps);
}

static void test_proc_maps_parse_keeps_paths_with_spaces(void **state)
{
    (void)state;
    static const char *const paths[] = {"/opt/my app/lib  two.so", "/tmp/libpy.so (deleted)",
                                        "/a ) b\\012c "};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char text[256];
        int len = snprintf(text, sizeof text, "7f00-7f01 r--p 0 08:01 42      %s\n", paths[i]);
        struct proc_map *maps = NULL;
        size_t n = 0;
        assert_int_equal(proc_maps_parse(text, (size_t)len, &maps, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(maps[0].path, paths[i]);
        proc_maps_free(maps, n);
    }
}

static void test_proc_maps_parse_rejects_hostile_lines(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "00400000-00401000 r-xp\n",
        "00400000-00401000 r-xp 00000000 08:01\n",
        "0040g000-00401000 r-xp 00000000 08:01 1 /x\n",
        "00402000-00401000 r-xp 00000000 08:01 1 /x\n",
        "00400000 r-xp 00000000 08:01 1 /x\n",
        "-00401000 r-xp 00000000 08:01 1 /x\n",
        "00400000-00401000 rwzp 00000000 08:01 1 /x\n",
        "00400000-00401000 r-x 00000000 08:01 1 /x\n",
        "00400000-00401000 r-xp 0000000z 08:01 1 /x\n",
        "00400000-00401000 r-xp 00000000 0801 1 /x\n",
        "00400000-00401000 r-xp 00000000 08:01 x /x\n",
        "00400000-00401000 r-xp 00000000 08:01 12x /x\n",
        "00400000-00401000 r-xp 00000000 08:01 99999999999999999999999 /x\n",
        "10000000000000000-10000000000000001 r-xp 00000000 08:01 1 /x\n",
        " 00400000-00401000 r-xp 00000000 08:01 1 /x\n",
        "00400000-00401000 r-xp 00000000 08:01 1 /ok\nnonsense\n", /* a good line, a bad one */
        "00400000-00401000 r-xp 00000000 08:01 1 /ok\n\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct proc_map *maps = NULL;
        size_t n = 0;
        struct pt_error err = {0};
        int rc = proc_maps_parse(bad[i], strlen(bad[i]), &maps, &n, &err);
        expect_error(rc, &err, PT_E_FORMAT);
        assert_non_null(strstr(err.msg, "maps line"));
    }
    static const char nul[] = "00400000-00401000 r-xp 00000000 08:01 1 /a\0b\n";
    struct proc_map *maps = NULL;
    size_t n = 0;
    struct pt_error err = {0};
    expect_error(proc_maps_parse(nul, sizeof nul - 1, &maps, &n, &err), &err, PT_E_FORMAT);
}

static void test_proc_maps_parse_rejects_more_lines_than_the_limit(void **state)
{
    (void)state;
    static const char line[] = "1000-2000 r--p 0 0:0 0\n";
    size_t len = (sizeof line - 1) * (LIMIT_MAPS + 1);
    char *text = malloc(len);
    assert_non_null(text);
    for (size_t i = 0; i <= LIMIT_MAPS; i++) {
        memcpy(text + i * (sizeof line - 1), line, sizeof line - 1);
    }
    struct proc_map *maps = NULL;
    size_t n = 0;
    struct pt_error err = {0};
    expect_error(proc_maps_parse(text, len, &maps, &n, &err), &err, PT_E_LIMIT);
    assert_int_equal(proc_maps_parse(text, len - (sizeof line - 1), &maps, &n, &err), 0);
    assert_int_equal(n, LIMIT_MAPS);
    proc_maps_free(maps, n);
    free(text);
}

/* Writes a 52-field stat line with COMM, state S, utime 1234, stime 567 and processor 3; the
 * other fields hold their number. Field FIELD (if not 0) holds TEXT instead. */
static size_t make_stat(char *buf, size_t size, const char *comm, int field, const char *text)
{
    int len = snprintf(buf, size, "4242 (%s)", comm);
    for (int i = 3; i <= 52; i++) {
        char num[16] = "S";
        if (i > 3) {
            snprintf(num, sizeof num, "%d", i == 14 ? 1234 : i == 15 ? 567 : i == 39 ? 3 : i);
        }
        len += snprintf(buf + len, size - (size_t)len, " %s", i == field ? text : num);
    }
    len += snprintf(buf + len, size - (size_t)len, "\n");
    return (size_t)len;
}

static void test_proc_stat_parse_reads_state_times_and_processor(void **state)
{
    (void)state;
    static const char real[] =
        "10343 (cat) R 10340 10340 3011 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 48246 3133440 "
        "365 18446744073709551615 94481714044928 94481714064809 140730361166976 0 0 0 0 0 0 0 0 "
        "0 17 1 0 0 0 0 0 94481714080816 94481714082432 94481884323840 140730361170562 "
        "140730361170582 140730361170582 140730361171947 0\n";
    struct proc_task_stat st;
    assert_int_equal(proc_stat_parse(real, sizeof real - 1, &st, NULL), 0);
    assert_int_equal(st.state, 'R');
    assert_int_equal(st.utime, 0);
    assert_int_equal(st.start_time, 48246);
    assert_int_equal(st.processor, 1);
}

static void test_proc_stat_parse_finds_the_last_parenthesis_of_the_command(void **state)
{
    (void)state;
    static const char *const comms[] = {"python3", "(a) b)", "x) R 1 2 (", "two words", ")", ""};
    for (size_t i = 0; i < sizeof comms / sizeof comms[0]; i++) {
        char buf[1024];
        struct proc_task_stat st;
        size_t len = make_stat(buf, sizeof buf, comms[i], 3, "t");
        assert_int_equal(proc_stat_parse(buf, len, &st, NULL), 0);
        assert_int_equal(st.state, 't');
        assert_int_equal(st.utime, 1234);
        assert_int_equal(st.stime, 567);
        assert_int_equal(st.processor, 3);
    }
}

static void test_proc_stat_parse_rejects_truncated_and_malformed_lines(void **state)
{
    (void)state;
    static const struct {
        int field;
        const char *text;
    } bad[] = {{3, "RS"}, {3, "5"}, {14, "x"}, {15, ""}, {39, "-1"}, {39, "99999999999"}};
    static const char *const unnamed[] = {"1 comm R 1 2 3", "1 )comm( R 1 2 3"};
    struct proc_task_stat st;
    struct pt_error err = {0};
    char buf[1024];
    make_stat(buf, sizeof buf, "a b", 0, NULL);
    /* Every cut before field 39 (the processor) starts must fail. */
    const char *field39 = strstr(buf, " 37 38 ") + 7;
    for (size_t len = 0; len < (size_t)(field39 - buf); len++) {
        expect_error(proc_stat_parse(buf, len, &st, &err), &err, PT_E_FORMAT);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = make_stat(buf, sizeof buf, "c", bad[i].field, bad[i].text);
        expect_error(proc_stat_parse(buf, len, &st, &err), &err, PT_E_FORMAT);
    }
    for (size_t i = 0; i < sizeof unnamed / sizeof unnamed[0]; i++) {
        expect_error(proc_stat_parse(unnamed[i], strlen(unnamed[i]), &st, &err), &err, PT_E_FORMAT);
    }
}

static void test_proc_status_parse_reads_ids_and_effective_capabilities(void **state)
{
    (void)state;
    static const char text[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
                               "Uid:\t1000\t1001\t1002\t1003\nGid:\t50\t51\t52\t53\n"
                               "CapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"
                               "NSpid:\t42";
    struct proc_status st;
    assert_int_equal(proc_status_parse(text, strlen(text), &st, NULL), 0);
    assert_true(st.has_ids);
    assert_int_equal(st.uid[0], 1000);
    assert_int_equal(st.uid[3], 1003);
    assert_int_equal(st.gid[1], 51);
    assert_true(st.has_cap_eff);
    assert_int_equal(st.cap_eff, 0x1ffffffffffull);
    /* Without the lines it needs it says so, and does not fail. */
    assert_int_equal(proc_status_parse("Name:\tx\n", 8, &st, NULL), 0);
    assert_false(st.has_ids);
    assert_false(st.has_cap_eff);
}

static void test_proc_status_parse_rejects_malformed_id_and_capability_lines(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "Uid:\t1\t2\t3\n",
        "Uid:\t1\t2\t3\t4\t5\n",
        "Uid:\t1\t2\t3\tx\n",
        "Gid:\t1\t2\t3\t99999999999\n",
        "Uid:1\t2\t3\t4\n",
        "CapEff:\t1ff\n",
        "CapEff:\t000001ffffffffffff\n",
        "CapEff:\t00000zffffffffff\n",
    };
    struct proc_status st;
    struct pt_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_error(proc_status_parse(bad[i], strlen(bad[i]), &st, &err), &err, PT_E_FORMAT);
    }
    /* Every cut of a good Uid line before its fourth id fails too. */
    static const char uid[] = "Uid:\t1000\t1000\t1000\t1000";
    for (size_t len = 4; len <= strlen("Uid:\t1000\t1000\t1000\t"); len++) {
        expect_error(proc_status_parse(uid, len, &st, &err), &err, PT_E_FORMAT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_maps_parse_reads_every_kind_of_line),
        cmocka_unit_test(test_proc_maps_parse_keeps_paths_with_spaces),
        cmocka_unit_test(test_proc_maps_parse_rejects_hostile_lines),
        cmocka_unit_test(test_proc_maps_parse_rejects_more_lines_than_the_limit),
        cmocka_unit_test(test_proc_stat_parse_reads_state_times_and_processor),
        cmocka_unit_test(test_proc_stat_parse_finds_the_last_parenthesis_of_the_command),
        cmocka_unit_test(test_proc_stat_parse_rejects_truncated_and_malformed_lines),
        cmocka_unit_test(test_proc_status_parse_reads_ids_and_effective_capabilities),
        cmocka_unit_test(test_proc_status_parse_rejects_malformed_id_and_capability_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
