/* test_report: the incident report: the target, pytop's settings, the statistics, the stacks. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/write/report.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"

static struct snap_str str(const char *c)
{
    struct snap_str s = {c, strlen(c)};
    return s;
}

/* Process 4242 ("python3 app.py", up 1000 s) with one thread, 100 "MainThread", in spin(). */
static struct snapshot *one_thread(void)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->pid = 4242;
    s->time = 1764480000.5;
    s->started = 1764479000.5;
    static const char args[] = "python3\0app.py\0";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, false, NULL), 0);
    s->python.version = str("3.15.2");
    s->python.binary = str("/usr/bin/python3.15");
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    assert_non_null(s->interps);
    s->n_interps = 1;
    struct snap_thread *t = snapshot_alloc(s, sizeof *t);
    struct snap_frame *f = snapshot_alloc(s, sizeof *f);
    assert_non_null(t);
    assert_non_null(f);
    *f = (struct snap_frame){.function = str("spin"), .name = str("spin"),
                             .file = str("/srv/app.py"), .line = 10, .end_line = -1, .col = -1,
                             .end_col = -1, .first_line = 8, .kind = SNAP_FRAME_PYTHON};
    *t = (struct snap_thread){.tid = 100, .thread_id = 1000, .name = str("MainThread"),
                              .main = true, .gil = SNAP_YES, .gil_requested = SNAP_NO,
                              .on_cpu = SNAP_YES, .has_exception = SNAP_NO, .in_gc = SNAP_NO,
                              .frames = f, .n_frames = 1};
    s->interps[0].threads = t;
    s->interps[0].n_threads = 1;
    return s;
}

/* The statistics of N samples of one_thread() over N / 100 s, in a window of WINDOW_S. */
static struct sampler_stats *stats_of(int n, double window_s)
{
    struct sampler_opts opts = {.rate_hz = 100, .window_s = window_s};
    struct sampler *sm = sampler_new(NULL, NULL, &opts, NULL);
    assert_non_null(sm);
    for (int i = 0; i < n; i++) {
        sampler_add(sm, one_thread(), 50.0 + i * 0.01);
    }
    struct sampler_stats *st = sampler_stats(sm, 50.0 + n * 0.01);
    assert_non_null(st);
    sampler_free(sm);
    return st;
}

static char *report(const struct snapshot *s, const struct sampler_stats *st,
                    const struct report_opts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(report_write_text(s, NULL, st, f, NULL, o, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_report_puts_the_target_settings_and_statistics_above_the_stacks(void **state)
{
    (void)state;
    struct snapshot *s = one_thread();
    struct sampler_stats *st = stats_of(100, 10.0);
    struct report_opts o = {.by = "--rate 100 --window 10 --delay 1 (live view, d)",
                            .top_functions = 5};
    char *got = report(s, st, &o);
    assert_string_equal(
        got,
        "Process 4242: Python 3.15.2 (/usr/bin/python3.15)\n"
        "Command: python3 app.py\n"
        "Started: 2025-11-30 05:03:20 UTC (up 0:16:40)\n"
        "Taken at 2025-11-30 05:20:00.500 UTC\n"
        "Dumped by: pytop " PACKAGE_VERSION " --rate 100 --window 10 --delay 1 (live view, d)\n"
        "\n"
        "Statistics over the window (10 s):\n"
        "Samples: 100 in 1.00 s, 100.0/s achieved of 100/s requested, errors: 0 (0.0%)\n"
        "\n"
        "     TID   %GIL   %CPU    %GC  SAMPLES  NAME\n"
        "     100  100.0  100.0    0.0      100  \"MainThread\"\n"
        "\n"
        "Functions: 1 of 1, by own samples (% of 100 thread-samples)\n"
        "  OWN% TOTAL%      OWN    TOTAL  CPU%  FUNCTION\n"
        "  100.0  100.0      100      100   100  spin (/srv/app.py:8)\n"
        "\n"
        "Thread 100 \"MainThread\" (main thread, has GIL, on CPU; most recent call last):\n"
        "  File \"/srv/app.py\", line 10, in spin\n"
        "\n"
        "Asyncio tasks: not read (the warnings below say why)\n");
    free(got);
    sampler_stats_free(st);
    snapshot_free(s);
}

static void test_report_says_why_it_has_no_statistics_and_gives_the_note(void **state)
{
    (void)state;
    struct snapshot *s = one_thread();
    struct report_opts o = {.by = "--dump --rate 100 --delay 1",
                            .note = "--at-exit: process 4242 exited",
                            .no_stats = "a single --dump reads one snapshot"};
    char *got = report(s, NULL, &o);
    assert_non_null(strstr(got, "Taken at 2025-11-30 05:20:00.500 UTC\n"
                                "Dumped by: pytop " PACKAGE_VERSION " --dump --rate 100 --delay 1\n"
                                "Note: --at-exit: process 4242 exited\n"
                                "\n"
                                "Statistics: none: a single --dump reads one snapshot\n"
                                "\n"
                                "Thread 100 "));
    free(got);
    snapshot_free(s);
}

static void test_report_names_the_window_since_the_reset_or_as_told(void **state)
{
    (void)state;
    struct snapshot *s = one_thread();
    struct sampler_stats *st = stats_of(50, INFINITY);
    char *got = report(s, st, NULL);
    assert_non_null(strstr(got, "\nDumped by: pytop " PACKAGE_VERSION "\n"));
    assert_non_null(strstr(got, "\nStatistics over the window (since the last reset):\n"
                                "Samples: 50 in 0.50 s, "));
    free(got);
    struct report_opts o = {.window = "the whole run"};
    got = report(s, st, &o);
    assert_non_null(strstr(got, "\nStatistics over the window (the whole run):\n"));
    free(got);
    sampler_stats_free(st);
    st = stats_of(10, 0.25);
    got = report(s, st, NULL);
    assert_non_null(strstr(got, "\nStatistics over the window (0.25 s):\n"));
    free(got);
    sampler_stats_free(st);
    snapshot_free(s);
}

static void test_report_says_when_it_could_not_be_written(void **state)
{
    (void)state;
    struct snapshot *s = one_thread();
    FILE *f = fopen("/dev/full", "w");
    if (f == NULL) {
        snapshot_free(s);
        skip();
    }
    struct pt_error err = {0};
    assert_int_equal(report_write_text(s, NULL, NULL, f, NULL, NULL, &err), -1);
    assert_int_equal(err.code, PT_E_IO);
    fclose(f);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_puts_the_target_settings_and_statistics_above_the_stacks),
        cmocka_unit_test(test_report_says_why_it_has_no_statistics_and_gives_the_note),
        cmocka_unit_test(test_report_names_the_window_since_the_reset_or_as_told),
        cmocka_unit_test(test_report_says_when_it_could_not_be_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
