/* test_elf_hash: lookups through .gnu.hash and .hash tables (elf_hash.c), on built images. */
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

/* Hash tables: each case builds the image with one, in every shape, changes parts of it, and
 * expects every lookup to answer as a scan of .dynsym would: a table that proves malformed on
 * the way is passed over for a scan. */
enum hpart {
    H_NONE,
    H_HEADER,       /* 32-bit word INDEX of the header */
    H_BLOOM,        /* GNU: bloom word INDEX (of the class's width) */
    H_BUCKET,       /* bucket INDEX */
    H_CHAIN,        /* chain word INDEX (GNU: of symbol INDEX + symoffset) */
    H_CHAIN_ENDLESS /* GNU: the end bit cleared in every chain word */
};

struct hchange {
    enum hpart part;
    size_t index;
    uint64_t value;
};

struct hash_case {
    enum thash hash;
    struct hchange change[3];
};

static uint32_t get32(const struct img *m, size_t off)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++) {
        unsigned shift = m->big ? 8 * (3 - i) : 8 * i;
        v |= (uint32_t)m->buf[off + i] << shift;
    }
    return v;
}

static void apply_hchange(struct img *m, const struct hchange *c)
{
    unsigned word = m->is64 ? 8 : 4;
    switch (c->part) {
    case H_NONE:
        break;
    case H_HEADER:
        put(m, m->off[SEC_HASH] + 4 * c->index, 4, c->value);
        break;
    case H_BLOOM:
        put(m, m->bloom_off + word * c->index, word, c->value);
        break;
    case H_BUCKET:
        put(m, m->buckets_off + 4 * c->index, 4, c->value);
        break;
    case H_CHAIN:
        put(m, m->chain_off + 4 * c->index, 4, c->value);
        break;
    case H_CHAIN_ENDLESS:
        for (size_t i = 0; i + 1 < DYN_SYMS; i++) {
            put(m, m->chain_off + 4 * i, 4, get32(m, m->chain_off + 4 * i) & ~1u);
        }
        break;
    }
}

static void check_hash_case(void **state)
{
    const struct hash_case *c = *state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build_hashed(&m, shapes[s].is64, shapes[s].big, c->hash);
        for (size_t i = 0; i < sizeof c->change / sizeof c->change[0]; i++) {
            apply_hchange(&m, &c->change[i]);
        }
        expect_usable(&m, true);
        free(m.buf);
    }
}

static const struct CMUnitTest hash_tests[] = {
    {"test_elf_finds_symbols_through_a_gnu_hash_table", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{0}}}},
    {"test_elf_finds_symbols_through_a_sysv_hash_table", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{0}}}},
    {"test_elf_gnu_hash_with_no_buckets_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 0, 0}}}},
    {"test_elf_gnu_hash_with_a_bloom_size_not_a_power_of_two_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 3}}}},
    {"test_elf_gnu_hash_with_an_empty_bloom_filter_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 0}}}},
    {"test_elf_gnu_hash_with_a_bloom_shift_past_the_hash_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 3, 32}}}},
    {"test_elf_gnu_hash_with_more_buckets_than_it_holds_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 0, 0xffffffff}}}},
    {"test_elf_gnu_hash_with_a_bloom_filter_larger_than_the_file_is_passed_over", check_hash_case,
     NULL, NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 0x80000000}}}},
    {"test_elf_gnu_hash_starting_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 1, 1000}}}},
    {"test_elf_gnu_hash_bucket_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){
         HASH_GNU, {{H_BLOOM, 0, UINT64_MAX}, {H_BLOOM, 1, UINT64_MAX}, {H_BUCKET, 0, 1000}}}},
    {"test_elf_gnu_hash_chain_without_an_end_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){
         HASH_GNU, {{H_BLOOM, 0, UINT64_MAX}, {H_BLOOM, 1, UINT64_MAX}, {H_CHAIN_ENDLESS, 0, 0}}}},
    {"test_elf_sysv_hash_with_no_buckets_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_HEADER, 0, 0}}}},
    {"test_elf_sysv_hash_with_more_buckets_than_it_holds_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 0, 0xffffffff}}}},
    {"test_elf_sysv_hash_with_more_chain_entries_than_it_holds_is_passed_over", check_hash_case,
     NULL, NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 1, 0xffffffff}}}},
    {"test_elf_sysv_hash_chain_shorter_than_the_symbols_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 1, 2}}}},
    {"test_elf_sysv_hash_bucket_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_BUCKET, 2, 1000}}}},
    {"test_elf_sysv_hash_chain_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_CHAIN, 3, 1000}}}},
    {"test_elf_sysv_hash_chain_that_loops_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_CHAIN, 3, 3}}}},
};

static void test_elf_hash_tables_cut_short_anywhere_are_passed_over(void **state)
{
    (void)state;
    for (enum thash h = HASH_GNU; h <= HASH_SYSV; h++) {
        for (size_t s = 0; s < SHAPES; s++) {
            struct img m;
            build_hashed(&m, shapes[s].is64, shapes[s].big, h);
            for (size_t size = 0; size < m.size[SEC_HASH]; size++) {
                set_sh(&m, SEC_HASH, sh_size, size);
                expect_usable(&m, true);
            }
            /* Past the end of the file: not parsed at all. */
            set_sh(&m, SEC_HASH, sh_offset, m.len - 4);
            set_sh(&m, SEC_HASH, sh_size, m.size[SEC_HASH]);
            expect_usable(&m, true);
            free(m.buf);
        }
    }
}

/* Symbols before symoffset are not in the table: a bucket that leads there is malformed. (The
 * rest of this table is misread from then on, so only the name of that bucket is asked.) */
static void test_elf_gnu_hash_bucket_before_its_symoffset_is_passed_over(void **state)
{
    (void)state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build_hashed(&m, shapes[s].is64, shapes[s].big, HASH_GNU);
        apply_hchange(&m, &(struct hchange){H_HEADER, 1, 2});
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_symbol sym;
        assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, NULL), 0);
        assert_int_equal(sym.value, 0x403000);
        elf_close(e);
        free(m.buf);
    }
}

/* A lookup through the table reads the symbols of one chain: a malformed symbol elsewhere,
 * which a scan of .dynsym trips over, does not stop it. */
static void test_elf_find_symbol_reads_only_the_chain_the_hash_table_gives(void **state)
{
    (void)state;
    for (enum thash h = HASH_NONE; h <= HASH_SYSV; h++) {
        for (size_t s = 0; s < SHAPES; s++) {
            struct img m;
            build_hashed(&m, shapes[s].is64, shapes[s].big, h);
            set_sym(&m, SEC_DYNSYM, 1, st_name, m.size[SEC_DYNSTR]);
            struct pt_error err = {0};
            struct elf *e = elf_open_buf(m.buf, m.len, &err);
            assert_non_null(e);
            struct elf_symbol sym = {0};
            assert_int_equal(elf_find_symbol(e, "shared", &sym, &err), h == HASH_NONE ? -1 : 0);
            assert_int_equal(sym.value, h == HASH_NONE ? 0 : 0x1111);
            elf_close(e);
            /* A symbol the chain does lead to is read, and checked, as a scan reads it. */
            set_sym(&m, SEC_DYNSYM, 3, st_name, m.size[SEC_DYNSTR]);
            e = elf_open_buf(m.buf, m.len, &err);
            assert_int_equal(elf_find_symbol(e, "shared", &sym, &err), -1);
            assert_int_equal(err.code, PT_E_FORMAT);
            elf_close(e);
            free(m.buf);
        }
    }
}

/* A well-formed table is the word on .dynsym, as it is for the dynamic linker: a name its bucket
 * does not lead to is not in .dynsym. */
static void test_elf_find_symbol_takes_an_empty_bucket_for_absence(void **state)
{
    (void)state;
    for (enum thash h = HASH_GNU; h <= HASH_SYSV; h++) {
        struct img m;
        build_hashed(&m, true, false, h);
        apply_hchange(&m, &(struct hchange){H_BUCKET, h == HASH_GNU ? 0 : 2, 0});
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_symbol sym;
        assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, NULL), 1);
        assert_int_equal(elf_find_symbol(e, "shared", &sym, NULL), 0);
        elf_close(e);
        free(m.buf);
    }
}

/* elf_find_symbols(): each table read once for all names; .symtab skipped for an exported name
 * once another was found in .dynsym, and not read at all when no name is left for it. */
static void test_elf_find_symbols_looks_in_symtab_only_for_what_dynsym_may_lack(void **state)
{
    (void)state;
    for (enum thash h = HASH_NONE; h <= HASH_SYSV; h++) {
        struct img m;
        build_hashed(&m, false, true, h);
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_lookup q[4] = {{.name = "_PyRuntime", .exported = true},
                                  {.name = "interp_head", .exported = true},
                                  {.name = "shared"},
                                  {.name = "missing"}};
        assert_int_equal(elf_find_symbols(e, q, 4, NULL), 0);
        assert_int_equal(q[0].found, 0);
        assert_int_equal(q[0].sym.value, 0x403000);
        assert_int_equal(q[1].found, 1); /* exported, and the exports are in .dynsym */
        assert_int_equal(q[2].found, 0);
        assert_int_equal(q[2].sym.value, 0x1111); /* .dynsym's, not .symtab's */
        assert_int_equal(q[3].found, 1);
        q[0].exported = false;
        assert_int_equal(elf_find_symbols(e, q, 2, NULL), 0);
        assert_int_equal(q[1].found, 0); /* no other exported name found */
        assert_int_equal(q[1].sym.value, 0x404000);
        assert_int_equal(elf_find_symbols(e, q, 0, NULL), 0);
        elf_close(e);
        /* A .symtab whose names cannot be read: no matter while .dynsym answers everything. */
        set_sh(&m, SEC_STRTAB, sh_size, m.size[SEC_STRTAB] - 1);
        e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct pt_error err = {0};
        q[0].exported = true;
        assert_int_equal(elf_find_symbols(e, q, 2, &err), 0);
        assert_int_equal(q[0].found, 0);
        assert_int_equal(q[1].found, 1);
        assert_int_equal(err.code, PT_OK);
        assert_int_equal(elf_find_symbols(e, &q[1], 1, &err), -1);
        assert_int_equal(err.code, PT_E_FORMAT);
        elf_close(e);
        free(m.buf);
    }
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_hash_tables_cut_short_anywhere_are_passed_over),
        cmocka_unit_test(test_elf_gnu_hash_bucket_before_its_symoffset_is_passed_over),
        cmocka_unit_test(test_elf_find_symbol_reads_only_the_chain_the_hash_table_gives),
        cmocka_unit_test(test_elf_find_symbol_takes_an_empty_bucket_for_absence),
        cmocka_unit_test(test_elf_find_symbols_looks_in_symtab_only_for_what_dynsym_may_lack),
    };
    return cmocka_run_group_tests_name("built images", tests, NULL, NULL) +
           cmocka_run_group_tests_name("hash tables", hash_tests, NULL, NULL);
}
