/* export_fixture: the exporter tests' sample streams and plumbing. */
#include "config.h"

#include "export_fixture.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util/error.h"

struct snap_str str(const char *s)
{
    return (struct snap_str){s, s != NULL ? strlen(s) : 0};
}

struct rec_code codes[N_CODES];

void export_fixture_init(void)
{
    codes[C_MAIN] = (struct rec_code){1, str("main"), str("main"), str("/app/main.py"), 1};
    codes[C_WORK] = (struct rec_code){2, str("Worker.run"), str("run"), str("/app/work.py"), 10};
    /* ';', a newline, a byte that is not UTF-8 and a valid 'é'; a backslash in the file. */
    codes[C_WEIRD] = (struct rec_code){3,
                                       str("odd;name\nx\xff"
                                           "\xc3\xa9"),
                                       str("odd"), str("/app/we\\ird.py"), 5};
    codes[C_UNKNOWN] = (struct rec_code){4, {NULL, 0}, {NULL, 0}, {NULL, 0}, -1};
    /* Another code object of the same function: counted as the same function. */
    codes[C_MAIN_AGAIN] = (struct rec_code){9, str("main"), str("main"), str("/app/main.py"), 1};
}

struct rec_frame py(int code, int line)
{
    return (struct rec_frame){
        .code = &codes[code], .line = line, .offset = UINT32_MAX, .kind = SNAP_FRAME_PYTHON};
}

struct rec_frame synthetic(enum snap_frame_kind kind, enum snap_unreadable why)
{
    return (struct rec_frame){.line = -1, .offset = UINT32_MAX, .kind = kind, .unreadable = why};
}

const double PERIOD = 0.01;

/* Five samples 10 ms apart, and a sixth that failed:
 * 100 MainThread (GIL, on CPU): A = main:3 > Worker.run:12 three times, then B = main:3 >
 *     <native> > odd:7 twice;
 * 200 "worker;1" (no GIL, off CPU; an exception in the third sample): C = Worker.run:11 >
 *     <GC> > ? five times;
 * 300 (no name, CPU unknown): not read in the first sample, then D = main:4 > <shim> >
 *     <unreadable> four times (the shim is left out). */
void feed(struct exporter *x)
{
    for (int i = 0; i < 6; i++) {
        struct rec_frame a[] = {py(C_WORK, 12), py(C_MAIN, 3)};
        struct rec_frame b[] = {py(C_WEIRD, 7), synthetic(SNAP_FRAME_NATIVE, 0), py(C_MAIN, 3)};
        struct rec_frame c[] = {py(C_UNKNOWN, -1), synthetic(SNAP_FRAME_GC, 0), py(C_WORK, 11)};
        struct rec_frame d[] = {synthetic(SNAP_FRAME_UNREADABLE, SNAP_UNREADABLE_STACK),
                                synthetic(SNAP_FRAME_SHIM, 0), py(C_MAIN_AGAIN, 4)};
        struct rec_thread th[3] = {
            {.tid = 100,
             .thread_id = 0x1000,
             .name = str("MainThread"),
             .main = true,
             .gil = SNAP_YES,
             .on_cpu = SNAP_YES,
             .has_exception = SNAP_NO,
             .frames = i < 3 ? a : b,
             .n_frames = i < 3 ? 2 : 3},
            {.tid = 200,
             .thread_id = 0x2000,
             .name = str("worker;1"),
             .gil = SNAP_NO,
             .on_cpu = SNAP_NO,
             .has_exception = i == 2 ? SNAP_YES : SNAP_NO,
             .frames = c,
             .n_frames = 3},
            {.tid = 300,
             .thread_id = 0x3000,
             .gil = SNAP_NO,
             .on_cpu = SNAP_UNKNOWN,
             .has_exception = SNAP_UNKNOWN,
             .frames = i == 0 ? NULL : d,
             .n_frames = i == 0 ? 0 : 3,
             .not_read = i == 0},
        };
        struct rec_sample s = {.t = i * PERIOD, .threads = th, .n_threads = 3};
        if (i == 5) {
            s = (struct rec_sample){.t = i * PERIOD, .failed = true, .error = str("gone")};
        }
        struct pt_error err = {0};
        assert_int_equal(exporter_add(x, &s, &err), 0);
    }
}

const struct rec_header header = {
    .format = {"pytop 1", 7},
    .pid = 4242,
    .python_version = {"3.14.0", 6},
    .rate_hz = 100,
    .start_wall = 1700000000.5,
    .started = -1,
};

struct export_opts opts_all(void)
{
    return (struct export_opts){.from = 0,
                                .to = INFINITY,
                                .mode = SAMPLER_MODE_WALL,
                                .period_s = PERIOD,
                                .header = &header};
}

/* The export of the samples FEED_FN gives in format F with OPTS, NUL-terminated (*LEN bytes
 * before it). */
char *export_stream(enum export_format f, const struct export_opts *opts,
                    void (*feed_fn)(struct exporter *), size_t *len)
{
    struct pt_error err = {0};
    struct exporter *x = exporter_new(f, opts, &err);
    assert_non_null(x);
    feed_fn(x);
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    assert_int_equal(exporter_finish(x, out, &err), 0);
    assert_int_equal(fclose(out), 0);
    exporter_free(x);
    if (len != NULL) {
        *len = n;
    }
    return buf;
}

char *export_to_memory(enum export_format f, const struct export_opts *opts, size_t *len)
{
    return export_stream(f, opts, feed, len);
}

/* One sample of thread 1 at T with FRAMES (and thread 2, holding the GIL or not, at main:1). */
void add_one(struct exporter *x, double t, const struct rec_frame *frames, size_t n,
             bool two_has_gil)
{
    struct rec_frame two[] = {py(C_MAIN, 1)};
    struct rec_thread th[2] = {
        {.tid = 1, .name = str("one"), .gil = SNAP_YES, .frames = frames, .n_frames = n},
        {.tid = 2,
         .name = str("two"),
         .gil = two_has_gil ? SNAP_YES : SNAP_NO,
         .frames = two,
         .n_frames = 1},
    };
    struct rec_sample s = {.t = t, .threads = th, .n_threads = 2};
    struct pt_error err = {0};
    assert_int_equal(exporter_add(x, &s, &err), 0);
}

/* Runs SCRIPT (python3) on DATA; its standard output, or NULL when there is no python3. */
char *run_python(const char *script, const char *data, size_t len)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        return NULL;
    }
    char dir[] = "/tmp/test_export.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    char cmd[1024];
    snprintf(path, sizeof path, "%s/script.py", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(script, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/data", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s/script.py %s/data > %s/out", dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/out", dir);
    f = fopen(path, "rb");
    assert_non_null(f);
    char *out = calloc(1, 1 << 16);
    assert_non_null(out);
    size_t n = fread(out, 1, (1 << 16) - 1, f);
    out[n] = '\0';
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return out;
}

/* Whether GOT holds exactly the lines of EXPECTED (each ending in "\n"), in any order. */
void check_lines(const char *got, const char *const *expected, size_t n)
{
    size_t lines = 0;
    for (const char *p = got; *p != '\0'; p++) {
        lines += *p == '\n';
    }
    for (size_t i = 0; i < n; i++) {
        const char *at = strstr(got, expected[i]);
        if (at == NULL || (at != got && at[-1] != '\n')) {
            fail_msg("missing line: %s\nin:\n%s", expected[i], got);
        }
    }
    assert_int_equal(lines, n);
}