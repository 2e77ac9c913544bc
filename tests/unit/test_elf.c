/* test_elf: elf.c against real Python binaries and against hostile images built in memory. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/target/elf.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "elf_fixture.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/unit/data"
#endif

static const char expected_path[] = TEST_DATA_DIR "/elf/expected.txt";

/* Real binaries: expected.txt holds what readelf and /proc/PID/maps said (make-expected.sh).
 * describe() writes to OUT, in that format, what E says about the subject of LINE. */
static void describe(const struct elf *e, const char *line, char *out, size_t size)
{
    char kind[16];
    char path[512];
    char name[128];
    uint64_t v[3] = {0};
    struct pt_error err = {0};
    int rc = -2;
    char source[128];
    assert_int_equal(sscanf(line, "%15s %511s %127s", kind, path, name), 3);
    if (strstr(kind, "filesymbol") != NULL &&
        sscanf(line, "%*s %*s %127s %127s", source, name) == 2) {
        struct elf_lookup q = {.name = name, .file = source};
        rc = elf_find_symbols(e, &q, 1, &err);
        rc = rc < 0 ? rc : q.found;
        snprintf(out, size, "filesymbol %s %s %s 0x%" PRIx64 " 0x%" PRIx64 "\n", path, source,
                 name, q.sym.value, q.sym.size);
        if (rc == 1) {
            snprintf(out, size, "nofilesymbol %s %s %s\n", path, source, name);
            return;
        }
    } else if (strstr(kind, "section") != NULL) {
        struct elf_section sec = {0};
        rc = elf_find_section(e, name, &sec, &err);
        snprintf(out, size, "section %s %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 "\n", path, name,
                 sec.addr, sec.offset, sec.size);
    } else if (strstr(kind, "symbol") != NULL) {
        struct elf_symbol sym = {0};
        rc = elf_find_symbol(e, name, &sym, &err);
        snprintf(out, size, "symbol %s %s 0x%" PRIx64 " 0x%" PRIx64 "\n", path, name, sym.value,
                 sym.size);
    } else if (strcmp(kind, "bias") == 0 &&
               sscanf(line, "%*s %*s %" SCNx64 " %" SCNx64, &v[0], &v[1]) == 2) {
        rc = elf_load_bias(e, v[0], v[1], &v[2], &err);
        snprintf(out, size, "bias %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 "\n", path, v[0], v[1],
                 v[2]);
    }
    if (rc == 1) {
        snprintf(out, size, "no%s %s %s\n", kind + (kind[0] == 'n' ? 2 : 0), path, name);
    } else if (rc < 0) {
        snprintf(out, size, "error (%s)\n", rc == -2 ? "unknown line" : err.msg);
    }
}

/* Checks E against every line of expected.txt about PATH. Returns the number of lines checked,
 * or -1 when expected.txt describes a file of another size (another build) at PATH. */
static int check_against_expected(const struct elf *e, const char *path, long long size)
{
    FILE *f = fopen(expected_path, "r");
    assert_non_null(f);
    char line[1024];
    int checked = 0;
    while (checked >= 0 && fgets(line, sizeof line, f) != NULL) {
        char file[512];
        long long file_size;
        char got[1024];
        if (line[0] == '#' || sscanf(line, "%*s %511s", file) != 1 || strcmp(file, path) != 0) {
            continue;
        }
        if (sscanf(line, "file %*s %lld", &file_size) == 1) {
            checked = file_size == size ? 0 : -1;
            continue;
        }
        describe(e, line, got, sizeof got);
        if (strcmp(got, line) != 0) {
            print_error("expected: %s     got: %s", line, got);
            fail();
        }
        checked++;
    }
    fclose(f);
    return checked;
}

struct real_binary {
    const char *path;
    bool dyn;
};

static void check_real_binary(void **state)
{
    const struct real_binary *b = *state;
    int fd = open(b->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        print_message("skipped: %s is not installed\n", b->path);
        skip();
    }
    struct stat st;
    struct pt_error err = {0};
    assert_int_equal(fstat(fd, &st), 0);
    struct elf *e = elf_open_fd(fd, &err);
    close(fd);
    assert_string_equal(err.msg, ""); /* shows why the open failed */
    assert_non_null(e);
    assert_int_equal(elf_is_dyn(e), b->dyn);
    int checked = check_against_expected(e, b->path, (long long)st.st_size);
    elf_close(e);
    if (checked < 0) {
        print_message("skipped: %s is not the build expected.txt describes "
                      "(rerun tests/unit/data/elf/make-expected.sh)\n",
                      b->path);
        skip();
    }
    /* Six section and symbol lines per binary, then one bias line per mapping. */
    assert_true(checked >= 8);
}

static const struct CMUnitTest real_binary_tests[] = {
    {"test_elf_finds_pyruntime_section_and_symbol_in_debian_python315", check_real_binary, NULL,
     NULL, &(struct real_binary){"/var/cache/pytop-pythons/root/usr/bin/python3.15", false}},
    {"test_elf_finds_debug_symbols_through_the_hash_table_of_debian_python315d", check_real_binary,
     NULL, NULL, &(struct real_binary){"/var/cache/pytop-pythons/root/usr/bin/python3.15d", false}},
    {"test_elf_finds_pyruntime_section_and_symbol_in_pyenv_libpython312", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", true}},
    {"test_elf_finds_pyruntime_symbol_but_no_section_in_pyenv_libpython39", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0", true}},
    {"test_elf_finds_local_interp_head_in_symtab_of_pyenv_libpython36", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.6.15/lib/libpython3.6m.so.1.0", true}},
    {"test_elf_tells_apart_the_main_thread_of_two_files_in_pyenv_libpython27", check_real_binary,
     NULL, NULL,
     &(struct real_binary){"/root/.pyenv/versions/2.7.18/lib/libpython2.7.so.1.0", true}},
};

static void test_elf_open_rejects_every_truncation(void **state)
{
    (void)state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build(&m, shapes[s].is64, shapes[s].big);
        size_t full = m.len;
        for (m.len = 0; m.len < full; m.len++) {
            uint8_t *copy;
            struct pt_error err = {0};
            assert_null(open_copy(&m, m.len, &copy, &err));
            assert_int_equal(err.code, PT_E_FORMAT);
            free(copy);
        }
        free(m.buf);
    }
    struct pt_error err = {0};
    assert_null(elf_open_buf(NULL, 64, &err));
    assert_int_equal(err.code, PT_E_FORMAT);
}

/* Altered images: each case changes a built image (in every shape) and expects
 * STEP to fail with PT_E_FORMAT, or the image to stay usable. A change sets FIELD of record
 * INDEX (the ELF header, a section header, a .dynsym entry, or byte INDEX of e_ident) to BASE +
 * VALUE, where BASE is 0, the file's length, or the size of the section it names. */
enum record { NO_RECORD, IDENT, EHDR, SHDR, DYNSYM };
enum { ZERO = -1, FILE_LEN = -2 };
enum step { AT_OPEN, AT_SECTION, AT_SYMBOL, USABLE, USABLE_WITHOUT_SECTIONS };

struct change {
    enum record record;
    size_t index;
    const struct tfield *field;
    int base;
    uint64_t value;
};

struct altered {
    enum step step;
    struct change change[6];
};

static void apply_change(struct img *m, const struct change *c)
{
    uint64_t base = c->base == FILE_LEN ? m->len : c->base == ZERO ? 0 : m->size[c->base];
    uint64_t v = base + c->value; /* wraps on purpose: FILE_LEN with -8 is 8 bytes before the end */
    switch (c->record) {
    case NO_RECORD:
        break;
    case IDENT:
        m->buf[c->index] = (uint8_t)v;
        break;
    case EHDR:
        set_eh(m, *c->field, v);
        break;
    case SHDR:
        set_sh(m, c->index, *c->field, v);
        break;
    case DYNSYM:
        set_sym(m, SEC_DYNSYM, c->index, *c->field, v);
        break;
    }
}

static void check_altered(void **state)
{
    const struct altered *a = *state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build(&m, shapes[s].is64, shapes[s].big);
        for (size_t i = 0; i < sizeof a->change / sizeof a->change[0]; i++) {
            apply_change(&m, &a->change[i]);
        }
        if (a->step == USABLE || a->step == USABLE_WITHOUT_SECTIONS) {
            expect_usable(&m, a->step == USABLE);
            free(m.buf);
            continue;
        }
        uint8_t *copy;
        struct pt_error err = {0};
        struct elf *e = open_copy(&m, m.len, &copy, &err);
        struct elf_section sec;
        struct elf_symbol sym;
        if (a->step == AT_OPEN) {
            assert_null(e);
        } else {
            assert_non_null(e);
            assert_int_equal(a->step == AT_SECTION ? elf_find_section(e, ".PyRuntime", &sec, &err)
                                                   : elf_find_symbol(e, "interp_head", &sym, &err),
                             -1);
        }
        assert_int_equal(err.code, PT_E_FORMAT);
        assert_true(err.msg[0] != '\0');
        elf_close(e); /* NULL after a failed open: elf_close() accepts it */
        free(copy);
        free(m.buf);
    }
}

static const struct CMUnitTest altered_image_tests[] = {
    {"test_elf_answers_lookups_in_every_class_and_byte_order", check_altered, NULL, NULL,
     &(struct altered){USABLE, {{0}}}},
    {"test_elf_open_follows_extended_section_numbering", check_altered, NULL, NULL,
     &(struct altered){USABLE,
                       {{EHDR, 0, &eh_shnum, ZERO, 0},
                        {SHDR, 0, &sh_size, ZERO, SEC_COUNT},
                        {EHDR, 0, &eh_shstrndx, ZERO, 0xffff},
                        {SHDR, 0, &sh_link, ZERO, SEC_SHSTRTAB},
                        {EHDR, 0, &eh_phnum, ZERO, 0xffff},
                        {SHDR, 0, &sh_info, ZERO, 2}}}},
    {"test_elf_open_accepts_an_image_without_sections", check_altered, NULL, NULL,
     &(struct altered){USABLE_WITHOUT_SECTIONS,
                       {{EHDR, 0, &eh_shoff, ZERO, 0}, {EHDR, 0, &eh_shnum, ZERO, 0}}}},
    {"test_elf_open_rejects_bad_magic", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 1, NULL, ZERO, 'e'}}}},
    {"test_elf_open_rejects_unknown_class", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 4, NULL, ZERO, 3}}}},
    {"test_elf_open_rejects_unknown_byte_order", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 5, NULL, ZERO, 0}}}},
    {"test_elf_open_rejects_unknown_version", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 6, NULL, ZERO, 2}}}},
    {"test_elf_open_rejects_section_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_section_table_offset_that_overflows", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shoff, ZERO, UINT64_MAX - 8}}}},
    {"test_elf_open_rejects_section_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shnum, ZERO, 0xfeff}}}},
    {"test_elf_open_rejects_section_entries_of_zero_bytes", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shentsize, ZERO, 0}}}},
    {"test_elf_open_rejects_section_entries_smaller_than_a_header", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shentsize, ZERO, 39}}}},
    {"test_elf_open_rejects_section_name_index_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shstrndx, ZERO, SEC_COUNT}}}},
    {"test_elf_open_rejects_reserved_section_name_index", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shstrndx, ZERO, 0xff00}}}},
    {"test_elf_open_rejects_xindex_section_name_index_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shstrndx, ZERO, 0xffff}, {SHDR, 0, &sh_link, ZERO, 999}}}},
    {"test_elf_open_rejects_extended_section_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shnum, ZERO, 0}, {SHDR, 0, &sh_size, ZERO, 0xffffffff}}}},
    {"test_elf_open_rejects_extended_numbering_with_section_zero_past_end_of_file", check_altered,
     NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shnum, ZERO, 0}, {EHDR, 0, &eh_shoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_extended_segment_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){
         AT_OPEN, {{EHDR, 0, &eh_phnum, ZERO, 0xffff}, {SHDR, 0, &sh_info, ZERO, 0x7fffffff}}}},
    {"test_elf_open_rejects_extended_segment_count_without_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_phnum, ZERO, 0xffff},
                        {EHDR, 0, &eh_shoff, ZERO, 0},
                        {EHDR, 0, &eh_shnum, ZERO, 0}}}},
    {"test_elf_open_rejects_program_header_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_program_header_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phnum, ZERO, 0xfffe}}}},
    {"test_elf_open_rejects_program_headers_smaller_than_a_header", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phentsize, ZERO, 8}}}},
    {"test_elf_find_section_rejects_name_past_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_PYRUNTIME, &sh_name, SEC_SHSTRTAB, 0}}}},
    {"test_elf_find_section_rejects_string_table_without_nul", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, SEC_SHSTRTAB, -1}}}},
    {"test_elf_find_section_rejects_empty_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, ZERO, 0}}}},
    {"test_elf_find_section_rejects_string_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_offset, FILE_LEN, -4}}}},
    {"test_elf_find_section_rejects_string_table_size_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, ZERO, ~0u}}}},
    {"test_elf_find_symbol_rejects_size_not_a_multiple_of_entsize", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_size, SEC_DYNSYM, -1}}}},
    {"test_elf_find_symbol_rejects_entsize_zero", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_SYMTAB, &sh_entsize, ZERO, 0}}}},
    {"test_elf_find_symbol_rejects_entries_smaller_than_a_symbol", check_altered, NULL, NULL,
     &(struct altered){
         AT_SYMBOL,
         {{SHDR, SEC_SYMTAB, &sh_entsize, ZERO, 4}, {SHDR, SEC_SYMTAB, &sh_size, ZERO, 8}}}},
    {"test_elf_find_symbol_rejects_symbol_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_size, ZERO, 0xfffffff0}}}},
    {"test_elf_find_symbol_rejects_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_offset, FILE_LEN, -16}}}},
    {"test_elf_find_symbol_rejects_table_offset_that_overflows", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_offset, ZERO, UINT64_MAX - 8}}}},
    {"test_elf_find_symbol_rejects_string_table_link_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_link, ZERO, SEC_COUNT}}}},
    {"test_elf_find_symbol_rejects_string_table_without_nul", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSTR, &sh_size, SEC_DYNSTR, -1}}}},
    {"test_elf_find_symbol_rejects_name_past_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{DYNSYM, 1, &st_name, SEC_DYNSTR, 0}}}},
};

static void test_elf_open_refuses_more_sections_than_the_limit(void **state)
{
    (void)state;
    struct img m;
    build(&m, true, false);
    /* A zeroed table after the image, whose section 0 gives the count: it fits in the file. */
    size_t count = LIMIT_ELF_SECTIONS + 1;
    m.cap = m.len = IMG_CAP + count * 64;
    m.buf = realloc(m.buf, m.cap);
    assert_non_null(m.buf);
    memset(m.buf + IMG_CAP, 0, m.cap - IMG_CAP);
    m.shoff = IMG_CAP;
    set_eh(&m, eh_shoff, IMG_CAP);
    set_eh(&m, eh_shnum, 0);
    set_eh(&m, eh_shstrndx, 0);
    set_sh(&m, 0, sh_size, count);
    struct pt_error err = {0};
    assert_null(elf_open_buf(m.buf, m.len, &err));
    assert_int_equal(err.code, PT_E_LIMIT);
    set_sh(&m, 0, sh_size, count - 1);
    struct elf *e = elf_open_buf(m.buf, m.len, &err);
    assert_non_null(e);
    elf_close(e);
    free(m.buf);
}

static void test_elf_find_symbol_refuses_more_symbols_than_the_limit(void **state)
{
    (void)state;
    struct img m;
    build(&m, false, true);
    /* The table starts at offset 0 and runs over the whole (mostly zero) file: it fits. */
    size_t bytes = ((size_t)LIMIT_ELF_SYMBOLS + 1) * 16;
    m.buf = realloc(m.buf, bytes);
    assert_non_null(m.buf);
    memset(m.buf + IMG_CAP, 0, bytes - IMG_CAP);
    m.cap = m.len = bytes;
    set_sh(&m, SEC_DYNSYM, sh_offset, 0);
    set_sh(&m, SEC_DYNSYM, sh_size, bytes);
    struct pt_error err = {0};
    struct elf *e = elf_open_buf(m.buf, m.len, &err);
    assert_non_null(e);
    struct elf_symbol sym;
    assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, &err), -1);
    assert_int_equal(err.code, PT_E_LIMIT);
    elf_close(e);
    free(m.buf);
}

/* Load bias, on program headers written over the built image's (unused slots are PT_NULL). */

enum { NO_BIAS = 1 }; /* a real bias is page-aligned, so never 1 */

struct bias_case {
    struct tload loads[PHDR_SLOTS];
    struct {
        uint64_t start;
        uint64_t offset;
        uint64_t bias;
    } maps[4]; /* ends at start 0 */
};

static void check_bias_case(void **state)
{
    const struct bias_case *c = *state;
    struct img m;
    build(&m, true, false);
    set_eh(&m, eh_type, 3);
    write_program_headers(&m, c->loads, PHDR_SLOTS);
    struct elf *e = elf_open_buf(m.buf, m.len, NULL);
    assert_non_null(e);
    assert_true(elf_is_dyn(e));
    for (size_t i = 0; i < 4 && c->maps[i].start != 0; i++) {
        struct pt_error err = {0};
        uint64_t bias = NO_BIAS;
        int rc = elf_load_bias(e, c->maps[i].start, c->maps[i].offset, &bias, &err);
        assert_int_equal(bias, c->maps[i].bias);
        assert_int_equal(rc, bias == NO_BIAS ? -1 : 0);
        assert_int_equal(err.code, bias == NO_BIAS ? PT_E_FORMAT : PT_OK);
    }
    elf_close(e);
    free(m.buf);
}

static const struct CMUnitTest load_bias_tests[] = {
    {"test_elf_load_bias_is_zero_for_debian_exec_with_page_below_first_segment", check_bias_case,
     NULL, NULL,
     &(struct bias_case){{{PT_LOAD, 0, 0x3ff000, 0x1000, 0x1000},
                          {PT_LOAD, 0x1000, 0x400000, 0x24ec0, 0x1000},
                          {PT_LOAD, 0x7e6d90, 0xbe6d90, 0xae570, 0x1000}},
                         {{0x3ff000, 0, 0}, {0x400000, 0x1000, 0}, {0xbe6000, 0x7e6000, 0}}}},
    /* libpython3.12: the second segment's last page is also the third one's first. */
    {"test_elf_load_bias_prefers_the_segment_that_starts_on_a_shared_page", check_bias_case, NULL,
     NULL,
     &(struct bias_case){{{PT_LOAD, 0, 0, 0x105130, 0x1000},
                          {PT_LOAD, 0x379000, 0x379000, 0x1530c8, 0x1000},
                          {PT_LOAD, 0x4cc6d0, 0x4cd6d0, 0x1e6118, 0x1000}},
                         {{0x7f0000200000, 0, 0x7f0000200000},
                          {0x7f0000579000, 0x379000, 0x7f0000200000},
                          {0x7f00006cd000, 0x4cc000, 0x7f0000200000}}}},
    {"test_elf_load_bias_follows_a_mapping_split_by_relro", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0, 0, 0x105130, 0x1000}, {PT_LOAD, 0x4cc6d0, 0x4cd6d0, 0x1e6118, 0x1000}},
         {{0x7f0000744000, 0x543000, 0x7f0000200000},
          {0x7f0000205000, 0x5000, 0x7f0000200000},
          {0x7f00008b3000, 0x6b3000, NO_BIAS},
          {0x7f0000205800, 0x5800, NO_BIAS}}}},
    /* Loaded at 0xaaaa00000000 by a kernel with 64 KiB pages (aarch64), or with 4 KiB ones. */
    {"test_elf_load_bias_accepts_pages_of_p_align", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0, 0, 0x2345, 0x10000}, {PT_LOAD, 0x12345, 0x22345, 0x1000, 0x10000}},
         {{0xaaaa00020000, 0x10000, 0xaaaa00000000},
          {0xaaaa00022000, 0x12000, 0xaaaa00000000},
          {0xaaaa00030000, 0x20000, NO_BIAS}}}},
    /* Rounded to its 2 MiB p_align, the first segment would also start at offset 0. */
    {"test_elf_load_bias_prefers_4k_pages_to_p_align_pages", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0x1f0e10, 0x3f0e10, 0x1000, 0x200000}, {PT_LOAD, 0, 0, 0x1f0000, 0x200000}},
         {{0x7f0000000000, 0, 0x7f0000000000}, {0x7f00003f0000, 0x1f0000, 0x7f0000000000}}}},
    {"test_elf_load_bias_ignores_segments_not_loaded_from_the_file", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_DYNAMIC, 0x5000, 0x5000, 0x100, 0x1000},
          {PT_LOAD, 0x6000, 0x6000, 0, 0x1000},
          {PT_LOAD, 0, 0x1000, 0x1000, 0x1000}},
         {{0x10000, 0x5000, NO_BIAS}, {0x10000, 0x6000, NO_BIAS}, {0x10000, 0, 0xf000}}}},
    {"test_elf_load_bias_rejects_a_segment_that_wraps_around", check_bias_case, NULL, NULL,
     &(struct bias_case){{{PT_LOAD, UINT64_MAX - 0xfff, 0, 0x2000, 0x1000}},
                         {{0x10000, UINT64_MAX - 0xfff, NO_BIAS}}}},
};

static int temp_file(const void *data, size_t len)
{
    char path[] = "/tmp/test_elf.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    return fd;
}

/* Grows the file open on FD to SIZE (if not 0), checks that elf_open_fd() refuses it with CODE,
 * and closes FD. */
static void expect_fd_refused(int fd, off_t size, enum pt_errcode code)
{
    struct pt_error err = {0};
    assert_true(size == 0 || ftruncate(fd, size) == 0);
    assert_null(elf_open_fd(fd, &err));
    assert_int_equal(err.code, code);
    if (fd >= 0) {
        close(fd);
    }
}

static void test_elf_open_fd_maps_regular_elf_files_and_refuses_the_rest(void **state)
{
    (void)state;
    struct img m;
    build(&m, false, true);
    int fd = temp_file(m.buf, m.len);
    struct pt_error err = {0};
    struct elf *e = elf_open_fd(fd, &err);
    close(fd);
    assert_non_null(e);
    struct elf_symbol sym; /* the mapping outlives the fd */
    assert_int_equal(elf_find_symbol(e, "interp_head", &sym, &err), 0);
    assert_int_equal(sym.value, 0x404000);
    elf_close(e);
    expect_fd_refused(temp_file(m.buf, m.len), (off_t)LIMIT_ELF_FILE + 1, PT_E_LIMIT);
    expect_fd_refused(temp_file("#!/bin/sh\n", 10), 0, PT_E_FORMAT);
    expect_fd_refused(temp_file("", 0), 0, PT_E_FORMAT);
    expect_fd_refused(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0, PT_E_IO);
    expect_fd_refused(-1, 0, PT_E_IO);
    free(m.buf);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_open_rejects_every_truncation),
        cmocka_unit_test(test_elf_open_refuses_more_sections_than_the_limit),
        cmocka_unit_test(test_elf_find_symbol_refuses_more_symbols_than_the_limit),
        cmocka_unit_test(test_elf_open_fd_maps_regular_elf_files_and_refuses_the_rest),
    };
    int failed = cmocka_run_group_tests_name("real binaries", real_binary_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("built images", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("altered images", altered_image_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("load bias", load_bias_tests, NULL, NULL);
    return failed;
}
