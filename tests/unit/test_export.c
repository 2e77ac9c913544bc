/* test_export: a hand-built stream of samples through the four exporters: the collapsed text
 * exactly, the filters, and speedscope, pprof and chrome agreeing with it. */
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
#include "core/util/error.h"
#include "core/util/limits.h"

static struct snap_str str(const char *s)
{
    return (struct snap_str){s, s != NULL ? strlen(s) : 0};
}

enum { C_MAIN, C_WORK, C_WEIRD, C_UNKNOWN, C_MAIN_AGAIN, N_CODES };
static struct rec_code codes[N_CODES];

static void init_codes(void)
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

static struct rec_frame py(int code, int line)
{
    return (struct rec_frame){
        .code = &codes[code], .line = line, .offset = UINT32_MAX, .kind = SNAP_FRAME_PYTHON};
}

static struct rec_frame synthetic(enum snap_frame_kind kind, enum snap_unreadable why)
{
    return (struct rec_frame){.line = -1, .offset = UINT32_MAX, .kind = kind, .unreadable = why};
}

static const double PERIOD = 0.01;

/* Five samples 10 ms apart, and a sixth that failed:
 * 100 MainThread (GIL, on CPU): A = main:3 > Worker.run:12 three times, then B = main:3 >
 *     <native> > odd:7 twice;
 * 200 "worker;1" (no GIL, off CPU; an exception in the third sample): C = Worker.run:11 >
 *     <GC> > ? five times;
 * 300 (no name, CPU unknown): not read in the first sample, then D = main:4 > <shim> >
 *     <unreadable> four times (the shim is left out). */
static void feed(struct exporter *x)
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

static const struct rec_header header = {
    .format = {"pytop 1", 7},
    .pid = 4242,
    .python_version = {"3.14.0", 6},
    .rate_hz = 100,
    .start_wall = 1700000000.5,
    .started = -1,
};

static struct export_opts opts_all(void)
{
    return (struct export_opts){.from = 0,
                                .to = INFINITY,
                                .mode = SAMPLER_MODE_WALL,
                                .period_s = PERIOD,
                                .header = &header};
}

/* The export of the stream in format F with OPTS, NUL-terminated (*LEN bytes before it). */
/* The export of the samples FEED_FN gives in format F with OPTS, NUL-terminated (*LEN bytes
 * before it). */
static char *export_stream(enum export_format f, const struct export_opts *opts,
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

static char *export_to_memory(enum export_format f, const struct export_opts *opts, size_t *len)
{
    return export_stream(f, opts, feed, len);
}

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

/* Runs SCRIPT (python3) on DATA; its standard output, or NULL when there is no python3. */
static char *run_python(const char *script, const char *data, size_t len)
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
static void check_lines(const char *got, const char *const *expected, size_t n)
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
    if (system("command -v go >/dev/null 2>&1") != 0) {
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
            assert_true(disjoint || nested);
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

/* One sample of thread 1 at T with FRAMES (and thread 2, holding the GIL or not, at main:1). */
static void add_one(struct exporter *x, double t, const struct rec_frame *frames, size_t n,
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

static void test_export_weights_stop_at_four_periods_and_the_last_is_one_period(void **state)
{
    (void)state;
    struct export_opts o = opts_all();
    o.mode = SAMPLER_MODE_GIL;
    size_t len;
    char *gz = export_stream(EXPORT_PPROF, &o, feed_pause, &len);
    size_t raw_len;
    char *raw = gunzip(gz, len, &raw_len);
    free(gz);
    struct profile pr;
    decode_profile((struct pb){(const uint8_t *)raw, raw_len}, &pr);
    assert_int_equal(pr.n_samples, 3);
    /* 10 ms, then the 990 ms pause cut to four periods; 10 ms, then one period for the last;
     * 2's one sample stands for the time to the next sample, not to its next GIL. */
    const char *expected[] = {
        "1 one|main /app/main.py:3|Worker.run /app/work.py:12 2 50000000\n",
        "2 two|main /app/main.py:1 1 10000000\n",
        "1 one|main /app/main.py:3 2 20000000\n",
    };
    char text[512];
    for (size_t i = 0; i < pr.n_samples; i++) { /* in the order the stacks were first seen */
        sample_text(&pr, pr.samples[i], text);
        assert_string_equal(text, expected[i]);
    }
    free(raw);
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
    init_codes();
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
        cmocka_unit_test(test_export_pprof_is_a_gzipped_profile_with_the_same_counts),
        cmocka_unit_test(test_export_pprof_reads_back_in_go_tool_pprof),
        cmocka_unit_test(test_export_chrome_events_nest_within_each_thread),
        cmocka_unit_test(test_export_chrome_is_json),
        cmocka_unit_test(test_export_weights_stop_at_four_periods_and_the_last_is_one_period),
        cmocka_unit_test(test_export_chrome_events_nest_when_times_go_back),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
