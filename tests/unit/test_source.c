/* test_source: the lines of real files as the source cache serves them, read through this
 * process's own /proc entry. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/source.h"

struct fixture {
    struct proc *proc;
    struct source_cache *cache;
    char dir[64];
    int n_files;
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    struct pt_error err = {0};
    if (fx == NULL || (fx->proc = proc_open(getpid(), &err)) == NULL) {
        free(fx);
        return -1;
    }
    snprintf(fx->dir, sizeof fx->dir, "/tmp/pytop-source-XXXXXX");
    if (mkdtemp(fx->dir) == NULL || (fx->cache = source_cache_new(fx->proc)) == NULL) {
        proc_close(fx->proc);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    source_cache_free(fx->cache);
    proc_close(fx->proc);
    for (int i = 0; i < fx->n_files; i++) {
        snprintf(path, sizeof path, "%s/f%d.py", fx->dir, i);
        unlink(path);
    }
    rmdir(fx->dir);
    free(fx);
    return 0;
}

/* Writes LEN bytes of TEXT to a new file of the fixture's; its path into PATH. */
static void write_file(struct fixture *fx, const char *text, size_t len, char *path, size_t size)
{
    snprintf(path, size, "%s/f%d.py", fx->dir, fx->n_files++);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static const char *line_of(struct fixture *fx, const char *path, int line, size_t *len)
{
    return source_cache_line(fx->cache, path, strlen(path), line, len);
}

static void assert_line(struct fixture *fx, const char *path, int line, const char *want)
{
    size_t len = 0;
    const char *got = line_of(fx, path, line, &len);
    assert_non_null(got);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(got, want, len);
}

/* Every line of a 1000-line file, in an order that crosses the noted line starts both ways,
 * and again from the kept lines; none before the first or after the last. */
static void test_source_lines_of_a_long_file(void **state)
{
    struct fixture *fx = *state;
    size_t cap = 32 * 1000;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t len = 0;
    for (int i = 1; i <= 1000; i++) {
        len += (size_t)snprintf(text + len, cap - len, "    value_%d = %d * 2\n", i, i);
    }
    char path[128];
    write_file(fx, text, len, path, sizeof path);
    free(text);
    char want[64];
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 1000; k++) {
            int i = 1 + (k * 389) % 1000; /* every line once, scattered */
            snprintf(want, sizeof want, "    value_%d = %d * 2", i, i);
            assert_line(fx, path, i, want);
        }
    }
    size_t n;
    assert_null(line_of(fx, path, 0, &n));
    assert_null(line_of(fx, path, -3, &n));
    assert_null(line_of(fx, path, 1001, &n));
    assert_null(line_of(fx, path, 2147483647, &n));
}

/* Windows line ends lose their carriage return; a last line without a newline is a line; a
 * blank line is an empty one, not a missing one. */
static void test_source_line_ends(void **state)
{
    struct fixture *fx = *state;
    char path[128];
    const char text[] = "first\r\n\r\nthird\r\nlast without newline";
    write_file(fx, text, sizeof text - 1, path, sizeof path);
    assert_line(fx, path, 1, "first");
    assert_line(fx, path, 2, "");
    assert_line(fx, path, 3, "third");
    assert_line(fx, path, 4, "last without newline");
    size_t n;
    assert_null(line_of(fx, path, 5, &n));
    char empty[128];
    write_file(fx, "", 0, empty, sizeof empty);
    assert_null(line_of(fx, empty, 1, &n));
    char one[128];
    write_file(fx, "only\n", 5, one, sizeof one);
    assert_line(fx, one, 1, "only");
    assert_null(line_of(fx, one, 2, &n));
}

/* A line longer than the reads (16 KiB), after a noted start, comes whole; one longer than
 * 64 KiB comes cut there; the lines after each are right. */
static void test_source_long_lines(void **state)
{
    struct fixture *fx = *state;
    size_t cap = 200 * 1024;
    char *text = malloc(cap);
    char *want = malloc(cap);
    assert_non_null(text);
    assert_non_null(want);
    size_t len = 0;
    for (int i = 1; i <= 69; i++) {
        len += (size_t)snprintf(text + len, cap - len, "l%d\n", i);
    }
    size_t at70 = len;
    for (size_t k = 0; k < 40000; k++) {
        text[len++] = (char)('a' + k % 26);
    }
    text[len++] = '\n';
    len += (size_t)snprintf(text + len, cap - len, "l71\n");
    size_t at72 = len;
    for (size_t k = 0; k < 70000; k++) {
        text[len++] = (char)('A' + k % 26);
    }
    text[len++] = '\n';
    len += (size_t)snprintf(text + len, cap - len, "l73\n");
    char path[128];
    write_file(fx, text, len, path, sizeof path);
    assert_line(fx, path, 69, "l69");
    size_t n = 0;
    const char *l70 = line_of(fx, path, 70, &n);
    assert_non_null(l70);
    assert_int_equal(n, 40000);
    assert_memory_equal(l70, text + at70, 40000);
    assert_line(fx, path, 71, "l71");
    const char *l72 = line_of(fx, path, 72, &n);
    assert_non_null(l72);
    assert_int_equal(n, 64 * 1024);
    assert_memory_equal(l72, text + at72, 64 * 1024);
    assert_line(fx, path, 73, "l73");
    free(want);
    free(text);
}

/* Pseudo-files and files that are not there have no lines; more files than are kept open
 * are opened again when read. */
static void test_source_many_and_missing_files(void **state)
{
    struct fixture *fx = *state;
    size_t n;
    assert_null(source_cache_line(fx->cache, "<string>", 8, 1, &n));
    assert_null(source_cache_line(fx->cache, "<frozen runpy>", 14, 1, &n));
    assert_null(line_of(fx, "/nonexistent/pytop/x.py", 1, &n));
    char paths[40][128];
    char text[64];
    for (int i = 0; i < 40; i++) {
        int len = snprintf(text, sizeof text, "file %d a\nfile %d b\n", i, i);
        write_file(fx, text, (size_t)len, paths[i], sizeof paths[i]);
    }
    char want[64];
    for (int line = 1; line <= 2; line++) {
        for (int i = 0; i < 40; i++) {
            snprintf(want, sizeof want, "file %d %c", i, line == 1 ? 'a' : 'b');
            assert_line(fx, paths[i], line, want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_lines_of_a_long_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_line_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_long_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_many_and_missing_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
