/* test_snapshot: the snapshot arena, warnings, state words, the command line and string order. */
#include "config.h"

#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/model/snapshot_words.h"
#include "snapshot_fixture.h"

static void test_snapshot_alloc_gives_zeroed_aligned_separate_blocks(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    unsigned char **blocks = calloc(N, sizeof *blocks);
    size_t *sizes = calloc(N, sizeof *sizes);
    assert_non_null(blocks);
    assert_non_null(sizes);
    for (size_t i = 0; i < N; i++) {
        sizes[i] = i % 1000 == 999 ? 100000 + i : (i * 7919) % 301;
        blocks[i] = snapshot_alloc(s, sizes[i]);
        assert_non_null(blocks[i]);
        assert_int_equal((uintptr_t)blocks[i] % alignof(max_align_t), 0);
        for (size_t k = 0; k < sizes[i]; k++) {
            assert_int_equal(blocks[i][k], 0);
        }
        memset(blocks[i], (int)(i & 0xFF), sizes[i]);
    }
    for (size_t i = 0; i < N; i++) {
        for (size_t k = 0; k < sizes[i]; k++) {
            assert_int_equal(blocks[i][k], i & 0xFF);
        }
    }
    assert_ptr_not_equal(snapshot_alloc(s, 0), snapshot_alloc(s, 0));
    free(blocks);
    free(sizes);
    snapshot_free(s);
}

static void test_snapshot_strdup_copies_big_strings_and_embedded_nul(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    size_t big = 16u << 20;
    char *src = malloc(big);
    assert_non_null(src);
    for (size_t i = 0; i < big; i++) {
        src[i] = (char)(i * 31 + 7);
    }
    struct snap_str a = snapshot_strdup(s, src, big);
    struct snap_str b = snapshot_strdup(s, "x\0y", 3);
    struct snap_str c = snapshot_strdup(s, src, 1u << 20);
    assert_int_equal(a.len, big);
    assert_memory_equal(a.ptr, src, big);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.ptr, "x\0y", 3);
    assert_memory_equal(c.ptr, src, 1u << 20);
    free(src);
    snapshot_free(s);
}

static void test_snapshot_strdup_keeps_empty_apart_from_unknown(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    struct snap_str empty = snapshot_strdup(s, NULL, 0);
    assert_non_null(empty.ptr);
    assert_int_equal(empty.len, 0);
    assert_null(snapshot_strdup(s, NULL, 5).ptr);
    snapshot_free(s);
}

static void test_snapshot_alloc_fails_cleanly_on_impossible_sizes(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    assert_null(snapshot_alloc(s, SIZE_MAX));
    assert_null(snapshot_alloc(s, SIZE_MAX - 3));
    assert_null(snapshot_alloc_array(s, SIZE_MAX / 2, 3));
    assert_null(snapshot_strdup(s, "x", SIZE_MAX).ptr);
    assert_null(snapshot_alloc(NULL, 8));
    assert_non_null(snapshot_alloc(s, 8));
    snapshot_free(s);
    snapshot_free(NULL);
}

/* Blocks handed to the snapshot stay as they were as long as it lives, and are freed with it
 * (the sanitizer build's leak check fails the test otherwise). */
static void test_snapshot_adopt_frees_blocks_with_the_snapshot(void **state)
{
    (void)state;
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    char *blocks[20];
    for (int i = 0; i < 20; i++) {
        blocks[i] = malloc(64);
        assert_non_null(blocks[i]);
        snprintf(blocks[i], 64, "block %d", i);
        assert_true(snapshot_adopt(s, blocks[i]));
    }
    char want[64];
    for (int i = 0; i < 20; i++) {
        snprintf(want, sizeof want, "block %d", i);
        assert_string_equal(blocks[i], want);
    }
    assert_false(snapshot_adopt(NULL, blocks[0]));
    snapshot_free(s);
}

static void test_snapshot_warn_appends_formatted_messages_in_order(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    for (int i = 0; i < 40; i++) {
        snapshot_warn(s, "thread %d: %s", i, "name unreadable");
    }
    assert_int_equal(s->n_warnings, 40);
    assert_int_equal(s->warnings[0].len, strlen("thread 0: name unreadable"));
    assert_memory_equal(s->warnings[0].ptr, "thread 0: name unreadable", s->warnings[0].len);
    assert_memory_equal(s->warnings[39].ptr, "thread 39: name unreadable", s->warnings[39].len);
    snapshot_free(s);
}

static void test_snapshot_warn_keeps_warnings_the_caller_set_up(void **state)
{
    (void)state;
    struct snap_str mine[2] = {{"one", 3}, {"two", 3}};
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->warnings = mine;
    s->n_warnings = 2;
    snapshot_warn(s, "three");
    assert_int_equal(s->n_warnings, 3);
    assert_ptr_not_equal(s->warnings, mine);
    assert_memory_equal(s->warnings[1].ptr, "two", 3);
    assert_memory_equal(s->warnings[2].ptr, "three", 5);
    assert_memory_equal(mine[1].ptr, "two", 3);
    snapshot_free(s);
}

static void test_snapshot_warn_stops_at_the_limit_and_says_so(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    for (int i = 0; i < 3 * SNAPSHOT_MAX_WARNINGS; i++) {
        snapshot_warn(s, "w%d", i);
    }
    assert_int_equal(s->n_warnings, SNAPSHOT_MAX_WARNINGS);
    struct snap_str last = s->warnings[SNAPSHOT_MAX_WARNINGS - 1];
    assert_memory_equal(last.ptr, "more warnings were dropped", last.len);
    snapshot_free(s);
}

static void check_words(const struct snap_thread *t, const char *expected)
{
    char buf[128];
    snapshot_thread_state_words(t, buf, sizeof buf);
    assert_string_equal(buf, expected);
}

static void test_snapshot_thread_state_words_names_known_states(void **state)
{
    (void)state;
    struct snap_thread t = idle_thread(1);
    check_words(&t, "idle");
    t.main = true;
    check_words(&t, "main thread, idle");
    t.gil = t.gil_requested = t.on_cpu = t.in_gc = t.has_exception = SNAP_YES;
    check_words(&t, "main thread, has GIL, waiting for GIL, on CPU, in GC, has exception");
    t.gil = t.gil_requested = SNAP_NO;
    t.in_gc = SNAP_NO;
    check_words(&t, "main thread, on CPU, has exception");
    t.gil = t.gil_requested = t.on_cpu = t.in_gc = t.has_exception = SNAP_UNKNOWN;
    check_words(&t, "main thread");
    t.main = false;
    check_words(&t, "");
    t.gil = t.gil_requested = SNAP_NO;
    check_words(&t, "");
    t.on_cpu = SNAP_NO;
    t.gil_requested = SNAP_UNKNOWN;
    check_words(&t, "no GIL");
}

static void test_snapshot_thread_state_words_agree_with_every_combination_of_flags(void **state)
{
    (void)state;
    static const enum snap_bool tri[3] = {SNAP_NO, SNAP_YES, SNAP_UNKNOWN};
    for (int code = 0; code < 2 * 243; code++) {
        struct snap_thread t = {.main = code % 2 == 1};
        int c = code / 2;
        t.gil = tri[c % 3];
        t.gil_requested = tri[c / 3 % 3];
        t.on_cpu = tri[c / 9 % 3];
        t.in_gc = tri[c / 27 % 3];
        t.has_exception = tri[c / 81 % 3];
        char w[128];
        char brief[128];
        snapshot_thread_state_words(&t, w, sizeof w);
        snapshot_thread_state_text(&t, true, brief, sizeof brief);
        assert_int_equal(strncmp(w, "main thread", 11) == 0, t.main);
        assert_int_equal(strstr(w, "has GIL") != NULL, t.gil == SNAP_YES);
        assert_int_equal(strstr(w, "waiting for GIL") != NULL, t.gil_requested == SNAP_YES);
        assert_int_equal(strstr(brief, "wait GIL") != NULL, t.gil_requested == SNAP_YES);
        assert_int_equal(strstr(w, "on CPU") != NULL, t.on_cpu == SNAP_YES);
        assert_int_equal(strstr(w, "in GC") != NULL, t.in_gc == SNAP_YES);
        assert_int_equal(strstr(w, "has exception") != NULL, t.has_exception == SNAP_YES);
        /* "idle" only when pytop knows: no GIL, off CPU, and known not to want the GIL. */
        bool idle = t.gil == SNAP_NO && t.gil_requested == SNAP_NO && t.on_cpu == SNAP_NO;
        bool no_gil = t.gil == SNAP_NO && t.gil_requested == SNAP_UNKNOWN && t.on_cpu == SNAP_NO;
        assert_int_equal(strstr(w, "idle") != NULL, idle);
        assert_int_equal(strstr(brief, "idle") != NULL, idle);
        assert_int_equal(strstr(w, "no GIL") != NULL, no_gil);
        assert_int_equal(strstr(brief, "no GIL") != NULL, no_gil);
        size_t len = strlen(w);
        assert_false(len > 0 && (w[0] == ',' || w[0] == ' ' || w[len - 1] == ' '));
        assert_null(strstr(w, ", ,"));
        len = strlen(brief);
        assert_false(len > 0 && (brief[0] == ' ' || brief[len - 1] == ' '));
        assert_null(strstr(brief, "  "));
    }
}

/* Before 3.15 a CPU-bound thread waiting for the GIL is off CPU without the GIL, its wish
 * unknown: it must not read as idle, in the dump's words nor in the view's. */
static void test_snapshot_thread_state_words_say_no_gil_when_the_wait_is_unknown(void **state)
{
    (void)state;
    struct snap_thread t = idle_thread(1);
    t.gil_requested = SNAP_UNKNOWN;
    check_words(&t, "no GIL");
    char brief[32];
    snapshot_thread_state_text(&t, true, brief, sizeof brief);
    assert_string_equal(brief, "no GIL");
    t.main = true;
    check_words(&t, "main thread, no GIL");
    snapshot_thread_state_text(&t, true, brief, sizeof brief);
    assert_string_equal(brief, "no GIL");
    t.gil_requested = SNAP_NO;
    check_words(&t, "main thread, idle");
    t.gil_requested = SNAP_YES;
    check_words(&t, "main thread, waiting for GIL");
    snapshot_thread_state_text(&t, true, brief, sizeof brief);
    assert_string_equal(brief, "wait GIL");
}

static void test_snapshot_thread_state_words_truncates_to_the_buffer(void **state)
{
    (void)state;
    struct snap_thread t = idle_thread(1);
    t.main = true;
    char buf[8] = "XXXXXXX";
    snapshot_thread_state_words(&t, buf, 5);
    assert_string_equal(buf, "main");
    snapshot_thread_state_words(&t, buf, 0);
    assert_string_equal(buf, "main");
}

static void test_snapshot_set_cmdline_splits_the_kernels_arguments(void **state)
{
    (void)state;
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    assert_null(s->cmdline);
    assert_true(s->started < 0);
    /* An empty argument stays one; a line cut short ends without its NUL. */
    static const char args[] = "python3\0\0-c\0print(1)";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, true, NULL), 0);
    assert_int_equal(s->n_cmdline, 4);
    assert_int_equal(s->cmdline[0].len, 7);
    assert_memory_equal(s->cmdline[0].ptr, "python3", 7);
    assert_non_null(s->cmdline[1].ptr);
    assert_int_equal(s->cmdline[1].len, 0);
    assert_memory_equal(s->cmdline[2].ptr, "-c", 2);
    assert_int_equal(s->cmdline[3].len, 8);
    assert_memory_equal(s->cmdline[3].ptr, "print(1)", 8);
    assert_true(s->cmdline_cut);
    snapshot_free(s);
}

static void test_snapshot_str_compare_orders_bytes_with_the_unknown_first(void **state)
{
    struct snap_str unknown = {NULL, 0};
    assert_true(snapshot_str_compare(unknown, str(""), SNAP_STR_BYTES) < 0);
    assert_true(snapshot_str_compare(str("B"), str("a"), SNAP_STR_BYTES) < 0);
    assert_true(snapshot_str_compare(str("ab"), str("abc"), SNAP_STR_BYTES) < 0);
    assert_int_equal(snapshot_str_compare(str("ab"), str("ab"), SNAP_STR_BYTES), 0);
    assert_int_equal(snapshot_str_compare(unknown, unknown, SNAP_STR_BYTES), 0);
}

static void test_snapshot_str_compare_reads_either_case_alike_with_the_unknown_last(void **state)
{
    struct snap_str unknown = {NULL, 0};
    assert_true(snapshot_str_compare(unknown, str("z"), SNAP_STR_READING) > 0);
    assert_true(snapshot_str_compare(str("a"), str("B"), SNAP_STR_READING) < 0);
    assert_int_equal(snapshot_str_compare(str("Main"), str("mAIN"), SNAP_STR_READING), 0);
    assert_true(snapshot_str_compare(str("worker"), str("Worker-2"), SNAP_STR_READING) < 0);
    /* Bytes past ASCII are not folded. */
    assert_true(snapshot_str_compare(str("\xc3\x89"), str("\xc3\xa9"), SNAP_STR_READING) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_alloc_gives_zeroed_aligned_separate_blocks),
        cmocka_unit_test(test_snapshot_strdup_copies_big_strings_and_embedded_nul),
        cmocka_unit_test(test_snapshot_strdup_keeps_empty_apart_from_unknown),
        cmocka_unit_test(test_snapshot_alloc_fails_cleanly_on_impossible_sizes),
        cmocka_unit_test(test_snapshot_adopt_frees_blocks_with_the_snapshot),
        cmocka_unit_test(test_snapshot_warn_appends_formatted_messages_in_order),
        cmocka_unit_test(test_snapshot_warn_keeps_warnings_the_caller_set_up),
        cmocka_unit_test(test_snapshot_warn_stops_at_the_limit_and_says_so),
        cmocka_unit_test(test_snapshot_thread_state_words_names_known_states),
        cmocka_unit_test(test_snapshot_thread_state_words_agree_with_every_combination_of_flags),
        cmocka_unit_test(test_snapshot_thread_state_words_say_no_gil_when_the_wait_is_unknown),
        cmocka_unit_test(test_snapshot_thread_state_words_truncates_to_the_buffer),
        cmocka_unit_test(test_snapshot_set_cmdline_splits_the_kernels_arguments),
        cmocka_unit_test(test_snapshot_str_compare_orders_bytes_with_the_unknown_first),
        cmocka_unit_test(test_snapshot_str_compare_reads_either_case_alike_with_the_unknown_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
