/* test_memory: the allocator keeps what pytop frees, so a refresh reuses the last one's pages. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* The sanitizers bring allocators of their own, which take no mallopt() settings. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

/* A block of a snapshot (half a megabyte here) comes from the heap, not from a mapping of its own
 * that free() would hand back to the kernel; freed, the next one of the size is the same
 * memory. */
static void test_memory_keep_freed_serves_large_blocks_from_the_heap(void **state)
{
    (void)state;
#if defined(SANITIZED) || !defined(__GLIBC__) || !defined(M_MMAP_THRESHOLD)
    skip();
#else
    assert_true(memory_keep_freed());
    enum { BLOCK = 512 << 10 }; /* above glibc's own threshold (128 KiB at start) */
    struct mallinfo2 before = mallinfo2();
    unsigned char *p = malloc(BLOCK);
    assert_non_null(p);
    memset(p, 1, BLOCK);
    struct mallinfo2 during = mallinfo2();
    assert_int_equal(during.hblks, before.hblks); /* no mapping of its own */
    free(p);
    struct mallinfo2 after = mallinfo2();
    /* Kept: the heap did not shrink by the block. */
    assert_true(after.arena >= during.arena);
    unsigned char *q = malloc(BLOCK);
    assert_non_null(q);
    assert_ptr_equal(q, p);
    free(q);
#endif
}

static void test_memory_grow_doubles_and_refuses_an_overflow(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_true(memory_grow((void **)&v, &cap, 1, sizeof *v, 4));
    assert_int_equal(cap, 4);
    assert_true(memory_grow((void **)&v, &cap, 4, sizeof *v, 4));
    assert_int_equal(cap, 4); /* room enough: unchanged */
    assert_true(memory_grow((void **)&v, &cap, 5, sizeof *v, 4));
    assert_int_equal(cap, 8);
    assert_true(memory_grow((void **)&v, &cap, 100, sizeof *v, 4));
    assert_int_equal(cap, 100); /* more than doubling asks */
    v[99] = 7;
    int *kept = v;
    assert_false(memory_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 4));
    assert_ptr_equal(v, kept);
    assert_int_equal(cap, 100);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_keep_freed_serves_large_blocks_from_the_heap),
        cmocka_unit_test(test_memory_grow_doubles_and_refuses_an_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
