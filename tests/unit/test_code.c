/* Tests of code: the code-object cache filled past its limit, trusted under a generation, and
 * told a reused address, over code objects whose strings and line tables live in this
 * process's own memory (read through a real proc). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/pyobj/code.h"
#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"

/* Where the fake objects keep their fields: a code struct of 64 bytes (type, filename, name,
 * qualname, line table, first line, co_version), compact ASCII str objects as 64-bit 3.13-3.15 lay
 * them out (PyASCIIObject is 40 bytes), bytes objects with their size at 16 and data at 32. */
enum {
    CODE_SIZE = 64,
    AT_TYPE = 8,
    AT_FILENAME = 16,
    AT_NAME = 24,
    AT_QUALNAME = 32,
    AT_LINETABLE = 40,
    AT_FIRSTLINENO = 48,
    AT_VERSION = 56,
    STR_OBJ = 64, /* bytes of one fake str object: header and up to 23 characters */
    STR_DATA = 40,
    N_CODES = LIMIT_CODE_CACHE + 100, /* more than the cache holds */
    FAKE_CODE_TYPE = 0x5000,
};

static struct py_layout code_layout(void)
{
    struct py_layout L = {0};
    L.object.ob_type = AT_TYPE;
    L.code.size = CODE_SIZE;
    L.code.filename = AT_FILENAME;
    L.code.name = AT_NAME;
    L.code.qualname = AT_QUALNAME;
    L.code.linetable = AT_LINETABLE;
    L.code.firstlineno = AT_FIRSTLINENO;
    L.code.version = AT_VERSION;
    L.bytes.ob_size = 16;
    L.bytes.ob_sval = 32;
    L.unicode.state = 32;
    L.unicode.length = 16;
    L.unicode.ascii_size = STR_DATA;
    L.unicode.compact_size = 56;
    L.unicode.kind_shift = 2;
    L.unicode.compact_bit = 5;
    L.unicode.ascii_bit = 6;
    return L;
}

/* The code objects: N_CODES raw structs, each named "fNNNNNN" by a str of its own. Their
 * addresses are made up (the cache takes the struct bytes from the caller); the strings and
 * the line table are real memory. */
struct fixture {
    struct proc *proc;
    struct py_layout L;
    struct code_cache *cache;
    uint8_t *strs;     /* N_CODES + 1 str objects, the last one the file name */
    uint8_t *raw;      /* N_CODES code structs */
    uint8_t table[40]; /* one bytes object: the line table all share */
};

static void put_u64(uint8_t *buf, size_t at, uint64_t v)
{
    memcpy(buf + at, &v, sizeof v);
}

static void set_version(uint8_t *raw, uint32_t version)
{
    memcpy(raw + AT_VERSION, &version, sizeof version);
}

static void make_str(uint8_t *obj, const char *text)
{
    uint64_t length = strlen(text);
    uint32_t state = (1u << 2) | (1u << 5) | (1u << 6); /* kind 1, compact, ascii */
    memset(obj, 0, STR_OBJ);
    put_u64(obj, 16, length);
    memcpy(obj + 32, &state, sizeof state);
    memcpy(obj + STR_DATA, text, length + 1);
}

static uint64_t code_addr(size_t i)
{
    return 0x7f0000000000ull + (uint64_t)i * 0x100;
}

static const uint8_t *raw_of(const struct fixture *f, size_t i)
{
    return f->raw + i * CODE_SIZE;
}

static uint64_t str_addr(const struct fixture *f, size_t i)
{
    return (uint64_t)(uintptr_t)(f->strs + i * STR_OBJ);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct pt_error err = {0};
    assert_non_null(f);
    f->L = code_layout();
    f->proc = proc_open(getpid(), &err);
    f->cache = code_cache_new(&err);
    f->strs = malloc((size_t)(N_CODES + 1) * STR_OBJ);
    f->raw = calloc(N_CODES, CODE_SIZE);
    assert_non_null(f->proc);
    assert_non_null(f->cache);
    assert_non_null(f->strs);
    assert_non_null(f->raw);
    make_str(f->strs + (size_t)N_CODES * STR_OBJ, "/srv/app/many.py");
    put_u64(f->table, 16, 4);
    memcpy(f->table + 32, "\x01\x02\x03\x04", 4);
    for (size_t i = 0; i < N_CODES; i++) {
        char name[16];
        uint8_t *raw = f->raw + i * CODE_SIZE;
        snprintf(name, sizeof name, "f%06zu", i);
        make_str(f->strs + i * STR_OBJ, name);
        put_u64(raw, AT_TYPE, FAKE_CODE_TYPE);
        put_u64(raw, AT_FILENAME, str_addr(f, N_CODES));
        put_u64(raw, AT_NAME, str_addr(f, i));
        put_u64(raw, AT_QUALNAME, str_addr(f, i));
        put_u64(raw, AT_LINETABLE, (uint64_t)(uintptr_t)f->table);
        uint32_t first = (uint32_t)(i % 1000 + 1);
        memcpy(raw + AT_FIRSTLINENO, &first, sizeof first);
        set_version(raw, (uint32_t)(i + 1));
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    code_cache_free(f->cache);
    proc_close(f->proc);
    free(f->strs);
    free(f->raw);
    free(f);
    return 0;
}

static struct code_info *get(struct fixture *f, size_t i, struct pt_error *err)
{
    return code_cache_get(f->cache, f->proc, &f->L, FAKE_CODE_TYPE, code_addr(i), raw_of(f, i),
                          err);
}

/* The entry is code object I's: its address, names, file, first line and line table. */
static void assert_entry_of(const struct code_info *ci, size_t i)
{
    char name[16];
    int n = snprintf(name, sizeof name, "f%06zu", i);
    assert_non_null(ci);
    assert_true(ci->addr == code_addr(i));
    assert_int_equal(ci->name_len, n);
    assert_memory_equal(ci->name, name, (size_t)n);
    assert_int_equal(ci->qualname_len, n);
    assert_memory_equal(ci->qualname, name, (size_t)n);
    assert_int_equal(ci->filename_len, strlen("/srv/app/many.py"));
    assert_memory_equal(ci->filename, "/srv/app/many.py", ci->filename_len);
    assert_int_equal(ci->firstlineno, (int)(i % 1000 + 1));
    assert_int_equal(ci->linetable_len, 4);
    assert_memory_equal(ci->linetable, "\x01\x02\x03\x04", 4);
}

static void test_code_cache_full_evicts_only_entries_the_round_does_not_use(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    enum { KEPT = 10, MORE = 100 };
    code_cache_begin(f->cache);
    for (size_t i = 0; i < LIMIT_CODE_CACHE; i++) {
        assert_non_null(get(f, i, &err));
    }
    struct code_cache_counters c = code_cache_get_counters(f->cache);
    assert_int_equal(c.entries, LIMIT_CODE_CACHE);
    assert_int_equal(c.misses, LIMIT_CODE_CACHE);

    /* The next round uses KEPT of them, then meets MORE new code objects: the unused ones make
     * room, and those in use stay (the same entries, serials and names). */
    code_cache_begin(f->cache);
    struct code_info *kept[KEPT];
    uint64_t serials[KEPT];
    for (size_t i = 0; i < KEPT; i++) {
        kept[i] = get(f, i, &err);
        assert_entry_of(kept[i], i);
        serials[i] = kept[i]->serial;
    }
    for (size_t i = LIMIT_CODE_CACHE; i < LIMIT_CODE_CACHE + MORE; i++) {
        struct code_info *ci = get(f, i, &err);
        assert_entry_of(ci, i);
        for (size_t k = 0; k < KEPT; k++) {
            assert_true(ci->serial != serials[k]);
        }
    }
    c = code_cache_get_counters(f->cache);
    assert_int_equal(c.entries, KEPT + MORE);
    assert_int_equal(c.hits, KEPT);
    assert_int_equal(c.misses, LIMIT_CODE_CACHE + MORE);
    for (size_t i = 0; i < KEPT; i++) {
        assert_ptr_equal(code_cache_find(f->cache, code_addr(i)), kept[i]);
        assert_true(kept[i]->serial == serials[i]);
        assert_entry_of(kept[i], i);
    }
    /* The evicted are gone (freed: LeakSanitizer runs this test), not served stale. */
    assert_null(code_cache_find(f->cache, code_addr(KEPT)));
    assert_null(code_cache_find(f->cache, code_addr(LIMIT_CODE_CACHE - 1)));
    /* An evicted code object met again is read again, under a new serial. */
    struct code_info *again = get(f, KEPT, &err);
    assert_entry_of(again, KEPT);
    assert_int_equal(code_cache_get_counters(f->cache).misses, LIMIT_CODE_CACHE + MORE + 1);
    for (size_t i = LIMIT_CODE_CACHE; i < LIMIT_CODE_CACHE + MORE; i++) {
        assert_entry_of(code_cache_find(f->cache, code_addr(i)), i);
    }
}

static void test_code_cache_full_of_entries_in_use_refuses_one_more_until_the_next_round(
    void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    code_cache_begin(f->cache);
    for (size_t i = 0; i < LIMIT_CODE_CACHE; i++) {
        assert_non_null(get(f, i, &err));
    }
    /* Every entry is used by this round: the one more is refused, the rest stay right. */
    assert_null(get(f, LIMIT_CODE_CACHE, &err));
    assert_int_equal(err.code, PT_E_LIMIT);
    assert_int_equal(code_cache_get_counters(f->cache).entries, LIMIT_CODE_CACHE);
    assert_null(code_cache_find(f->cache, code_addr(LIMIT_CODE_CACHE)));
    for (size_t i = 0; i < LIMIT_CODE_CACHE; i += 997) {
        assert_entry_of(code_cache_find(f->cache, code_addr(i)), i);
    }
    /* In a new round nothing is in use yet: it gets its entry, and the cache holds what that
     * round uses. */
    code_cache_begin(f->cache);
    assert_entry_of(get(f, LIMIT_CODE_CACHE, &err), LIMIT_CODE_CACHE);
    assert_int_equal(code_cache_get_counters(f->cache).entries, 1);
    assert_entry_of(get(f, 5, &err), 5);
    assert_int_equal(code_cache_get_counters(f->cache).entries, 2);
}

/* The slot table starts small and grows as entries come: every entry stays found through each
 * growth, and a new generation keeps them all but vouches for none until each is checked
 * against its object again (served from the cache then: no decoding, the same serials). */
static void test_code_cache_grows_and_keeps_its_entries_over_a_new_generation(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    enum { MANY = 5000 };
    code_cache_set_generation(f->cache, 1, 0);
    code_cache_begin(f->cache);
    for (size_t i = 0; i < MANY; i++) {
        assert_entry_of(get(f, i, &err), i);
    }
    assert_int_equal(code_cache_get_counters(f->cache).entries, MANY);
    for (size_t i = 0; i < MANY; i++) {
        assert_entry_of(code_cache_find(f->cache, code_addr(i)), i);
    }
    uint64_t misses = code_cache_get_counters(f->cache).misses;
    code_cache_begin(f->cache);
    code_cache_set_generation(f->cache, 2, 0);
    assert_int_equal(code_cache_get_counters(f->cache).entries, MANY);
    for (size_t i = 0; i < MANY; i += 97) {
        assert_null(code_cache_trust(f->cache, code_addr(i)));
        assert_entry_of(get(f, i, &err), i);
        assert_non_null(code_cache_trust(f->cache, code_addr(i)));
    }
    assert_int_equal(code_cache_get_counters(f->cache).misses, misses);
}

static void test_code_cache_replaces_a_code_object_at_a_reused_address(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    code_cache_begin(f->cache);
    struct code_info *first = get(f, 1, &err);
    assert_entry_of(first, 1);
    uint64_t serial = first->serial;
    /* Another code object at the same address: code object 2's fields at 1's address. */
    struct code_info *other =
        code_cache_get(f->cache, f->proc, &f->L, FAKE_CODE_TYPE, code_addr(1), raw_of(f, 2), &err);
    assert_non_null(other);
    assert_true(other->serial != serial);
    assert_int_equal(other->name_len, 7);
    assert_memory_equal(other->name, "f000002", 7);
    assert_int_equal(code_cache_get_counters(f->cache).entries, 1);
    /* Not a code object at all: refused, as such. */
    uint8_t not_code[CODE_SIZE];
    memcpy(not_code, raw_of(f, 3), CODE_SIZE);
    put_u64(not_code, AT_TYPE, FAKE_CODE_TYPE + 8);
    assert_null(
        code_cache_get(f->cache, f->proc, &f->L, FAKE_CODE_TYPE, code_addr(3), not_code, &err));
    assert_int_equal(err.code, PT_E_BADLAYOUT);
}

static void test_code_cache_trusts_only_entries_read_under_the_current_generation(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    code_cache_begin(f->cache);
    /* Nothing vouches yet: an entry read now is never trusted. */
    assert_non_null(get(f, 1, &err));
    code_cache_set_generation(f->cache, 500, 0);
    code_cache_begin(f->cache);
    assert_null(code_cache_trust(f->cache, code_addr(1)));
    assert_null(code_cache_find(f->cache, code_addr(1)));
    /* Read (checked) under 500: trusted while the generation stays 500, and then found. */
    struct code_info *ci = get(f, 1, &err);
    code_cache_begin(f->cache);
    assert_ptr_equal(code_cache_trust(f->cache, code_addr(1)), ci);
    assert_ptr_equal(code_cache_find(f->cache, code_addr(1)), ci);
    /* Another generation: the entry stays, but is checked again before it is served. */
    code_cache_set_generation(f->cache, 501, 0);
    code_cache_begin(f->cache);
    assert_null(code_cache_trust(f->cache, code_addr(1)));
    assert_ptr_equal(get(f, 1, &err), ci);
    assert_int_equal(code_cache_get_counters(f->cache).misses, 1);
    code_cache_begin(f->cache);
    assert_ptr_equal(code_cache_trust(f->cache, code_addr(1)), ci);
    /* Another interpreter's marker: nothing read before is trusted. */
    code_cache_distrust(f->cache);
    assert_null(code_cache_trust(f->cache, code_addr(1)));
}

static void test_code_cache_counter_vouches_only_for_co_versions_it_numbered(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    /* A counter at 3 numbered code objects 1 and 2 (co_version 1, 2: codes 0 and 1); code
     * object 2 (co_version 3) was made after it was read, and code object 3 has co_version 0
     * (made once the counter wore out, or static). */
    set_version(f->raw + 3 * CODE_SIZE, 0);
    code_cache_set_generation(f->cache, 3, 3);
    code_cache_begin(f->cache);
    for (size_t i = 0; i < 4; i++) {
        assert_non_null(get(f, i, &err));
    }
    code_cache_begin(f->cache);
    assert_non_null(code_cache_trust(f->cache, code_addr(0)));
    assert_non_null(code_cache_trust(f->cache, code_addr(1)));
    assert_null(code_cache_trust(f->cache, code_addr(2)));
    assert_null(code_cache_trust(f->cache, code_addr(3)));
}

static void test_code_cache_tells_a_new_code_object_apart_by_its_co_version(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    code_cache_set_generation(f->cache, 100, 100);
    code_cache_begin(f->cache);
    struct code_info *first = get(f, 1, &err);
    assert_non_null(first);
    uint64_t serial = first->serial;
    /* The same names, file, line table and first line, at the same address: only co_version
     * says it is another code object. The generation vouched for the old one: a contradiction. */
    uint8_t again[CODE_SIZE];
    memcpy(again, raw_of(f, 1), CODE_SIZE);
    set_version(again, 77);
    code_cache_begin(f->cache);
    struct code_info *other =
        code_cache_get(f->cache, f->proc, &f->L, FAKE_CODE_TYPE, code_addr(1), again, &err);
    assert_non_null(other);
    assert_true(other->serial != serial);
    assert_int_equal(code_cache_get_counters(f->cache).contradicted, 1);
    /* Read under another generation, a replacement contradicts nothing. */
    code_cache_set_generation(f->cache, 101, 101);
    code_cache_begin(f->cache);
    assert_non_null(get(f, 1, &err));
    assert_int_equal(code_cache_get_counters(f->cache).contradicted, 1);
}

static void test_code_cache_serves_no_entry_whose_object_failed_its_check(void **state)
{
    struct fixture *f = *state;
    struct pt_error err = {0};
    code_cache_set_generation(f->cache, 100, 0);
    code_cache_begin(f->cache);
    assert_non_null(get(f, 4, &err));
    /* What is at the address now is no code object: the old entry is neither found nor
     * trusted, in this round or a later one. */
    uint8_t not_code[CODE_SIZE];
    memcpy(not_code, raw_of(f, 4), CODE_SIZE);
    put_u64(not_code, AT_TYPE, FAKE_CODE_TYPE + 8);
    code_cache_begin(f->cache);
    assert_null(
        code_cache_get(f->cache, f->proc, &f->L, FAKE_CODE_TYPE, code_addr(4), not_code, &err));
    assert_null(code_cache_find(f->cache, code_addr(4)));
    code_cache_begin(f->cache);
    assert_null(code_cache_trust(f->cache, code_addr(4)));
    assert_null(code_cache_find(f->cache, code_addr(4)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_code_cache_full_evicts_only_entries_the_round_does_not_use, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_code_cache_full_of_entries_in_use_refuses_one_more_until_the_next_round, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_code_cache_grows_and_keeps_its_entries_over_a_new_generation,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_code_cache_replaces_a_code_object_at_a_reused_address,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_code_cache_trusts_only_entries_read_under_the_current_generation, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_code_cache_counter_vouches_only_for_co_versions_it_numbered, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_code_cache_tells_a_new_code_object_apart_by_its_co_version, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_code_cache_serves_no_entry_whose_object_failed_its_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
