/* test_export_pprof: the pprof export gunzipped and decoded: its samples, string table and
 * locations against the same stream's counts, the time each thread-sample stands for, and
 * go tool pprof reading it where Go is installed. */
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
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "core/export/export.h"
#include "core/sampler/schedule.h"
#include "core/util/error.h"
#include "export_fixture.h"

/* A protobuf message being read. */
struct pb {
    const uint8_t *p;
    size_t len;
};

static uint64_t pb_varint(struct pb *b)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        assert_true(b->len > 0);
        uint8_t byte = *b->p++;
        b->len--;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            return v;
        }
    }
    fail_msg("varint too long");
    return 0;
}

/* The next field of B: its number, and its value (varint) or bytes (length-delimited). */
static bool pb_next(struct pb *b, unsigned *field, uint64_t *v, struct pb *bytes)
{
    if (b->len == 0) {
        return false;
    }
    uint64_t key = pb_varint(b);
    *field = (unsigned)(key >> 3);
    switch (key & 7) {
    case 0:
        *v = pb_varint(b);
        return true;
    case 2:
        *v = pb_varint(b);
        assert_true(*v <= b->len);
        bytes->p = b->p;
        bytes->len = (size_t)*v;
        b->p += *v;
        b->len -= (size_t)*v;
        return true;
    default:
        fail_msg("wire type %u", (unsigned)(key & 7));
        return false;
    }
}

enum { MAX_ITEMS = 64 };

struct profile {
    struct pb strings[MAX_ITEMS];
    size_t n_strings;
    uint64_t func_name[MAX_ITEMS]; /* by function id */
    uint64_t func_file[MAX_ITEMS];
    uint64_t loc_func[MAX_ITEMS]; /* by location id */
    uint64_t loc_line[MAX_ITEMS];
    uint64_t sample_types[4];
    size_t n_sample_types;
    uint64_t period;
    uint64_t time_nanos;
    uint64_t duration_nanos;
    struct pb samples[MAX_ITEMS];
    size_t n_samples;
};

static char *gunzip(const char *data, size_t len, size_t *out_len)
{
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    assert_non_null(out);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    z.next_out = (unsigned char *)out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    *out_len = cap - z.avail_out;
    inflateEnd(&z);
    return out;
}

static void decode_profile(struct pb b, struct profile *pr)
{
    memset(pr, 0, sizeof *pr);
    unsigned field;
    uint64_t v;
    struct pb m;
    while (pb_next(&b, &field, &v, &m)) {
        unsigned f2;
        uint64_t v2;
        struct pb m2;
        uint64_t id = 0;
        uint64_t a = 0;
        uint64_t c = 0;
        switch (field) {
        case 1: /* sample_type */
            while (pb_next(&m, &f2, &v2, &m2)) {
                assert_true(pr->n_sample_types < 4);
                pr->sample_types[pr->n_sample_types++] = v2;
            }
            break;
        case 2:
            assert_true(pr->n_samples < MAX_ITEMS);
            pr->samples[pr->n_samples++] = m;
            break;
        case 4: /* location: id, line { function_id, line } */
            while (pb_next(&m, &f2, &v2, &m2)) {
                if (f2 == 1) {
                    id = v2;
                } else if (f2 == 4) {
                    unsigned f3;
                    uint64_t v3;
                    struct pb m3;
                    while (pb_next(&m2, &f3, &v3, &m3)) {
                        *(f3 == 1 ? &a : &c) = v3;
                    }
                }
            }
            assert_true(id > 0 && id < MAX_ITEMS);
            pr->loc_func[id] = a;
            pr->loc_line[id] = c;
            break;
        case 5: /* function: id, name, system_name, filename, start_line */
            while (pb_next(&m, &f2, &v2, &m2)) {
                if (f2 == 1) {
                    id = v2;
                } else if (f2 == 2) {
                    a = v2;
                } else if (f2 == 4) {
                    c = v2;
                }
            }
            assert_true(id > 0 && id < MAX_ITEMS);
            pr->func_name[id] = a;
            pr->func_file[id] = c;
            break;
        case 6:
            assert_true(pr->n_strings < MAX_ITEMS);
            pr->strings[pr->n_strings++] = m;
            break;
        case 9:
            pr->time_nanos = v;
            break;
        case 10:
            pr->duration_nanos = v;
            break;
        case 12:
            pr->period = v;
            break;
        default:
            break;
        }
    }
}

static void put_string(struct pb *out, const struct profile *pr, uint64_t i)
{
    assert_true(i < pr->n_strings);
    char *end = (char *)out->p + out->len;
    memcpy(end, pr->strings[i].p, pr->strings[i].len);
    out->len += pr->strings[i].len;
}

/* A sample as text: "TID NAME|frame|frame COUNT NS", outermost first; a frame is its
 * function, then " FILE:LINE" when it has a file. */
static void sample_text(const struct profile *pr, struct pb s, char *buf)
{
    uint64_t locs[32];
    size_t n_locs = 0;
    uint64_t values[2] = {0, 0};
    uint64_t thread = 0;
    uint64_t tid = 0;
    unsigned field;
    uint64_t v;
    struct pb m;
    while (pb_next(&s, &field, &v, &m)) {
        if (field == 1) {
            while (m.len > 0) {
                assert_true(n_locs < 32);
                locs[n_locs++] = pb_varint(&m);
            }
        } else if (field == 2) {
            values[0] = pb_varint(&m);
            values[1] = pb_varint(&m);
        } else if (field == 3) {
            unsigned f2;
            uint64_t v2;
            struct pb m2;
            uint64_t key = 0;
            uint64_t sv = 0;
            uint64_t num = 0;
            while (pb_next(&m, &f2, &v2, &m2)) {
                *(f2 == 1 ? &key : f2 == 2 ? &sv : &num) = v2;
            }
            if (pr->strings[key].len == 6 && memcmp(pr->strings[key].p, "thread", 6) == 0) {
                thread = sv;
            } else {
                tid = num;
            }
        }
    }
    struct pb out = {(const uint8_t *)buf, 0};
    out.len += (size_t)sprintf(buf, "%llu ", (unsigned long long)tid);
    put_string(&out, pr, thread);
    for (size_t k = n_locs; k > 0; k--) {
        uint64_t fn = pr->loc_func[locs[k - 1]];
        buf[out.len++] = '|';
        put_string(&out, pr, pr->func_name[fn]);
        if (pr->func_file[fn] != 0) {
            buf[out.len++] = ' ';
            put_string(&out, pr, pr->func_file[fn]);
            out.len += (size_t)sprintf(buf + out.len, ":%llu",
                                       (unsigned long long)pr->loc_line[locs[k - 1]]);
        }
    }
    sprintf(buf + out.len, " %llu %llu\n", (unsigned long long)values[0],
            (unsigned long long)values[1]);
}

static bool string_is(const struct profile *pr, uint64_t i, const char *s)
{
    return i < pr->n_strings && pr->strings[i].len == strlen(s) &&
           memcmp(pr->strings[i].p, s, strlen(s)) == 0;
}

static const char *const PPROF_SAMPLES[] = {
    "100 MainThread|main /app/main.py:3|Worker.run /app/work.py:12 3 30000000\n",
    "100 MainThread|main /app/main.py:3|<native>|odd;name\nx\xff\xc3\xa9 /app/we\\ird.py:7 2 "
    "20000000\n",
    "200 worker;1|Worker.run /app/work.py:11|<GC>|? 5 50000000\n",
    "300 |main /app/main.py:4|<unreadable frame: stack changed while read> 4 40000000\n",
};

static void test_export_pprof_is_a_gzipped_profile_with_the_same_counts(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    size_t len;
    char *gz = export_to_memory(EXPORT_PPROF, &o, &len);
    size_t raw_len;
    char *raw = gunzip(gz, len, &raw_len);
    free(gz);
    struct profile pr;
    decode_profile((struct pb){(const uint8_t *)raw, raw_len}, &pr);
    assert_true(pr.n_strings > 0);
    assert_int_equal(pr.strings[0].len, 0);
    assert_int_equal(pr.n_sample_types, 4);
    assert_true(string_is(&pr, pr.sample_types[0], "samples"));
    assert_true(string_is(&pr, pr.sample_types[1], "count"));
    assert_true(string_is(&pr, pr.sample_types[2], "wall"));
    assert_true(string_is(&pr, pr.sample_types[3], "nanoseconds"));
    assert_int_equal(pr.period, 10000000);
    assert_int_equal(pr.time_nanos, 1700000000500000000ULL);
    assert_int_equal(pr.duration_nanos, 50000000);
    assert_int_equal(pr.n_samples, 4);
    /* Each sample as text, one after another (the weird name holds a newline: counted by
     * samples, not lines). */
    char text[4][512];
    for (size_t i = 0; i < pr.n_samples; i++) {
        sample_text(&pr, pr.samples[i], text[i]);
    }
    for (size_t k = 0; k < 4; k++) {
        bool found = false;
        for (size_t i = 0; i < 4; i++) {
            found = found || strcmp(text[i], PPROF_SAMPLES[k]) == 0;
        }
        if (!found) {
            fail_msg("no sample %s", PPROF_SAMPLES[k]);
        }
    }
    free(raw);
}

/* go tool pprof, where Go is installed, reads the file and finds the same samples. */
static void test_export_pprof_reads_back_in_go_tool_pprof(void **state)
{
    (void)state;
    if (system("go tool -n pprof >/dev/null 2>&1") != 0) {
        skip();
    }
    struct export_opts o = opts_all();
    size_t len;
    char *gz = export_to_memory(EXPORT_PPROF, &o, &len);
    char dir[] = "/tmp/test_export.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    char cmd[1024];
    snprintf(path, sizeof path, "%s/profile.pb.gz", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(gz, 1, len, f), len);
    fclose(f);
    free(gz);
    snprintf(cmd, sizeof cmd, "HOME=%s go tool pprof -raw %s > %s/raw 2>&1", dir, path, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/raw", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    char *out = calloc(1, 1 << 16);
    assert_non_null(out);
    size_t n = fread(out, 1, (1 << 16) - 1, f);
    out[n] = '\0';
    fclose(f);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    const char *want[] = {"samples/count wall/nanoseconds",
                          "3   30000000:",
                          "2   20000000:",
                          "5   50000000:",
                          "4   40000000:",
                          "thread:[MainThread]",
                          "tid:[300]",
                          "<native>",
                          "Worker.run /app/work.py:12",
                          "Period: 10000000"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (strstr(out, want[i]) == NULL) {
            fail_msg("go tool pprof -raw does not say \"%s\":\n%s", want[i], out);
        }
    }
    free(out);
}

/* The pprof export of FEED_FN's samples with OPTS, decoded into *PR (which points into the
 * returned buffer: free it after). */
static char *pprof_of(const struct export_opts *opts, void (*feed_fn)(struct exporter *),
                      struct profile *pr)
{
    size_t len;
    char *gz = export_stream(EXPORT_PPROF, opts, feed_fn, &len);
    size_t raw_len;
    char *raw = gunzip(gz, len, &raw_len);
    free(gz);
    decode_profile((struct pb){(const uint8_t *)raw, raw_len}, pr);
    return raw;
}

/* 1: main:3 > Worker.run:12 at 0 and 10 ms, a pause, main:3 at 1 s and 1.01 s; 2 holds the
 * GIL in the first sample only. */
static void feed_pause(struct exporter *x)
{
    struct rec_frame a[] = {py(C_WORK, 12), py(C_MAIN, 3)};
    struct rec_frame b[] = {py(C_MAIN, 3)};
    add_one(x, 0, a, 2, true);
    add_one(x, 0.01, a, 2, false);
    add_one(x, 1.0, b, 1, false);
    add_one(x, 1.01, b, 1, false);
}

static void test_export_weights_are_half_the_gaps_around_stop_at_four_periods_the_last_one_period(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    o.mode = SAMPLER_MODE_GIL;
    struct profile pr;
    char *raw = pprof_of(&o, feed_pause, &pr);
    assert_int_equal(pr.n_samples, 3);
    /* Each sample stands for half the gaps on either side, the 990 ms pause cut to four
     * periods: the first 10 ms (the time to the next, as the first), the second (10 + 40) / 2,
     * the third (40 + 10) / 2, the last one period. 2's one sample stands for the time to the
     * next sample, not to its next GIL. */
    const char *expected[] = {
        "1 one|main /app/main.py:3|Worker.run /app/work.py:12 2 35000000\n",
        "2 two|main /app/main.py:1 1 10000000\n",
        "1 one|main /app/main.py:3 2 35000000\n",
    };
    char text[512];
    for (size_t i = 0; i < pr.n_samples; i++) { /* in the order the stacks were first seen */
        sample_text(&pr, pr.samples[i], text);
        assert_string_equal(text, expected[i]);
    }
    free(raw);
}
/* Samples as pytop takes them (schedule.h: a random point of each 10 ms) of a thread that works
 * in Worker.run for the first 3 ms of every 10 ms and in main the rest. */
enum { PHASED_SAMPLES = 20000 };

static void feed_phased(struct exporter *x)
{
    struct rec_frame work[] = {py(C_WORK, 12), py(C_MAIN, 3)};
    struct rec_frame idle[] = {py(C_MAIN, 3)};
    struct schedule sched;
    schedule_start(&sched, 1 / PERIOD, 0, 11);
    double t = schedule_due(&sched);
    for (int i = 0; i < PHASED_SAMPLES; i++) {
        bool working = fmod(t, PERIOD) < 0.3 * PERIOD;
        add_one(x, t, working ? work : idle, working ? 2 : 1, false);
        t = schedule_next(&sched, t);
    }
}

/* Worker.run's share of thread one's time is its 30 %: a weight of the gap to the next sample
 * alone made it about 40 % (a sample early in its period is followed by a long gap). */
static void test_export_weights_are_fair_to_work_in_step_with_the_rate(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    struct profile pr;
    char *raw = pprof_of(&o, feed_phased, &pr);
    double work = 0;
    double all = 0;
    char text[512];
    for (size_t i = 0; i < pr.n_samples; i++) {
        sample_text(&pr, pr.samples[i], text);
        unsigned long long count;
        unsigned long long weight;
        const char *tail = strrchr(text, ' ');
        assert_non_null(tail);
        const char *mid = tail - 1;
        while (mid > text && *mid != ' ') {
            mid--;
        }
        assert_int_equal(sscanf(mid, " %llu %llu", &count, &weight), 2);
        if (strncmp(text, "1 one|", 6) != 0) {
            continue;
        }
        all += (double)weight;
        work += strstr(text, "Worker.run") != NULL ? (double)weight : 0;
    }
    assert_true(all > 0.95 * PHASED_SAMPLES * PERIOD * 1e9);
    assert_true(fabs(work / all - 0.3) < 0.02);
    free(raw);
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
        cmocka_unit_test(test_export_pprof_is_a_gzipped_profile_with_the_same_counts),
        cmocka_unit_test(test_export_pprof_reads_back_in_go_tool_pprof),
        cmocka_unit_test(test_export_weights_are_half_the_gaps_around_stop_at_four_periods_the_last_one_period),
        cmocka_unit_test(test_export_weights_are_fair_to_work_in_step_with_the_rate),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
