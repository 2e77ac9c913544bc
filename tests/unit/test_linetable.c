/* Tests for linetable: vectors recorded from real interpreters, hand-decoded and hostile tables. */
#include "config.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/pyobj/linetable.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/unit/data"
#endif

/* The four decoders share one shape; a test picks one by format. */
enum fmt {
    FMT_LOCATIONS,
    FMT_V310,
    FMT_LNOTAB,
    FMT_LNOTAB_UNSIGNED,
};

static const char *const fmt_names[] = {"locations", "v310", "lnotab", "lnotab-unsigned"};

static const struct linetable_loc SENTINEL = {12345, 12345, 12345, 12345};

static int find(enum fmt f, const uint8_t *buf, size_t len, int firstlineno, uint32_t at,
                struct linetable_loc *out, struct pt_error *err)
{
    switch (f) {
    case FMT_LOCATIONS:
        return linetable_locations_find(buf, len, firstlineno, at, out, err);
    case FMT_V310:
        return linetable_v310_find(buf, len, firstlineno, at, out, err);
    case FMT_LNOTAB:
        return linetable_lnotab_find(buf, len, firstlineno, at, out, err);
    case FMT_LNOTAB_UNSIGNED:
        return linetable_lnotab_unsigned_find(buf, len, firstlineno, at, out, err);
    }
    fail_msg("unknown format %d", (int)f);
    return -1;
}

/* One code object of a vector file while its "at" runs are being checked. */
struct vec_code {
    char name[160];
    int firstlineno;
    unsigned nunits;
    unsigned next;
    uint8_t *table;
    size_t table_len;
};

struct vec_file {
    const char *path;
    unsigned lineno;
    enum fmt format;
    struct vec_code code;
    unsigned ncodes;
    unsigned long nchecks;
};

static char *slurp(const char *path)
{
    FILE *fh = fopen(path, "rb");
    if (fh == NULL) {
        fail_msg("cannot open %s", path);
    }
    assert_int_equal(fseek(fh, 0, SEEK_END), 0);
    long size = ftell(fh);
    assert_true(size > 0);
    rewind(fh);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, fh), (size_t)size);
    text[size] = '\0';
    fclose(fh);
    return text;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

static void parse_table(struct vec_file *vf, const char *hex)
{
    struct vec_code *code = &vf->code;
    size_t n = strlen(hex);
    free(code->table);
    code->table = NULL;
    code->table_len = 0;
    if (strcmp(hex, "-") == 0) {
        return;
    }
    if (n % 2 != 0) {
        fail_msg("%s:%u: odd hex length", vf->path, vf->lineno);
    }
    code->table = malloc(n / 2);
    assert_non_null(code->table);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_digit(hex[2 * i]);
        int lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            fail_msg("%s:%u: bad hex", vf->path, vf->lineno);
        }
        code->table[i] = (uint8_t)(hi << 4 | lo);
    }
    code->table_len = n / 2;
}

static void check_one(struct vec_file *vf, const struct linetable_loc *want)
{
    struct vec_code *code = &vf->code;
    struct linetable_loc got = SENTINEL;
    struct pt_error err = {0};
    if (code->next >= code->nunits) {
        fail_msg("%s:%u: more results than the %u units of %s", vf->path, vf->lineno, code->nunits,
                 code->name);
    }
    int rc =
        find(vf->format, code->table, code->table_len, code->firstlineno, code->next, &got, &err);
    if (rc < 0) {
        fail_msg("%s:%u: %s at %u: %s", vf->path, vf->lineno, code->name, code->next, err.msg);
    }
    if (memcmp(&got, want, sizeof got) != 0) {
        fail_msg("%s:%u: %s at %u: want %d %d %d %d, got %d %d %d %d", vf->path, vf->lineno,
                 code->name, code->next, want->line, want->end_line, want->col, want->end_col,
                 got.line, got.end_line, got.col, got.end_col);
    }
    code->next++;
    vf->nchecks++;
}

static void check_run(struct vec_file *vf, const char *rest)
{
    unsigned count = 0;
    struct linetable_loc want = {-1, -1, -1, -1};
    int fields = sscanf(rest, "%u %d %d %d %d", &count, &want.line, &want.end_line, &want.col,
                        &want.end_col);
    int expected = vf->format == FMT_LOCATIONS ? 5 : 2;
    if (fields != expected) {
        fail_msg("%s:%u: bad run", vf->path, vf->lineno);
    }
    for (unsigned i = 0; i < count; i++) {
        check_one(vf, &want);
    }
}

/* Every unit was covered; for the formats that know where they end, the next one is refused. */
static void check_end(struct vec_file *vf)
{
    struct vec_code *code = &vf->code;
    if (code->next != code->nunits) {
        fail_msg("%s:%u: %s covered %u of %u units", vf->path, vf->lineno, code->name, code->next,
                 code->nunits);
    }
    if (vf->format != FMT_LNOTAB && vf->format != FMT_LNOTAB_UNSIGNED) {
        struct linetable_loc got = SENTINEL;
        struct pt_error err = {0};
        int rc = find(vf->format, code->table, code->table_len, code->firstlineno, code->nunits,
                      &got, &err);
        if (rc != -1 || err.code != PT_E_FORMAT) {
            fail_msg("%s:%u: %s answered past its end", vf->path, vf->lineno, code->name);
        }
    }
    vf->ncodes++;
}

static void check_record(struct vec_file *vf, char *line)
{
    char *rest = strchr(line, ' ');
    rest = rest != NULL ? rest + 1 : line + strlen(line);
    if (line[0] == '#' || line[0] == '\0') {
        return;
    } else if (strncmp(line, "format ", 7) == 0) {
        if (strcmp(rest, fmt_names[vf->format]) != 0) {
            fail_msg("%s: format %s, expected %s", vf->path, rest, fmt_names[vf->format]);
        }
    } else if (strncmp(line, "code ", 5) == 0) {
        vf->code.next = 0;
        int fields =
            sscanf(rest, "%159s %d %u", vf->code.name, &vf->code.firstlineno, &vf->code.nunits);
        if (fields != 3) {
            fail_msg("%s:%u: bad code record", vf->path, vf->lineno);
        }
    } else if (strncmp(line, "table ", 6) == 0) {
        parse_table(vf, rest);
    } else if (strncmp(line, "at ", 3) == 0) {
        check_run(vf, rest);
    } else if (strcmp(line, "end") == 0) {
        check_end(vf);
    } else {
        fail_msg("%s:%u: unknown record", vf->path, vf->lineno);
    }
}

static void check_vector_file(const char *name, enum fmt format)
{
    char path[512];
    snprintf(path, sizeof path, "%s/linetable/%s", TEST_DATA_DIR, name);
    struct vec_file vf = {.path = path, .format = format};
    char *text = slurp(path);
    char *line = text;
    while (*line != '\0') {
        char *eol = strchr(line, '\n');
        if (eol != NULL) {
            *eol = '\0';
        }
        vf.lineno++;
        check_record(&vf, line);
        line = eol != NULL ? eol + 1 : line + strlen(line);
    }
    free(vf.code.table);
    free(text);
    /* Each file holds some 30 (2.7, no async corpus) to 40 compiled and 12 synthetic code
     * objects, 5000+ offsets. */
    assert_true(vf.ncodes >= 44);
    assert_true(vf.nchecks >= 5000);
}

static void test_linetable_lnotab_matches_addr2line_2_7(void **state)
{
    (void)state;
    check_vector_file("v2_7.txt", FMT_LNOTAB_UNSIGNED);
}

static void test_linetable_lnotab_matches_addr2line_3_6(void **state)
{
    (void)state;
    check_vector_file("v3_6.txt", FMT_LNOTAB);
}

static void test_linetable_lnotab_matches_addr2line_3_7(void **state)
{
    (void)state;
    check_vector_file("v3_7.txt", FMT_LNOTAB);
}

static void test_linetable_lnotab_matches_addr2line_3_8(void **state)
{
    (void)state;
    check_vector_file("v3_8.txt", FMT_LNOTAB);
}

static void test_linetable_lnotab_matches_addr2line_3_9(void **state)
{
    (void)state;
    check_vector_file("v3_9.txt", FMT_LNOTAB);
}

static void test_linetable_v310_matches_co_lines_3_10(void **state)
{
    (void)state;
    check_vector_file("v3_10.txt", FMT_V310);
}

static void test_linetable_locations_matches_co_positions_3_11(void **state)
{
    (void)state;
    check_vector_file("v3_11.txt", FMT_LOCATIONS);
}

static void test_linetable_locations_matches_co_positions_3_12(void **state)
{
    (void)state;
    check_vector_file("v3_12.txt", FMT_LOCATIONS);
}

static void test_linetable_locations_matches_co_positions_3_13(void **state)
{
    (void)state;
    check_vector_file("v3_13.txt", FMT_LOCATIONS);
}

static void test_linetable_locations_matches_co_positions_3_14(void **state)
{
    (void)state;
    check_vector_file("v3_14.txt", FMT_LOCATIONS);
}

static void test_linetable_locations_matches_co_positions_3_15(void **state)
{
    (void)state;
    check_vector_file("v3_15.txt", FMT_LOCATIONS);
}

/* Hand-decoded and hostile tables. */

static struct linetable_loc expect_ok(enum fmt f, const uint8_t *buf, size_t len, int first,
                                      uint32_t at)
{
    struct linetable_loc got = SENTINEL;
    struct pt_error err = {0};
    if (find(f, buf, len, first, at, &got, &err) != 0) {
        fail_msg("%s at %u failed: %s", fmt_names[f], at, err.msg);
    }
    return got;
}

static void expect_loc(struct linetable_loc got, int line, int end_line, int col, int end_col)
{
    assert_int_equal(got.line, line);
    assert_int_equal(got.end_line, end_line);
    assert_int_equal(got.col, col);
    assert_int_equal(got.end_col, end_col);
}

/* Fails with CODE and leaves the output alone. */
static void expect_error(enum fmt f, const uint8_t *buf, size_t len, int first, uint32_t at,
                         enum pt_errcode code)
{
    struct linetable_loc got = SENTINEL;
    struct pt_error err = {0};
    assert_int_equal(find(f, buf, len, first, at, &got, &err), -1);
    assert_int_equal(err.code, code);
    assert_true(err.msg[0] != '\0');
    assert_memory_equal(&got, &SENTINEL, sizeof got);
}

static void test_linetable_locations_decodes_short_form(void **state)
{
    /* code 2, two units; column 2 << 3 | 3 = 19, end 19 + 5 */
    static const uint8_t t[] = {0x80 | 2 << 3 | 1, 0x35};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 0), 7, 7, 19, 24);
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 1), 7, 7, 19, 24);
}

static void test_linetable_locations_decodes_one_line_form(void **state)
{
    static const uint8_t t[] = {0x80 | 12 << 3, 100, 120};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 0), 9, 9, 100, 120);
}

static void test_linetable_locations_decodes_no_column_form(void **state)
{
    static const uint8_t t[] = {0x80 | 13 << 3, 3 << 1 | 1};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 0), 4, 4, -1, -1);
}

static void test_linetable_locations_decodes_long_form(void **state)
{
    /* line +200 (svarint 400), end line +2, column 299 (300), end column unknown (0) */
    static const uint8_t t[] = {0x80 | 14 << 3, 0x40 | 16, 6, 2, 0x40 | 44, 4, 0};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 0), 207, 209, 299, -1);
}

static void test_linetable_locations_no_location_keeps_the_running_line(void **state)
{
    static const uint8_t t[] = {0x80 | 15 << 3 | 2, 0x80 | 11 << 3, 1, 2};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 2), -1, -1, -1, -1);
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 7, 3), 8, 8, 1, 2);
}

static void test_linetable_locations_rejects_empty_table(void **state)
{
    static const uint8_t t[1] = {0};
    (void)state;
    expect_error(FMT_LOCATIONS, t, 0, 1, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, NULL, 0, 1, 0, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_addrq_beyond_the_table(void **state)
{
    static const uint8_t t[] = {0x80 | 2 << 3 | 1, 0x35};
    (void)state;
    expect_error(FMT_LOCATIONS, t, sizeof t, 1, 2, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, t, sizeof t, 1, UINT32_MAX, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_truncated_entries(void **state)
{
    static const uint8_t short_form[] = {0x80};
    static const uint8_t one_line[] = {0x80 | 10 << 3, 1};
    static const uint8_t cut_by_next_entry[] = {0x80, 0x80 | 15 << 3, 0};
    static const uint8_t long_form[] = {0x80 | 14 << 3, 2, 0, 1};
    (void)state;
    expect_error(FMT_LOCATIONS, short_form, sizeof short_form, 1, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, one_line, sizeof one_line, 1, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, cut_by_next_entry, sizeof cut_by_next_entry, 1, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, long_form, sizeof long_form, 1, 0, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_entry_without_marker_bit(void **state)
{
    static const uint8_t t[] = {0x80 | 15 << 3, 0x78};
    (void)state;
    expect_error(FMT_LOCATIONS, t, sizeof t, 1, 1, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_varint_that_never_ends(void **state)
{
    static const uint8_t at_end[] = {0x80 | 13 << 3, 0x41, 0x41, 0x41};
    static const uint8_t too_long[] = {0x80 | 13 << 3, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0};
    (void)state;
    expect_error(FMT_LOCATIONS, at_end, sizeof at_end, 1, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, too_long, sizeof too_long, 1, 0, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_varint_past_32_bits(void **state)
{
    /* bit 32 set in the sixth chunk */
    static const uint8_t t[] = {0x80 | 13 << 3, 0x40, 0x40, 0x40, 0x40, 0x40, 0x04};
    (void)state;
    expect_error(FMT_LOCATIONS, t, sizeof t, 1, 0, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_line_overflow(void **state)
{
    static const uint8_t plus_one[] = {0x80 | 11 << 3, 0, 0};
    static const uint8_t minus_one[] = {0x80 | 13 << 3, 1 << 1 | 1};
    /* line delta INT_MAX: svarint 0xfffffffe */
    static const uint8_t huge[] = {0x80 | 14 << 3, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0, 0, 0};
    static const uint8_t end_line[] = {0x80 | 14 << 3, 0, 5, 0, 0};
    (void)state;
    expect_error(FMT_LOCATIONS, plus_one, sizeof plus_one, INT_MAX, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, minus_one, sizeof minus_one, INT_MIN, 0, PT_E_FORMAT);
    expect_error(FMT_LOCATIONS, huge, sizeof huge, 2, 0, PT_E_FORMAT);
    expect_loc(expect_ok(FMT_LOCATIONS, huge, sizeof huge, 0, 0), INT_MAX, INT_MAX, -1, -1);
    expect_error(FMT_LOCATIONS, end_line, sizeof end_line, INT_MAX - 1, 0, PT_E_FORMAT);
}

static void test_linetable_locations_rejects_column_past_int_max(void **state)
{
    /* column + 1 = 0xffffffff */
    static const uint8_t bad[] = {0x80 | 14 << 3, 0, 0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0};
    /* column + 1 = INT_MAX */
    static const uint8_t good[] = {0x80 | 14 << 3, 0, 0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0};
    (void)state;
    expect_error(FMT_LOCATIONS, bad, sizeof bad, 1, 0, PT_E_FORMAT);
    expect_loc(expect_ok(FMT_LOCATIONS, good, sizeof good, 1, 0), 1, 1, INT_MAX - 1, -1);
}

static void test_linetable_locations_finds_entries_before_a_malformed_tail(void **state)
{
    static const uint8_t t[] = {0x80 | 2 << 3, 0x35, 0x80};
    (void)state;
    expect_loc(expect_ok(FMT_LOCATIONS, t, sizeof t, 1, 0), 1, 1, 19, 24);
    expect_error(FMT_LOCATIONS, t, sizeof t, 1, 1, PT_E_FORMAT);
}

/* A table of exactly LIMIT_LINETABLE bytes is read; a longer one is refused. */
static void test_linetable_refuses_tables_past_the_limit(void **state)
{
    uint8_t *t = malloc((size_t)LIMIT_LINETABLE + 2);
    (void)state;
    assert_non_null(t);
    memset(t, 0x80 | 15 << 3, (size_t)LIMIT_LINETABLE + 2);
    expect_loc(expect_ok(FMT_LOCATIONS, t, LIMIT_LINETABLE, 1, LIMIT_LINETABLE - 1), -1, -1, -1,
               -1);
    expect_error(FMT_LOCATIONS, t, (size_t)LIMIT_LINETABLE + 1, 1, 0, PT_E_LIMIT);
    memset(t, 0x02, (size_t)LIMIT_LINETABLE + 2);
    assert_int_equal(expect_ok(FMT_V310, t, LIMIT_LINETABLE, 1, 0).line, 3);
    expect_error(FMT_V310, t, (size_t)LIMIT_LINETABLE + 2, 1, 0, PT_E_LIMIT);
    assert_int_equal(expect_ok(FMT_LNOTAB, t, LIMIT_LINETABLE, 1, 0).line, 1);
    expect_error(FMT_LNOTAB, t, (size_t)LIMIT_LINETABLE + 2, 1, 0, PT_E_LIMIT);
    free(t);
}

static void test_linetable_v310_decodes_ranges(void **state)
{
    /* [0,2) line +1, [2,4) no line, [4,6) line +2 (the -128 did not move the line), then an
     * empty range that moves the line and a range that goes back down */
    static const uint8_t t[] = {2, 1, 2, 0x80, 2, 1, 0, 5, 4, 0xfd};
    (void)state;
    expect_loc(expect_ok(FMT_V310, t, sizeof t, 10, 0), 11, -1, -1, -1);
    assert_int_equal(expect_ok(FMT_V310, t, sizeof t, 10, 1).line, 11);
    assert_int_equal(expect_ok(FMT_V310, t, sizeof t, 10, 2).line, -1);
    assert_int_equal(expect_ok(FMT_V310, t, sizeof t, 10, 5).line, 12);
    assert_int_equal(expect_ok(FMT_V310, t, sizeof t, 10, 6).line, 14);
    assert_int_equal(expect_ok(FMT_V310, t, sizeof t, 10, 9).line, 14);
    expect_error(FMT_V310, t, sizeof t, 10, 10, PT_E_FORMAT);
}

static void test_linetable_v310_rejects_empty_table(void **state)
{
    static const uint8_t t[1] = {0};
    (void)state;
    expect_error(FMT_V310, t, 0, 1, 0, PT_E_FORMAT);
    expect_error(FMT_V310, NULL, 0, 1, 0, PT_E_FORMAT);
}

static void test_linetable_v310_rejects_odd_length(void **state)
{
    static const uint8_t t[] = {2, 1, 2};
    (void)state;
    expect_error(FMT_V310, t, sizeof t, 1, 0, PT_E_FORMAT);
}

static void test_linetable_v310_rejects_lasti_beyond_the_table(void **state)
{
    static const uint8_t t[] = {4, 1, 0, 1};
    (void)state;
    expect_error(FMT_V310, t, sizeof t, 1, 4, PT_E_FORMAT);
    expect_error(FMT_V310, t, sizeof t, 1, UINT32_MAX, PT_E_FORMAT);
}

static void test_linetable_v310_rejects_line_overflow(void **state)
{
    static const uint8_t up[] = {2, 1};
    static const uint8_t down[] = {2, 0xff};
    (void)state;
    expect_error(FMT_V310, up, sizeof up, INT_MAX, 0, PT_E_FORMAT);
    expect_error(FMT_V310, down, sizeof down, INT_MIN, 0, PT_E_FORMAT);
}

static void test_linetable_lnotab_empty_table_puts_everything_on_the_first_line(void **state)
{
    static const uint8_t t[1] = {0};
    (void)state;
    expect_loc(expect_ok(FMT_LNOTAB, t, 0, 42, 0), 42, -1, -1, -1);
    assert_int_equal(expect_ok(FMT_LNOTAB, NULL, 0, 42, 1000).line, 42);
}

static void test_linetable_lnotab_decodes_signed_increments(void **state)
{
    /* up to 6: first line; at 6: +1 +2; from 10: -2 */
    static const uint8_t t[] = {6, 1, 0, 2, 4, 0xfe};
    (void)state;
    assert_int_equal(expect_ok(FMT_LNOTAB, t, sizeof t, 100, 5).line, 100);
    assert_int_equal(expect_ok(FMT_LNOTAB, t, sizeof t, 100, 6).line, 103);
    assert_int_equal(expect_ok(FMT_LNOTAB, t, sizeof t, 100, 9).line, 103);
    assert_int_equal(expect_ok(FMT_LNOTAB, t, sizeof t, 100, 10).line, 101);
    assert_int_equal(expect_ok(FMT_LNOTAB, t, sizeof t, 100, UINT32_MAX).line, 101);
}

static void test_linetable_lnotab_rejects_odd_length(void **state)
{
    static const uint8_t t[] = {2, 1, 2};
    (void)state;
    expect_error(FMT_LNOTAB, t, sizeof t, 1, 0, PT_E_FORMAT);
}

static void test_linetable_lnotab_rejects_line_overflow(void **state)
{
    static const uint8_t up[] = {0, 1};
    static const uint8_t down[] = {0, 0x80};
    static const uint8_t later[] = {10, 1};
    (void)state;
    expect_error(FMT_LNOTAB, up, sizeof up, INT_MAX, 0, PT_E_FORMAT);
    expect_error(FMT_LNOTAB, down, sizeof down, INT_MIN, 0, PT_E_FORMAT);
    /* a pair past LASTI is not applied, so it cannot overflow */
    assert_int_equal(expect_ok(FMT_LNOTAB, later, sizeof later, INT_MAX, 9).line, INT_MAX);
    expect_error(FMT_LNOTAB, later, sizeof later, INT_MAX, 10, PT_E_FORMAT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linetable_lnotab_matches_addr2line_2_7),
        cmocka_unit_test(test_linetable_lnotab_matches_addr2line_3_6),
        cmocka_unit_test(test_linetable_lnotab_matches_addr2line_3_7),
        cmocka_unit_test(test_linetable_lnotab_matches_addr2line_3_8),
        cmocka_unit_test(test_linetable_lnotab_matches_addr2line_3_9),
        cmocka_unit_test(test_linetable_v310_matches_co_lines_3_10),
        cmocka_unit_test(test_linetable_locations_matches_co_positions_3_11),
        cmocka_unit_test(test_linetable_locations_matches_co_positions_3_12),
        cmocka_unit_test(test_linetable_locations_matches_co_positions_3_13),
        cmocka_unit_test(test_linetable_locations_matches_co_positions_3_14),
        cmocka_unit_test(test_linetable_locations_matches_co_positions_3_15),
        cmocka_unit_test(test_linetable_locations_decodes_short_form),
        cmocka_unit_test(test_linetable_locations_decodes_one_line_form),
        cmocka_unit_test(test_linetable_locations_decodes_no_column_form),
        cmocka_unit_test(test_linetable_locations_decodes_long_form),
        cmocka_unit_test(test_linetable_locations_no_location_keeps_the_running_line),
        cmocka_unit_test(test_linetable_locations_rejects_empty_table),
        cmocka_unit_test(test_linetable_locations_rejects_addrq_beyond_the_table),
        cmocka_unit_test(test_linetable_locations_rejects_truncated_entries),
        cmocka_unit_test(test_linetable_locations_rejects_entry_without_marker_bit),
        cmocka_unit_test(test_linetable_locations_rejects_varint_that_never_ends),
        cmocka_unit_test(test_linetable_locations_rejects_varint_past_32_bits),
        cmocka_unit_test(test_linetable_locations_rejects_line_overflow),
        cmocka_unit_test(test_linetable_locations_rejects_column_past_int_max),
        cmocka_unit_test(test_linetable_locations_finds_entries_before_a_malformed_tail),
        cmocka_unit_test(test_linetable_refuses_tables_past_the_limit),
        cmocka_unit_test(test_linetable_v310_decodes_ranges),
        cmocka_unit_test(test_linetable_v310_rejects_empty_table),
        cmocka_unit_test(test_linetable_v310_rejects_odd_length),
        cmocka_unit_test(test_linetable_v310_rejects_lasti_beyond_the_table),
        cmocka_unit_test(test_linetable_v310_rejects_line_overflow),
        cmocka_unit_test(test_linetable_lnotab_empty_table_puts_everything_on_the_first_line),
        cmocka_unit_test(test_linetable_lnotab_decodes_signed_increments),
        cmocka_unit_test(test_linetable_lnotab_rejects_odd_length),
        cmocka_unit_test(test_linetable_lnotab_rejects_line_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
