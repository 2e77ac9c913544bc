/* test_export: a hand-built stream of samples through the exporters: the collapsed text
 * exactly, the filters, and speedscope and chrome agreeing with it (pprof: test_export_pprof). */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/export/export.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "export_fixture.h"

static char *collapsed(const struct export_opts *opts)
{
    return export_to_memory(EXPORT_COLLAPSED, opts, NULL);
}

static const char LINE_B[] = "thread 100 \"MainThread\";main (/app/main.py:3);<native>;"
                             "odd\\x3bname\\x0ax\\xff\xc3\xa9 (/app/we\\x5cird.py:7) ";
static const char LINE_A[] =
    "thread 100 \"MainThread\";main (/app/main.py:3);Worker.run (/app/work.py:12) ";
static const char LINE_C[] = "thread 200 \"worker\\x3b1\";Worker.run (/app/work.py:11);<GC>;"
                             "? (?:?) ";
static const char LINE_D[] =
    "thread 300 ?;main (/app/main.py:4);<unreadable frame: stack changed while read> ";

static void check_text(char *got, const char *expected)
{
    assert_string_equal(got, expected);
    free(got);
}

static void test_export_collapsed_writes_one_sorted_line_per_thread_and_stack(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    char expected[1024];
    snprintf(expected, sizeof expected, "%s2\n%s3\n%s5\n%s4\n", LINE_B, LINE_A, LINE_C, LINE_D);
    check_text(collapsed(&o), expected);
}

static void test_export_collapsed_counts_only_what_the_mode_selects(void **state)
{
    (void)state;
    char expected[1024];
    struct export_opts o = opts_all();
    snprintf(expected, sizeof expected, "%s2\n%s3\n", LINE_B, LINE_A);
    o.mode = SAMPLER_MODE_GIL;
    check_text(collapsed(&o), expected);
    o.mode = SAMPLER_MODE_CPU; /* 300's unknown CPU state is not "on CPU" */
    check_text(collapsed(&o), expected);
    o.mode = SAMPLER_MODE_EXCEPTION;
    snprintf(expected, sizeof expected, "%s1\n", LINE_C);
    check_text(collapsed(&o), expected);
}

static void test_export_collapsed_counts_one_thread_and_a_time_window(void **state)
{
    (void)state;
    char expected[1024];
    struct export_opts o = opts_all();
    o.thread = 300;
    snprintf(expected, sizeof expected, "%s4\n", LINE_D);
    check_text(collapsed(&o), expected);
    o = opts_all();
    o.from = 0.015;
    o.to = 0.035;
    snprintf(expected, sizeof expected, "%s1\n%s1\n%s2\n%s2\n", LINE_B, LINE_A, LINE_C, LINE_D);
    check_text(collapsed(&o), expected);
    o.from = 1;
    o.to = INFINITY;
    check_text(collapsed(&o), "");
}

static void test_export_rejects_a_stack_deeper_than_the_limit(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    struct pt_error err = {0};
    struct exporter *x = exporter_new(EXPORT_PPROF, &o, &err);
    assert_non_null(x);
    size_t n = (size_t)LIMIT_FRAMES + 1;
    struct rec_frame *frames = calloc(n, sizeof *frames);
    assert_non_null(frames);
    for (size_t i = 0; i < n; i++) {
        frames[i] = py(C_MAIN, (int)i);
    }
    struct rec_thread th = {.tid = 1, .frames = frames, .n_frames = n};
    struct rec_sample s = {.t = 0, .threads = &th, .n_threads = 1};
    assert_int_equal(exporter_add(x, &s, &err), -1);
    assert_int_equal(err.code, PT_E_LIMIT);
    FILE *out = fopen("/dev/null", "w");
    assert_non_null(out);
    memset(&err, 0, sizeof err);
    assert_int_equal(exporter_finish(x, out, &err), -1);
    assert_int_equal(err.code, PT_E_LIMIT);
    fclose(out);
    exporter_free(x);
    free(frames);
}

static void test_export_format_names_round_trip(void **state)
{
    (void)state;
    for (int f = 0; f < EXPORT_FORMAT_COUNT; f++) {
        assert_int_equal(export_format_parse(export_format_name(f)), f);
    }
    assert_int_equal(export_format_parse("flamegraph"), -1);
}

static const char SPEEDSCOPE_SUMS[] =
    "import json, sys\n"
    "d = json.load(open(sys.argv[1], encoding='utf-8', errors='surrogateescape'))\n"
    "assert d['$schema'] == 'https://www.speedscope.app/file-format-schema.json'\n"
    "assert d['exporter'].startswith('pytop ') and d['activeProfileIndex'] == 0\n"
    "fr = d['shared']['frames']\n"
    "def name(i):\n"
    "    f = fr[i]\n"
    "    s = f['name']\n"
    "    if 'file' in f:\n"
    "        s += ' %s:%s' % (f['file'], f.get('line', '?'))\n"
    "    return s.replace('\\n', '\\\\n')\n"
    "out = []\n"
    "for p in d['profiles']:\n"
    "    assert p['type'] == 'sampled' and p['unit'] == 'seconds'\n"
    "    assert len(p['samples']) == len(p['weights'])\n"
    "    assert abs(p['endValue'] - p['startValue'] - sum(p['weights'])) < 1e-9\n"
    "    sums = {}\n"
    "    for s, w in zip(p['samples'], p['weights']):\n"
    "        k = '|'.join([p['name']] + [name(i) for i in s])\n"
    "        sums[k] = sums.get(k, 0) + w\n"
    "    out += ['%s %d\\n' % (k, round(v / 0.01)) for k, v in sums.items()]\n"
    "sys.stdout.buffer.write(''.join(out).encode('utf-8', 'surrogateescape'))\n";

static void test_export_speedscope_is_json_whose_weights_agree_with_the_counts(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    size_t len;
    char *json = export_to_memory(EXPORT_SPEEDSCOPE, &o, &len);
    assert_non_null(strstr(json, "\"type\":\"sampled\""));
    assert_non_null(strstr(json, "\"exporter\":\"pytop " PACKAGE_VERSION "\""));
    char *sums = run_python(SPEEDSCOPE_SUMS, json, len);
    free(json);
    if (sums == NULL) {
        return; /* no python3: the structure above is all that is checked */
    }
    /* The collapsed counts, as each stack's weight in periods. */
    const char *const expected[] = {
        "MainThread (100)|main /app/main.py:3|Worker.run /app/work.py:12 3\n",
        "MainThread (100)|main /app/main.py:3|<native>|odd;name\\nx\xff\xc3\xa9 "
        "/app/we\\ird.py:7 2\n",
        "worker;1 (200)|Worker.run /app/work.py:11|<GC>|? 5\n",
        "thread 300|main /app/main.py:4|<unreadable frame: stack changed while read> 4\n",
    };
    check_lines(sums, expected, 4);
    free(sums);
}

struct x_event {
    long tid;
    double ts;
    double dur;
};

static double number_after(const char *line, const char *key)
{
    const char *at = strstr(line, key);
    assert_non_null(at);
    return strtod(at + strlen(key), NULL);
}

/* The X events of JSON (which the writer puts one a line; JSON is cut up), at most MAX. */
static size_t x_events(char *json, struct x_event *ev, size_t max)
{
    size_t n = 0;
    for (char *line = strtok(json, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"ph\":\"X\"") == NULL) {
            continue;
        }
        assert_true(n < max);
        ev[n++] = (struct x_event){(long)number_after(line, "\"tid\":"),
                                   number_after(line, "\"ts\":"), number_after(line, "\"dur\":")};
    }
    return n;
}

/* Each thread's events are nested or disjoint, none of negative length. */
static void check_nesting(const struct x_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(ev[i].dur >= 0);
        for (size_t k = 0; k < n; k++) {
            if (i == k || ev[i].tid != ev[k].tid) {
                continue;
            }
            double a0 = ev[i].ts;
            double a1 = a0 + ev[i].dur;
            double b0 = ev[k].ts;
            double b1 = b0 + ev[k].dur;
            bool disjoint = a1 <= b0 || b1 <= a0;
            bool nested = (a0 <= b0 && b1 <= a1) || (b0 <= a0 && a1 <= b1);
            if (!disjoint && !nested) {
                fail_msg("tid %ld: [%.3f, +%.3f] and [%.3f, +%.3f] overlap", ev[i].tid, ev[i].ts,
                         ev[i].dur, ev[k].ts, ev[k].dur);
            }
        }
    }
}

static void test_export_chrome_events_nest_within_each_thread(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    size_t len;
    char *json = export_to_memory(EXPORT_CHROME, &o, &len);
    assert_non_null(strstr(json, "\"displayTimeUnit\":\"ms\""));
    const char *names[] = {"\"args\":{\"name\":\"MainThread\"}", "\"args\":{\"name\":\"worker;1\"}",
                           "\"args\":{\"name\":\"thread 300\"}"};
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(strstr(json, names[i]));
    }
    struct x_event ev[64];
    size_t n = x_events(json, ev, 64);
    /* 100: main over both stacks (0-50 ms), Worker.run then <native> and odd; 200: three for
     * the whole 50 ms; 300: two from 10 ms (the shim left out). */
    assert_int_equal(n, 9);
    check_nesting(ev, n);
    size_t whole = 0;
    for (size_t i = 0; i < n; i++) {
        whole += ev[i].ts == 0 && ev[i].dur == 50000;
    }
    assert_int_equal(whole, 4); /* 100's main and 200's three */
    free(json);
}

/* 1's samples go back in time (a hostile or broken file): A at 20 ms, B at 10 ms, A at 30 ms. */
static void feed_backwards(struct exporter *x)
{
    struct rec_frame a[] = {py(C_WORK, 12), py(C_MAIN, 3)};
    struct rec_frame b[] = {py(C_WEIRD, 7), py(C_MAIN, 3)};
    add_one(x, 0.02, a, 2, true);
    add_one(x, 0.01, b, 2, true);
    add_one(x, 0.03, a, 2, true);
}

static void test_export_chrome_events_nest_when_times_go_back(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    size_t len;
    char *json = export_stream(EXPORT_CHROME, &o, feed_backwards, &len);
    struct x_event ev[64];
    size_t n = x_events(json, ev, 64);
    assert_true(n >= 4);
    check_nesting(ev, n);
    free(json);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % n;
}

/* Samples a broken or hostile file could hold: times that go back, repeat, are NaN or
 * huge; frame kinds and reasons this build does not know; tids that are 0 (thread_id
 * instead); names that change. */
static void feed_random(struct exporter *x)
{
    static const double times[] = {-1, 0, 1e12, INFINITY, NAN};
    static const char *const names[] = {"a", "b;c", NULL, ""};
    double t = 0;
    for (int i = 0; i < 300; i++) {
        struct rec_frame frames[4][6];
        struct rec_thread th[4];
        for (size_t k = 0; k < 4; k++) {
            size_t n = (size_t)rnd(7);
            for (size_t d = 0; d < n; d++) {
                if (rnd(3) == 0) {
                    frames[k][d] = synthetic((enum snap_frame_kind)rnd(10),
                                             (enum snap_unreadable)rnd(300));
                } else {
                    frames[k][d] = py((int)rnd(N_CODES), (int)rnd(5) - 1);
                }
            }
            th[k] = (struct rec_thread){.tid = (pid_t)rnd(3), .thread_id = rnd(3),
                                        .name = str(names[rnd(4)]), .gil = (int)rnd(3) - 1,
                                        .on_cpu = (int)rnd(3) - 1, .frames = frames[k],
                                        .n_frames = n, .not_read = rnd(8) == 0};
        }
        t += (double)rnd(30) / 1000 - 0.005;
        struct rec_sample s = {.t = rnd(20) == 0 ? times[rnd(5)] : t, .failed = rnd(30) == 0,
                               .threads = th, .n_threads = (size_t)rnd(5)};
        struct pt_error err = {0};
        assert_int_equal(exporter_add(x, &s, &err), 0);
    }
}

static void test_export_writes_every_format_of_a_hostile_stream(void **state)
{
    (void)state;
    for (int mode = 0; mode < SAMPLER_MODE_COUNT; mode++) {
        for (int f = 0; f < EXPORT_FORMAT_COUNT; f++) {
            struct export_opts o = opts_all();
            o.mode = (enum sampler_mode)mode;
            o.period_s = mode == 0 ? 0 : PERIOD; /* unknown, then known */
            o.header = mode == 1 ? NULL : &header;
            size_t len;
            char *out = export_stream((enum export_format)f, &o, feed_random, &len);
            if (f == EXPORT_CHROME) {
                size_t max = 20000;
                struct x_event *ev = calloc(max, sizeof *ev);
                assert_non_null(ev);
                check_nesting(ev, x_events(out, ev, max));
                free(ev);
            }
            free(out);
        }
    }
}

static const char CHROME_JSON[] = "import json, sys\n"
                                  "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
                                  "assert isinstance(d['traceEvents'], list)\n"
                                  "print(len(d['traceEvents']))\n";

static void test_export_chrome_is_json(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    size_t len;
    char *json = export_to_memory(EXPORT_CHROME, &o, &len);
    char *out = run_python(CHROME_JSON, json, len);
    free(json);
    if (out == NULL) {
        skip();
    }
    /* process_name, three thread_name, nine X */
    assert_string_equal(out, "13\n");
    free(out);
}

static int setup(void **state)
{
    (void)state;
    export_fixture_init();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_collapsed_writes_one_sorted_line_per_thread_and_stack),
        cmocka_unit_test(test_export_collapsed_counts_only_what_the_mode_selects),
        cmocka_unit_test(test_export_collapsed_counts_one_thread_and_a_time_window),
        cmocka_unit_test(test_export_rejects_a_stack_deeper_than_the_limit),
        cmocka_unit_test(test_export_format_names_round_trip),
        cmocka_unit_test(test_export_speedscope_is_json_whose_weights_agree_with_the_counts),
        cmocka_unit_test(test_export_chrome_events_nest_within_each_thread),
        cmocka_unit_test(test_export_chrome_is_json),
        cmocka_unit_test(test_export_writes_every_format_of_a_hostile_stream),
        cmocka_unit_test(test_export_chrome_events_nest_when_times_go_back),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}