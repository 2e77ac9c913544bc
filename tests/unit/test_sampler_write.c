/* test_sampler_write: batch mode's documents (JSON lines and text) from given statistics. */
#include "config.h"

#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/sampler/sampler.h"
#include "core/write/sampler_write.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/write/snapshot_write.h"

static struct snap_str str(const char *c)
{
    struct snap_str s = {c, c != NULL ? strlen(c) : 0};
    return s;
}

static struct snap_frame frame(const char *function, int line, int first_line)
{
    struct snap_frame f = {
        .function = str(function),
        .name = str(function),
        .file = str("/srv/app/worker.py"),
        .line = line,
        .end_line = -1,
        .col = -1,
        .end_col = -1,
        .first_line = first_line,
        .kind = SNAP_FRAME_PYTHON,
    };
    return f;
}

/* Two threads: 100 "spinner" in spin() called from main(), 101 (no name) idle in wait(). */
static struct snapshot *two_threads(void)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->pid = 4242;
    s->time = 1764480000.5;
    s->python.version = str("3.15.2");
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    assert_non_null(s->interps);
    s->n_interps = 1;
    struct snap_thread *t = snapshot_alloc_array(s, 2, sizeof *t);
    struct snap_frame *f = snapshot_alloc_array(s, 4, sizeof *f);
    assert_non_null(t);
    assert_non_null(f);
    s->interps[0].threads = t;
    s->interps[0].n_threads = 2;
    f[0] = frame("spin", 10, 8);
    f[1] = frame("main", 30, 28);
    f[2] = frame("wait", 20, 18);
    f[3] = frame("main", 31, 28);
    for (int k = 0; k < 2; k++) {
        t[k].tid = 100 + k;
        t[k].thread_id = 1000 + (uint64_t)k;
        t[k].gil = t[k].gil_requested = t[k].on_cpu = t[k].in_gc = SNAP_NO;
        t[k].has_exception = SNAP_NO;
        t[k].frames = &f[2 * k];
        t[k].n_frames = 2;
    }
    t[0].name = str("spinner");
    t[0].on_cpu = SNAP_YES;
    return s;
}

/* What a sampler would say of four samples of two_threads() over 0.4 s at 100 Hz. */
static struct sampler_stats stats_of_four(struct sampler_thread threads[2],
                                          struct sampler_function functions[3])
{
    threads[0] = (struct sampler_thread){
        .tid = 100,
        .thread_id = 1000,
        .name = str("spinner"),
        .samples = 4,
        .gil_pct = 75,
        .cpu_pct = 100,
        .gc_pct = 0,
        .gil_samples = 3,
        .cpu_samples = 4,
    };
    threads[1] = (struct sampler_thread){.tid = 101, .thread_id = 1001, .samples = 4};
    functions[0] = (struct sampler_function){.function = str("spin"),
                                             .file = str("/srv/app/worker.py"),
                                             .first_line = 8,
                                             .own = 4,
                                             .total = 4,
                                             .own_state = 2,
                                             .own_on_cpu = 2};
    functions[1] = (struct sampler_function){.function = str("wait"),
                                             .file = str("/srv/app/worker.py"),
                                             .first_line = 18,
                                             .own = 4,
                                             .total = 4,
                                             .own_state = 4};
    functions[2] = (struct sampler_function){.function = str("main"),
                                             .file = str("/srv/app/worker.py"),
                                             .first_line = 28,
                                             .total = 8};
    struct sampler_stats st = {
        .rate_hz = 100,
        .achieved_hz = 10,
        .samples = 4,
        .errors = 0,
        .window_s = 0.4,
        .thread_samples = 8,
        .threads = threads,
        .n_threads = 2,
        .functions = functions,
        .n_functions = 3,
    };
    return st;
}

static char *write_json(const struct snapshot *snap, const struct sampler_stats *st)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(sampler_write_json(snap, st, f, true, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static char *write_text(const struct snapshot *snap, const struct sampler_stats *st, size_t top)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(sampler_write_text(snap, st, f, NULL, top, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_sampler_write_json_adds_sampling_shares_and_functions(void **state)
{
    (void)state;
    struct sampler_thread threads[2];
    struct sampler_function functions[3];
    struct sampler_stats st = stats_of_four(threads, functions);
    struct snapshot *snap = two_threads();
    char *json = write_json(snap, &st);
    assert_non_null(strstr(json, "\"binary\":null},\"sampling\":{\"mode\":\"wall\","
                                 "\"active_only\":false,\"rate_hz\":100,"
                                 "\"rate_max\":false,\"achieved_hz\":10,\"samples\":4,\"errors\":0,"
                                 "\"window_s\":0.4,\"thread_samples\":8,\"gc_samples\":0,"
                                 "\"last_error\":null,\"backoff_s\":null},\"interpreters\":"));
    assert_non_null(strstr(json, "{\"tid\":100,\"thread_id\":1000,\"name\":\"spinner\","));
    assert_non_null(strstr(json, "\"in_gc\":false,\"samples\":4,\"gil_pct\":75,\"cpu_pct\":100,"
                                 "\"gc_pct\":0,\"frames\":[{\"function\":\"spin\""));
    assert_non_null(strstr(json, "\"in_gc\":false,\"samples\":4,\"gil_pct\":0,\"cpu_pct\":0,"
                                 "\"gc_pct\":0,\"frames\":[{\"function\":\"wait\""));
    assert_non_null(strstr(json, "\"warnings\":[],\"functions\":["
                                 "{\"function\":\"spin\",\"file\":\"/srv/app/worker.py\","
                                 "\"line\":8,\"own\":4,\"total\":4,\"own_state_samples\":2,"
                                 "\"own_cpu_pct\":100},"));
    assert_non_null(strstr(json, "\"line\":18,\"own\":4,\"total\":4,\"own_state_samples\":4,"
                                 "\"own_cpu_pct\":0},"));
    assert_non_null(strstr(json, "{\"function\":\"main\",\"file\":\"/srv/app/worker.py\","
                                 "\"line\":28,\"own\":0,\"total\":8,\"own_state_samples\":0,"
                                 "\"own_cpu_pct\":null}]}\n"));
    assert_null(strstr(json, "truncated"));
    assert_ptr_equal(strchr(json, '\n'), json + strlen(json) - 1); /* one line */
    free(json);
    snapshot_free(snap);
}

static void test_sampler_write_json_says_max_rate_unknowns_and_truncation(void **state)
{
    (void)state;
    struct sampler_function unknown = {
        .function = str(NULL), .file = str(NULL), .first_line = -1, .own = 1, .total = 1};
    struct sampler_stats st = {
        .rate_hz = 0,
        .achieved_hz = 1234.56,
        .samples = 1,
        .window_s = 1.0 / 3,
        .functions = &unknown,
        .n_functions = 1,
        .threads_truncated = true,
        .functions_truncated = true,
        .errors = 9,
        .last_error = str("cannot read 8 bytes at 0x10"),
        .backoff_s = 0.25,
        .execed = true,
        .exec_time = 1764480000.5,
        .exec_program = str("/usr/bin/python3.14"),
    };
    struct snapshot *snap = two_threads(); /* its threads are not in the statistics */
    char *json = write_json(snap, &st);
    /* --rate max: no rate asked for (null, a number's null, never the string "max"). */
    assert_non_null(strstr(json, "\"active_only\":false,\"rate_hz\":null,\"rate_max\":true,\"achieved_hz\":1234.6,"
                                 "\"samples\":1,\"errors\":9,\"window_s\":0.333,"));
    assert_null(strstr(json, "\"max\""));
    assert_non_null(strstr(json, ",\"last_error\":\"cannot read 8 bytes at 0x10\","
                                 "\"backoff_s\":0.25,\"threads_truncated\":true},"
                                 "\"exec\":{\"time\":1764480000.5,"
                                 "\"program\":\"/usr/bin/python3.14\"},\"interpreters\""));
    assert_non_null(
        strstr(json, "\"samples\":0,\"gil_pct\":null,\"cpu_pct\":null,\"gc_pct\":null"));
    assert_non_null(strstr(json, "\"functions\":[{\"function\":null,\"file\":null,"
                                 "\"line\":null,\"own\":1,\"total\":1,"
                                 "\"own_state_samples\":0,\"own_cpu_pct\":null}],"
                                 "\"functions_truncated\":true}\n"));
    free(json);
    json = write_json(NULL, &st);
    assert_non_null(strstr(json, "{\"pytop\":\"" PACKAGE_VERSION "\",\"pid\":null,"));
    assert_non_null(strstr(json, "\"warnings\":[\"no sample succeeded in this interval\"]"));
    free(json);
    snapshot_free(snap);
}

static void test_sampler_write_json_ignores_a_decimal_comma_locale(void **state)
{
    (void)state;
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL &&
        setlocale(LC_NUMERIC, "fr_FR.UTF-8") == NULL) {
        skip();
    }
    struct sampler_stats st = {.rate_hz = 2.5, .achieved_hz = 11.43, .window_s = 0.35};
    char *json = write_json(NULL, &st);
    setlocale(LC_NUMERIC, "C");
    assert_non_null(strstr(json, "\"rate_hz\":2.5,\"rate_max\":false,\"achieved_hz\":11.4,"));
    assert_non_null(strstr(json, "\"window_s\":0.35,"));
    free(json);
}

static void test_sampler_write_text_heads_the_dump_with_shares_and_functions(void **state)
{
    (void)state;
    struct sampler_thread threads[2];
    struct sampler_function functions[3];
    struct sampler_stats st = stats_of_four(threads, functions);
    struct snapshot *snap = two_threads();
    char *text = write_text(snap, &st, 2);
    assert_non_null(strstr(text, "pytop " PACKAGE_VERSION " - 2025-11-30 05:20:00 UTC - "
                                 "pid 4242\n"));
    assert_non_null(strstr(text, "Samples: 4 in 0.40 s, 10.0/s achieved of 100/s requested, "
                                 "errors: 0 (0.0%)\n"));
    assert_non_null(strstr(text, "\n     TID   %GIL   %CPU    %GC  SAMPLES  NAME\n"
                                 "     100   75.0  100.0    0.0        4  \"spinner\"\n"
                                 "     101    0.0    0.0    0.0        4  ?\n"));
    assert_non_null(strstr(text, "\nFunctions: 2 of 3, by own samples (% of 8 thread-samples)\n"
                                 "  OWN% TOTAL%      OWN    TOTAL  CPU%  FUNCTION\n"
                                 "   50.0   50.0        4        4   100  spin (/srv/app/worker.py:8)\n"
                                 "   50.0   50.0        4        4     0  wait (/srv/app/worker.py:18)\n"
                                 "\n"));
    /* Then the traceback-like dump, and a blank line before the next interval. */
    assert_non_null(strstr(text, "\nThread 100 \"spinner\" (on CPU; most recent call last):\n"
                                 "  File \"/srv/app/worker.py\", line 30, in main\n"
                                 "  File \"/srv/app/worker.py\", line 10, in spin\n"));
    assert_int_equal(text[strlen(text) - 1], '\n');
    assert_int_equal(text[strlen(text) - 2], '\n');
    assert_null(strstr(text, "Last error"));
    assert_null(strstr(text, "Exec:"));
    free(text);
    /* Failed samples say why, and how they back off; a followed exec says so. */
    st.errors = 3;
    st.last_error = str("cannot read 8 bytes at 0x10");
    st.backoff_s = 0.08;
    st.execed = true;
    st.exec_program = str("/usr/bin/python3.14");
    text = write_text(snap, &st, 2);
    assert_non_null(strstr(text, "errors: 3 (42.9%)\nLast error: cannot read 8 bytes at 0x10 "
                                 "(failing in a row: retrying every 0.08 s)\n"
                                 "Exec: the process exec()ed /usr/bin/python3.14; following the "
                                 "new program\n"));
    free(text);
    snapshot_free(snap);
}

static void test_sampler_write_text_says_when_no_sample_succeeded(void **state)
{
    (void)state;
    struct sampler_stats st = {.rate_hz = 100, .errors = 7, .window_s = 1};
    char *text = write_text(NULL, &st, 20);
    assert_non_null(strstr(text, "Samples: 0 in 1.00 s, 0.0/s achieved of 100/s requested, "
                                 "errors: 7 (100.0%)\n"));
    assert_non_null(strstr(text, "(no sample succeeded in this interval)\n"));
    free(text);
}

static void test_sampler_write_reports_a_failed_write(void **state)
{
    (void)state;
    struct sampler_stats st = {.rate_hz = 100};
    FILE *f = fopen("/dev/full", "w");
    if (f == NULL) {
        skip();
    }
    struct pt_error err = {0};
    assert_int_equal(sampler_write_json(NULL, &st, f, true, &err), -1);
    assert_int_equal(err.code, PT_E_IO);
    clearerr(f);
    assert_int_equal(sampler_write_text(NULL, &st, f, NULL, 20, &err), -1);
    assert_int_equal(err.code, PT_E_IO);
    fclose(f);
}

static void test_snapshot_write_json_extra_without_callbacks_is_the_plain_document(void **state)
{
    (void)state;
    struct snapshot *snap = two_threads();
    struct snapshot_json_extra none = {0};
    char *plain = NULL;
    char *extra = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&plain, &len);
    assert_non_null(f);
    assert_int_equal(snapshot_write_json(snap, f, true, NULL), 0);
    fclose(f);
    f = open_memstream(&extra, &len);
    assert_non_null(f);
    assert_int_equal(snapshot_write_json_extra(snap, f, true, &none, NULL), 0);
    fclose(f);
    assert_string_equal(plain, extra);
    free(plain);
    free(extra);
    snapshot_free(snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler_write_json_adds_sampling_shares_and_functions),
        cmocka_unit_test(test_sampler_write_json_says_max_rate_unknowns_and_truncation),
        cmocka_unit_test(test_sampler_write_json_ignores_a_decimal_comma_locale),
        cmocka_unit_test(test_sampler_write_text_heads_the_dump_with_shares_and_functions),
        cmocka_unit_test(test_sampler_write_text_says_when_no_sample_succeeded),
        cmocka_unit_test(test_sampler_write_reports_a_failed_write),
        cmocka_unit_test(test_snapshot_write_json_extra_without_callbacks_is_the_plain_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
