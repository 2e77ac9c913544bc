/* test_layout: the layouts read from real debug offsets, the code markers the layouts name, and
 * the build family a target's kind picks. */
#include "config.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/layout/gen.h"
#include "core/layout/gen_wait.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/unit/data"
#endif

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
    const struct layout_build_gen *v = layout_build_variants(0x030d, &n);
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


/* What the hand-written readers of 3.13 to 3.15 (v3_13.c, v3_14.c, v3_15.c until the debug
 * offsets were read from generated descriptions) made of each interpreter's debug offsets, in
 * tests/unit/data/layout/ (made by its capture script). N: LAYOUT_NONE. */
static const uint64_t N = LAYOUT_NONE;
static const struct captured {
    const char *file;
    uint64_t runtime_size, interp_size, threads_main, code_generation, thread_size, base_frame,
        holds_gil, exc_state, exc_state_value, frame_size, code_size, code_ob_size, compact_size,
        gi_iframe, await_slot, set_mask, gc_frame, max_struct;
    enum layout_code_marker marker;
} CAPTURED[] = {
    {"3.13.0.bin", 283320, 194968, 7352, N, 304, N, N, 256, 256, 72, 208, 16, 56, N, 0, N, N, 304,
     CODE_MARKER_NEXT_VERSION},
    {"3.13.18.bin", 283408, 194984, 7352, N, 312, N, N, 256, 256, 72, 208, 16, 56, N, 0, N, N,
     312, CODE_MARKER_NEXT_VERSION},
    {"3.13.18d.bin", 299424, 195000, 7352, N, 312, N, N, 256, 256, 72, 208, 16, 56, N, 0, N, N,
     312, CODE_MARKER_NEXT_VERSION},
    {"3.14.10.bin", 316616, 225864, 7360, 7992, 832, N, 36, 256, 256, 80, 216, 16, 56, 72, 1, 32,
     N, 832, CODE_MARKER_GENERATION},
    {"3.14.10d.bin", 332632, 225880, 7360, 7992, 832, N, 36, 256, 256, 80, 216, 16, 56, 72, 1, 32,
     N, 832, CODE_MARKER_GENERATION},
    {"3.15.2.bin", 346568, 226240, 7352, 7944, 888, 80, 36, 288, 288, 80, 216, 16, 56, 72, 2, 32,
     120, 888, CODE_MARKER_GENERATION},
    {"3.15.2d.bin", 362592, 226256, 7352, 7944, 888, 80, 36, 288, 288, 80, 216, 16, 56, 72, 2, 32,
     120, 888, CODE_MARKER_GENERATION},
};

/* Reads one captured blob into BUF and gives its version's description in *D; returns its
 * length. */
static size_t load(const char *file, uint8_t *buf, size_t size, const struct layout_debug_gen **d)
{
    char path[512];
    snprintf(path, sizeof path, "%s/layout/%s", TEST_DATA_DIR, file);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, size, f);
    fclose(f);
    uint64_t version = 0;
    assert_true(len < size && layout_read_u64(buf, len, 8, &version));
    *d = layout_debug_of((unsigned)(version >> 16) & 0xff);
    assert_non_null(*d);
    return len;
}

static void test_layout_debug_offsets_of_real_interpreters_give_the_readers_layouts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CAPTURED / sizeof CAPTURED[0]; i++) {
        const struct captured *c = &CAPTURED[i];
        uint8_t blob[4096];
        const struct layout_debug_gen *d;
        size_t len = load(c->file, blob, sizeof blob, &d);
        struct py_layout L;
        struct pt_error e = {0};
        if (layout_from_debug_offsets(blob, len, &L, &e) < 0) {
            fail_msg("%s: %s", c->file, e.msg);
        }
        const uint64_t got[] = {L.runtime.size, L.interp.size, L.interp.threads_main,
                                L.interp.code_object_generation, L.thread.size,
                                L.thread.base_frame, L.thread.holds_gil, L.thread.exc_state,
                                L.thread.exc_state_value, L.frame.size, L.code.size,
                                L.code.ob_size, L.unicode.compact_size, L.gen.gi_iframe,
                                L.gen.await_slot, L.set.mask, L.gc.frame, L.max_struct};
        const uint64_t want[] = {c->runtime_size, c->interp_size, c->threads_main,
                                 c->code_generation, c->thread_size, c->base_frame, c->holds_gil,
                                 c->exc_state, c->exc_state_value, c->frame_size, c->code_size,
                                 c->code_ob_size, c->compact_size, c->gi_iframe, c->await_slot,
                                 c->set_mask, c->gc_frame, c->max_struct};
        for (size_t k = 0; k < sizeof got / sizeof got[0]; k++) {
            if (got[k] != want[k]) {
                fail_msg("%s: value %zu is %#llx, not %#llx", c->file, k,
                         (unsigned long long)got[k], (unsigned long long)want[k]);
            }
        }
        assert_int_equal(L.code_marker, c->marker);
        assert_true(L.gil_counts_every_switch);
        assert_int_equal(L.linetable, LINETABLE_LOCATIONS);
        assert_false(L.free_threaded);
    }
}

/* The uint64_t of L a description's field fills. */
static uint64_t slot_of(const struct py_layout *L, uint32_t to)
{
    uint64_t v;
    memcpy(&v, (const unsigned char *)L + to, sizeof v);
    return v;
}

/* The reader takes exactly the struct its version describes: every field it names lands where
 * the description says, and one byte less is refused. */
static void test_layout_debug_offsets_fill_every_described_field_and_refuse_a_shorter_struct(
    void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CAPTURED / sizeof CAPTURED[0]; i++) {
        uint8_t blob[4096];
        const struct layout_debug_gen *d;
        size_t len = load(CAPTURED[i].file, blob, sizeof blob, &d);
        assert_int_equal(len, d->size);
        struct py_layout L;
        struct pt_error e = {0};
        assert_int_equal(layout_from_debug_offsets(blob, len, &L, &e), 0);
        /* Each slot holds the sum of the fields that fill it. */
        for (size_t k = 0; k < d->n_fields; k++) {
            uint64_t want = 0;
            for (size_t j = 0; j < d->n_fields; j++) {
                uint64_t v = 0;
                if (d->fields[j].to != d->fields[k].to) {
                    continue;
                }
                assert_true(layout_read_u64(blob, len, d->fields[j].at, &v));
                want = d->fields[j].add ? want + v : v;
            }
            if (slot_of(&L, d->fields[k].to) != want) {
                fail_msg("%s: %s", CAPTURED[i].file, d->fields[k].name);
            }
        }
        assert_int_equal(layout_from_debug_offsets(blob, len - 1, &L, &e), -1);
        assert_int_equal(e.code, PT_E_BADLAYOUT);
        assert_non_null(strstr(e.msg, "debug offsets truncated"));
    }
}

/* A target whose debug offsets put a field outside its own struct is refused. */
static void test_layout_debug_offsets_reject_a_field_outside_its_struct(void **state)
{
    (void)state;
    uint8_t blob[4096];
    const struct layout_debug_gen *d;
    size_t len = load("3.15.2.bin", blob, sizeof blob, &d);
    uint64_t size_at = UINT64_MAX;
    uint64_t next_at = UINT64_MAX;
    for (size_t k = 0; k < d->n_fields; k++) {
        size_at = strcmp(d->fields[k].name, "thread_state.size") == 0 ? d->fields[k].at : size_at;
        next_at = strcmp(d->fields[k].name, "thread_state.next") == 0 ? d->fields[k].at : next_at;
    }
    assert_true(size_at < len && next_at < len);
    uint64_t size = 0;
    assert_true(layout_read_u64(blob, len, size_at, &size));
    uint64_t outside = size - 4;
    memcpy(blob + next_at, &outside, sizeof outside);
    struct py_layout L;
    struct pt_error e = {0};
    assert_int_equal(layout_from_debug_offsets(blob, len, &L, &e), -1);
    assert_int_equal(e.code, PT_E_BADLAYOUT);
    assert_non_null(strstr(e.msg, "thread state"));
}

/* The lock tables (gen_wait.c) are found by major and minor: 2.7 is not 3.7. 2.7's lock is
 * "thread.lock" of 32 bytes, pointing to its semaphore, and its RLock the Python class _RLock
 * (Lib/threading.py); 3.6 and 3.7 have C RLocks recording their owner; before 3.7 the GIL is
 * globals. */
static void test_layout_wait_tables_of_27_36_and_37(void **state)
{
    (void)state;
    assert_null(layout_wait_gen(7));
    assert_null(layout_wait_gen(0x0305));
    const struct layout_wait_gen *w27 = layout_wait_gen(0x0207);
    assert_non_null(w27);
    assert_int_equal(w27->n_forms, 1);
    assert_string_equal(w27->forms[0].type_name, "thread.lock");
    assert_int_equal(w27->forms[0].basicsize, 32);
    assert_int_equal(w27->forms[0].mutex, 16);
    assert_int_equal(w27->forms[0].indirect, 1);
    assert_int_equal(w27->entry_addr, -1);
    assert_non_null(w27->py_rlock);
    assert_string_equal(w27->py_rlock->type_name, "_RLock");
    assert_string_equal(w27->py_rlock->block, "_RLock__block");
    assert_string_equal(w27->py_rlock->owner, "_RLock__owner");
    assert_string_equal(w27->py_rlock->count, "_RLock__count");
    /* Before 3.7 the GIL is globals: 2.7's a semaphore interpreter_lock points to, 3.6's the
     * condition variables and mutexes of ceval_gil.h. */
    assert_int_equal(w27->n_gil_globals, 1);
    assert_string_equal(w27->gil_globals[0].symbol, "interpreter_lock");
    assert_int_equal(w27->gil_globals[0].indirect, 1);
    const struct layout_wait_gen *w36 = layout_wait_gen(0x0306);
    assert_int_equal(w36->n_gil_globals, 4);
    for (size_t i = 0; i < w36->n_gil_globals; i++) {
        assert_int_equal(w36->gil_globals[i].indirect, 0);
        assert_true(w36->gil_globals[i].size == 40 || w36->gil_globals[i].size == 48);
    }
    assert_string_equal(w36->gil_globals[0].symbol, "gil_cond");
    assert_null(layout_wait_gen(0x0307)->gil_globals);
    for (unsigned key = 0x0306; key <= 0x0307; key++) {
        const struct layout_wait_gen *w = layout_wait_gen(key);
        assert_non_null(w);
        assert_null(w->py_rlock);
        assert_int_equal(w->n_forms, 2);
        assert_string_equal(w->forms[1].type_name, "_thread.RLock");
        assert_int_equal(w->forms[1].basicsize, 48);
        assert_int_equal(w->forms[1].owner, 24);
        assert_int_equal(w->forms[1].count, 32);
    }
    for (unsigned key = 0x0308; key <= 0x030f; key++) {
        assert_non_null(layout_wait_gen(key));
        assert_null(layout_wait_gen(key)->py_rlock);
    }
}

static void test_layout_debug_descriptions_stay_inside_their_structs(void **state)
{
    (void)state;
    unsigned described = 0;
    for (unsigned minor = 0; minor < 256; minor++) {
        const struct layout_debug_gen *d = layout_debug_of(minor);
        if (d == NULL) {
            continue;
        }
        described++;
        /* A version is read from its debug offsets or from a table, never both. */
        assert_false(layout_has_table(0x0300 | minor));
        assert_non_null(d->gen);
        assert_true(d->size >= 24 && d->size <= LIMIT_DEBUG_OFFSETS);
        for (size_t k = 0; k < d->n_fields; k++) {
            const struct layout_debug_field *f = &d->fields[k];
            assert_true(f->at >= 24 && f->at % 8 == 0 && f->at + 8 <= d->size);
            assert_true(f->to % 8 == 0 && f->to + 8 <= sizeof(struct py_layout));
            bool set_before = false;
            for (size_t j = 0; j < k; j++) {
                set_before |= d->fields[j].to == f->to;
            }
            /* An addition adds to what the same description set; nothing is set twice. */
            assert_true(f->add == set_before);
        }
    }
    assert_int_equal(described, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_debug_offsets_of_real_interpreters_give_the_readers_layouts),
        cmocka_unit_test(
            test_layout_debug_offsets_fill_every_described_field_and_refuse_a_shorter_struct),
        cmocka_unit_test(test_layout_debug_offsets_reject_a_field_outside_its_struct),
        cmocka_unit_test(test_layout_debug_descriptions_stay_inside_their_structs),
        cmocka_unit_test(test_layout_wait_tables_of_27_36_and_37),
        cmocka_unit_test(test_layout_tables_name_the_global_counter_only_where_headers_declare_it),
        cmocka_unit_test(test_layout_pick_build_takes_the_family_of_the_targets_kind),
        cmocka_unit_test(test_layout_pick_build_drops_a_counter_outside_the_interpreter_state),
        cmocka_unit_test(
            test_layout_pick_build_without_a_family_drops_the_counter_keeps_a_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
