/* Tests for cpyrec: recordings made by CPython 3.15's own sampler (tests/unit/data/cpyrec/,
 * from make-recordings) read back into the stacks CPython's replay prints, and the same files
 * cut short and corrupted. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/record/cpyrec.h"
#include "core/util/error.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/unit/data"
#endif

#define DATA TEST_DATA_DIR "/cpyrec/"

/* A whole file in memory. */
struct blob {
    uint8_t *p;
    size_t len;
};

static struct blob slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct blob b = {NULL, 0};
    size_t cap = 0;
    for (;;) {
        if (b.len == cap) {
            cap = cap > 0 ? cap * 2 : 65536;
            b.p = realloc(b.p, cap + 1);
            assert_non_null(b.p);
        }
        size_t n = fread(b.p + b.len, 1, cap - b.len, f);
        if (n == 0) {
            break;
        }
        b.len += n;
    }
    fclose(f);
    b.p[b.len] = '\0';
    return b;
}

/* Collapsed stacks, one line per distinct (thread, stack), as CPython's replay --collapsed
 * writes them: "tid:T;file:function:line;... COUNT", outermost frame first, the file's
 * basename, a synthetic frame by its name alone. */
struct stack_count {
    char *stack;
    unsigned long count;
};

struct collapsed {
    struct stack_count *lines;
    size_t n;
    size_t samples;   /* thread-samples seen, empty stacks included */
    size_t callbacks; /* rec_samples: one per time */
    size_t max_threads;
    double tmin;
    double tmax;
    bool ordered;
};

static void add_line(struct collapsed *c, const char *stack, unsigned long count)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->lines[i].stack, stack) == 0) {
            c->lines[i].count += count;
            return;
        }
    }
    c->lines = realloc(c->lines, (c->n + 1) * sizeof *c->lines);
    assert_non_null(c->lines);
    c->lines[c->n].stack = strdup(stack);
    assert_non_null(c->lines[c->n].stack);
    c->lines[c->n].count = count;
    c->n++;
}

static void collapsed_free(struct collapsed *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->lines[i].stack);
    }
    free(c->lines);
}

static void append(char *buf, size_t cap, size_t *len, const char *p, size_t n)
{
    assert_true(*len + n < cap);
    memcpy(buf + *len, p, n);
    *len += n;
    buf[*len] = '\0';
}

static void collect_thread(struct collapsed *c, const struct rec_thread *th)
{
    c->samples++;
    if (th->n_frames == 0) {
        return;
    }
    char buf[16384];
    size_t len = 0;
    char part[1024];
    int n = snprintf(part, sizeof part, "tid:%d", (int)th->tid);
    append(buf, sizeof buf, &len, part, (size_t)n);
    for (size_t i = th->n_frames; i-- > 0;) {
        const struct rec_frame *f = &th->frames[i];
        if (f->code == NULL) {
            n = snprintf(part, sizeof part, ";%s", f->kind == SNAP_FRAME_GC ? "<GC>" : "<native>");
        } else {
            const char *file = f->code->file.ptr;
            size_t flen = f->code->file.len;
            const char *slash = memrchr(file, '/', flen);
            if (slash != NULL) {
                flen -= (size_t)(slash + 1 - file);
                file = slash + 1;
            }
            n = snprintf(part, sizeof part, ";%.*s:%.*s:%d", (int)flen, file,
                         (int)f->code->function.len, f->code->function.ptr,
                         f->line >= 0 ? f->line : 0);
        }
        append(buf, sizeof buf, &len, part, (size_t)n);
    }
    add_line(c, buf, 1);
}

static int collect(void *ctx, const struct rec_sample *s)
{
    struct collapsed *c = ctx;
    if (c->callbacks > 0 && s->t < c->tmax) {
        c->ordered = false;
    }
    if (c->callbacks == 0 || s->t < c->tmin) {
        c->tmin = s->t;
    }
    if (c->callbacks == 0 || s->t > c->tmax) {
        c->tmax = s->t;
    }
    c->callbacks++;
    assert_true(s->n_threads >= 1);
    if (s->n_threads > c->max_threads) {
        c->max_threads = s->n_threads;
    }
    for (size_t i = 0; i < s->n_threads; i++) {
        collect_thread(c, &s->threads[i]);
    }
    return 0;
}

/* CPython's file: each line's last space separates the stack from its count. */
static void load_expected(const char *path, struct collapsed *c)
{
    struct blob b = slurp(path);
    char *save = NULL;
    for (char *line = strtok_r((char *)b.p, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *space = strrchr(line, ' ');
        assert_non_null(space);
        *space = '\0';
        add_line(c, line, strtoul(space + 1, NULL, 10));
    }
    free(b.p);
}

static void assert_same_stacks(const struct collapsed *got, const struct collapsed *want)
{
    for (size_t i = 0; i < want->n; i++) {
        unsigned long count = 0;
        for (size_t j = 0; j < got->n; j++) {
            if (strcmp(got->lines[j].stack, want->lines[i].stack) == 0) {
                count = got->lines[j].count;
            }
        }
        if (count != want->lines[i].count) {
            fail_msg("%s: %lu samples, CPython's replay says %lu", want->lines[i].stack, count,
                     want->lines[i].count);
        }
    }
    assert_int_equal(got->n, want->n);
}

static void check_against_replay(const char *bin, const char *expected, double seconds)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open(bin, &err);
    if (r == NULL) {
        fail_msg("%s", err.msg);
    }
    const struct rec_header *h = cpyrec_header(r);
    assert_int_equal(h->format.len, strlen("cpython 1"));
    assert_memory_equal(h->format.ptr, "cpython 1", h->format.len);
    assert_int_equal(h->python_version.len, strlen("3.15.2"));
    assert_memory_equal(h->python_version.ptr, "3.15.2", h->python_version.len);
    assert_true(h->hexversion >> 16 == 0x030f);
    const char *recorder = "CPython profiling.sampling, wall mode";
    assert_int_equal(h->recorder.len, strlen(recorder));
    assert_memory_equal(h->recorder.ptr, recorder, h->recorder.len);
    assert_true(h->rate_hz >= 100.0 && h->rate_hz <= 200.0);
    assert_true(cpyrec_duration(r) > seconds - 0.1 && cpyrec_duration(r) < seconds + 0.1);

    struct collapsed got = {.ordered = true};
    assert_int_equal(cpyrec_scan(r, 0, 1e9, collect, &got, &err), 0);
    assert_string_equal(cpyrec_damage(r), "");
    assert_true(got.ordered);
    /* every thread is sampled at every time (-a): one rec_sample holds them all */
    assert_int_equal(got.max_threads, 4);
    assert_true(got.callbacks * 4 >= got.samples && got.callbacks * 3 < got.samples);
    assert_true(got.tmin >= 0 && got.tmax < seconds + 0.5);
    struct collapsed want = {0};
    load_expected(expected, &want);
    assert_same_stacks(&got, &want);
    collapsed_free(&want);
    collapsed_free(&got);
    cpyrec_close(r);
}

static void test_cpyrec_plain_file_gives_the_stacks_cpython_replays(void **state)
{
    check_against_replay(DATA "plain.bin", DATA "plain.collapsed", 2.0);
}

static void test_cpyrec_zstd_file_gives_the_stacks_cpython_replays(void **state)
{
    check_against_replay(DATA "zstd.bin", DATA "zstd.collapsed", 2.0);
}

/* --native: CPython's synthetic <native> frames (file "~") come as native frames, no code. */
static void test_cpyrec_native_frames_give_the_stacks_cpython_replays(void **state)
{
    check_against_replay(DATA "native.bin", DATA "native.collapsed", 1.0);
}

static void test_cpyrec_sniff_knows_the_magic_and_refuses_other_bytes(void **state)
{
    struct blob b = slurp(DATA "zstd.bin");
    assert_true(cpyrec_sniff(b.p, b.len));
    assert_true(cpyrec_sniff(b.p, 4));
    assert_false(cpyrec_sniff(b.p, 3));
    assert_false(cpyrec_sniff("PYTOPREC", 8));
    static const uint8_t swapped[] = {'T', 'A', 'C', 'H', 0, 0, 0, 1};
    assert_true(cpyrec_sniff(swapped, sizeof swapped));
    free(b.p);
}

/* Each distinct (function, file) has one rec_code, with an id no other has. */
struct codes {
    const struct rec_code *seen[256];
    size_t n;
};

static void collect_thread_codes(struct codes *c, const struct rec_thread *th)
{
    for (size_t i = 0; i < th->n_frames; i++) {
        const struct rec_code *code = th->frames[i].code;
        if (code == NULL) {
            continue;
        }
        assert_int_equal(code->first_line, -1);
        bool found = false;
        for (size_t j = 0; j < c->n; j++) {
            const struct rec_code *o = c->seen[j];
            bool same = o->function.len == code->function.len &&
                        memcmp(o->function.ptr, code->function.ptr, o->function.len) == 0 &&
                        o->file.len == code->file.len &&
                        memcmp(o->file.ptr, code->file.ptr, o->file.len) == 0;
            if (o == code) {
                found = true;
            } else {
                assert_false(same);
                assert_int_not_equal(o->id, code->id);
            }
        }
        if (!found) {
            assert_true(c->n < 256);
            c->seen[c->n++] = code;
        }
    }
}

static int collect_codes(void *ctx, const struct rec_sample *s)
{
    struct codes *c = ctx;
    for (size_t k = 0; k < s->n_threads; k++) {
        collect_thread_codes(c, &s->threads[k]);
    }
    return 0;
}

static void test_cpyrec_interns_one_code_per_function_and_file(void **state)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open(DATA "plain.bin", &err);
    assert_non_null(r);
    struct codes c = {.n = 0};
    assert_int_equal(cpyrec_scan(r, 0, 1e9, collect_codes, &c, &err), 0);
    /* <module>, _bootstrap, _bootstrap_inner, run, three workers, recurse, spin */
    assert_int_equal(c.n, 9);
    cpyrec_close(r);
}

struct statuses {
    size_t main;
    size_t gil;
    size_t gil_requested;
    size_t cpu_unknown;
    size_t gc_known;
};

static void status_thread(struct statuses *st, const struct rec_thread *th)
{
    st->main += th->main;
    st->gil += th->gil == SNAP_YES;
    st->gil_requested += th->gil_requested == SNAP_YES;
    st->cpu_unknown += th->on_cpu == SNAP_UNKNOWN;
    assert_int_not_equal(th->gil, SNAP_UNKNOWN);
    st->gc_known += th->in_gc != SNAP_UNKNOWN;
    assert_true(th->tid > 0);
    assert_int_equal(th->thread_id, 0);
    assert_int_equal(th->name.ptr, NULL);
}

static int collect_status(void *ctx, const struct rec_sample *s)
{
    struct statuses *st = ctx;
    for (size_t i = 0; i < s->n_threads; i++) {
        status_thread(st, &s->threads[i]);
    }
    return 0;
}

static void test_cpyrec_maps_status_bits_to_thread_flags(void **state)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open(DATA "zstd.bin", &err);
    assert_non_null(r);
    struct statuses st = {0};
    assert_int_equal(cpyrec_scan(r, 0, 1e9, collect_status, &st, &err), 0);
    /* four threads sampled together: the main thread is a quarter of the samples */
    struct collapsed all = {.ordered = true};
    assert_int_equal(cpyrec_scan(r, 0, 1e9, collect, &all, &err), 0);
    assert_true(st.main > 0 && st.main * 3 < all.samples);
    /* two busy threads take turns with the GIL */
    assert_true(st.gil > 0 && st.gil < all.samples / 2);
    assert_true(st.gil_requested > 0);
    /* wall mode does not look at the CPU: every status has THREAD_STATUS_UNKNOWN */
    assert_int_equal(st.cpu_unknown, all.samples);
    /* the recording captured <GC> frames (its default), so not being in GC is known */
    assert_int_equal(st.gc_known, all.samples);
    collapsed_free(&all);
    cpyrec_close(r);
}

static void test_cpyrec_scan_keeps_only_the_time_range_asked(void **state)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open(DATA "plain.bin", &err);
    assert_non_null(r);
    struct collapsed all = {.ordered = true};
    struct collapsed part = {.ordered = true};
    assert_int_equal(cpyrec_scan(r, 0, 1e9, collect, &all, &err), 0);
    assert_int_equal(cpyrec_scan(r, 0.5, 1.0, collect, &part, &err), 0);
    assert_true(part.samples > 0 && part.samples < all.samples / 2);
    assert_true(part.tmin >= 0.5 && part.tmax <= 1.0);
    collapsed_free(&all);
    collapsed_free(&part);
    cpyrec_close(r);
}

static int stop_at_ten(void *ctx, const struct rec_sample *s)
{
    int *n = ctx;
    return ++*n == 10 ? 42 : 0;
}

static void test_cpyrec_scan_stops_when_the_callback_says_so(void **state)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open(DATA "zstd.bin", &err);
    assert_non_null(r);
    int n = 0;
    assert_int_equal(cpyrec_scan(r, 0, 1e9, stop_at_ten, &n, &err), 42);
    assert_int_equal(n, 10);
    cpyrec_close(r);
}

static void test_cpyrec_open_names_a_missing_file_as_io(void **state)
{
    struct pt_error err = {0};
    assert_null(cpyrec_open(DATA "no-such.bin", &err));
    assert_int_equal(err.code, PT_E_IO);
    assert_non_null(strstr(err.msg, "no-such.bin"));
}

static void test_cpyrec_open_refuses_a_header_never_written(void **state)
{
    struct blob b = slurp(DATA "plain.bin");
    memset(b.p + 8, 0, 56);
    struct pt_error err = {0};
    assert_null(cpyrec_open_mem(b.p, b.len, &err));
    assert_int_equal(err.code, PT_E_FORMAT);
    free(b.p);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* The file with its sample data cut to KEEP bytes and the tables moved up to follow it, as a
 * file whose samples were damaged but whose tables survived. */
static struct blob cut_samples(const struct blob *b, size_t keep)
{
    uint64_t strings = le64(b->p + 40);
    uint64_t frames = le64(b->p + 48);
    assert_true(64 + keep <= strings);
    size_t tail = b->len - (size_t)strings;
    struct blob c = {malloc(64 + keep + tail), 64 + keep + tail};
    assert_non_null(c.p);
    memcpy(c.p, b->p, 64 + keep);
    memcpy(c.p + 64 + keep, b->p + strings, tail);
    uint64_t shift = strings - 64 - keep;
    put64(c.p + 40, strings - shift);
    put64(c.p + 48, frames - shift);
    put64(c.p + c.len - 24, c.len);
    return c;
}

/* A file built by hand: the strings f.py, outer and inner, the frames 0 outer() at f.py:10
 * and 1 inner() at f.py:20, RECORDS as the sample data, N_SAMPLES and N_THREADS in the
 * header. */
struct builder {
    uint8_t *buf;
    size_t len;
    size_t cap;
};

static void put_bytes(struct builder *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->buf = realloc(b->buf, b->cap);
        assert_non_null(b->buf);
    }
    if (n > 0) {
        memcpy(b->buf + b->len, p, n);
    }
    b->len += n;
}

static void put_varint(struct builder *b, uint64_t v)
{
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        byte |= v != 0 ? 0x80 : 0;
        put_bytes(b, &byte, 1);
    } while (v != 0);
}

static void put_record(struct builder *b, uint64_t tid, uint8_t type)
{
    uint8_t fixed[13] = {0};
    put64(fixed, tid);
    fixed[12] = type;
    put_bytes(b, fixed, sizeof fixed);
}

static struct blob build(const struct builder *records, uint64_t n_samples, uint32_t n_threads)
{
    static const uint8_t tables[] = {
        4, 'f', '.', 'p', 'y', 5, 'o', 'u', 't', 'e', 'r', 5, 'i', 'n', 'n', 'e', 'r',
        /* file, function, line (zigzag), end line delta, column, end column delta, opcode */
        0, 1, 20, 0, 1, 0, 255, 0, 2, 40, 0, 1, 0, 255};
    size_t strings = 64 + records->len;
    size_t len = strings + sizeof tables + 32;
    struct blob f = {calloc(1, len), len};
    assert_non_null(f.p);
    static const uint8_t magic[] = {0x48, 0x43, 0x41, 0x54, 1, 0, 0, 0, 3, 15, 0, 0};
    memcpy(f.p, magic, sizeof magic);
    put64(f.p + 12, 1000000);
    put64(f.p + 20, 1000);
    put64(f.p + 28, n_samples);
    memcpy(f.p + 36, &n_threads, 4);
    put64(f.p + 40, strings);
    put64(f.p + 48, strings + 17);
    f.p[60] = 1;
    if (records->len > 0) {
        memcpy(f.p + 64, records->buf, records->len);
    }
    memcpy(f.p + strings, tables, sizeof tables);
    f.p[len - 32] = 3;
    f.p[len - 28] = 2;
    put64(f.p + len - 24, len);
    return f;
}

/* What a hand-built file's scan gave: each sample as "tid t frames" lines. */
struct trace {
    char text[2048];
    size_t len;
    int rc;
    struct pt_error err;
    char damage[256];
};

static int trace_sample(void *ctx, const struct rec_sample *s)
{
    struct trace *t = ctx;
    for (size_t k = 0; k < s->n_threads; k++) {
        const struct rec_thread *th = &s->threads[k];
        int n = snprintf(t->text + t->len, sizeof t->text - t->len, "%s%d %.4f", k > 0 ? "& " : "",
                         (int)th->tid, s->t);
        t->len += (size_t)n;
        for (size_t i = 0; i < th->n_frames; i++) {
            const struct rec_frame *f = &th->frames[i];
            n = snprintf(t->text + t->len, sizeof t->text - t->len, " %.*s:%d",
                         (int)f->code->function.len, f->code->function.ptr, f->line);
            t->len += (size_t)n;
        }
        n = snprintf(t->text + t->len, sizeof t->text - t->len, "\n");
        t->len += (size_t)n;
        assert_true(t->len < sizeof t->text - 1);
    }
    return 0;
}

static struct trace run(const struct builder *records, uint64_t n_samples, uint32_t n_threads)
{
    struct blob f = build(records, n_samples, n_threads);
    struct trace t = {.len = 0};
    struct cpyrec *r = cpyrec_open_mem(f.p, f.len, &t.err);
    if (r == NULL) {
        fail_msg("%s", t.err.msg);
    }
    t.rc = cpyrec_scan(r, -1e9, 1e9, trace_sample, &t, &t.err);
    snprintf(t.damage, sizeof t.damage, "%s", cpyrec_damage(r));
    cpyrec_close(r);
    free(f.p);
    return t;
}

static void test_cpyrec_decodes_every_record_type_by_hand(void **state)
{
    struct builder b = {.len = 0};
    put_record(&b, 7, 1); /* FULL at +1 ms: outer */
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 0);
    put_record(&b, 8, 1); /* another thread, FULL at +1.5 ms: inner */
    put_varint(&b, 1500);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 1);
    put_record(&b, 7, 2); /* SUFFIX at +2 ms: keep outer, push inner */
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 1);
    put_varint(&b, 1);
    put_record(&b, 7, 0); /* REPEAT twice, at +3 and +5 ms */
    put_varint(&b, 2);
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 2000);
    put_bytes(&b, "\0", 1);
    put_record(&b, 7, 3); /* POP_PUSH at +6 ms: pop inner, push outer */
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 1);
    put_varint(&b, 0);
    put_record(&b, 8, 0); /* thread 8 again at +3 ms, written late as a run is */
    put_varint(&b, 1);
    put_varint(&b, 1500);
    put_bytes(&b, "\0", 1);
    struct trace t = run(&b, 7, 2);
    assert_int_equal(t.rc, 0);
    /* in time order; the two threads at +3 ms in one sample ("&"), in the file's order */
    assert_string_equal(t.text, "7 0.0010 outer:10\n"
                                "8 0.0015 inner:20\n"
                                "7 0.0020 inner:20 outer:10\n"
                                "7 0.0030 inner:20 outer:10\n"
                                "& 8 0.0030 inner:20\n"
                                "7 0.0050 inner:20 outer:10\n"
                                "7 0.0060 outer:10 outer:10\n");
    free(b.buf);
}

/* CPython writes a new thread's empty stack as a repeat of the empty stack it starts with
 * (fuzz_cpyrec found a null stack copied under UBSan). */
static void test_cpyrec_takes_a_first_record_repeating_an_empty_stack(void **state)
{
    struct builder b = {.len = 0};
    put_record(&b, 7, 0);
    put_varint(&b, 2);
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_record(&b, 7, 3); /* popping nothing from nothing, pushing nothing */
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 0);
    put_varint(&b, 0);
    struct trace t = run(&b, 3, 1);
    assert_int_equal(t.rc, 0);
    assert_string_equal(t.text, "7 0.0010\n7 0.0020\n7 0.0030\n");
    free(b.buf);
}

struct lateness {
    size_t samples;
    size_t late;
    double latest;
};

static int count_late(void *ctx, const struct rec_sample *s)
{
    struct lateness *l = ctx;
    if (l->samples > 0 && s->t < l->latest) {
        l->late++;
    }
    if (s->t > l->latest) {
        l->latest = s->t;
    }
    l->samples += s->n_threads;
    return 0;
}

/* Thread 7 idle while thread 8 changes stack at every time, 70000 times, 7's run written at
 * the end: past the reorder window its samples come late, rather than being held without
 * bound, and every sample still comes once. */
static void test_cpyrec_delivers_a_run_held_back_past_the_window_late(void **state)
{
    enum { TICKS = 70000 };
    struct builder b = {.len = 0};
    for (uint64_t tid = 7; tid <= 8; tid++) {
        put_record(&b, tid, 1);
        put_varint(&b, 1000);
        put_bytes(&b, "\0", 1);
        put_varint(&b, 1);
        put_varint(&b, tid - 7);
    }
    for (int i = 1; i < TICKS; i++) {
        put_record(&b, 8, 3);
        put_varint(&b, 1000);
        put_bytes(&b, "\0", 1);
        put_varint(&b, 1);
        put_varint(&b, 1);
        put_varint(&b, (uint64_t)(i % 2));
    }
    put_record(&b, 7, 0);
    put_varint(&b, TICKS - 1);
    for (int i = 1; i < TICKS; i++) {
        put_varint(&b, 1000);
        put_bytes(&b, "\0", 1);
    }
    struct blob f = build(&b, 2 * TICKS, 2);
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open_mem(f.p, f.len, &err);
    assert_non_null(r);
    struct lateness l = {0, 0, 0};
    assert_int_equal(cpyrec_scan(r, -1, 1e9, count_late, &l, &err), 0);
    assert_int_equal(l.samples, 2 * TICKS);
    assert_true(l.late > 0);
    cpyrec_close(r);
    free(f.p);
    free(b.buf);
}

/* One good sample of thread 7, then BAD: the good one comes, then damage naming WHAT. */
static void check_hostile(const struct builder *bad, uint64_t n_samples, uint32_t n_threads,
                          const char *what)
{
    struct builder b = {.len = 0};
    put_record(&b, 7, 1);
    put_varint(&b, 1000);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 0);
    if (bad->len > 0) {
        put_bytes(&b, bad->buf, bad->len);
    }
    struct trace t = run(&b, n_samples, n_threads);
    assert_int_equal(t.rc, -1);
    assert_int_equal(t.err.code, PT_E_FORMAT);
    assert_string_equal(t.text, "7 0.0010 outer:10\n");
    assert_string_equal(t.damage, t.err.msg);
    if (strstr(t.damage, what) == NULL || strstr(t.damage, "record 1 at byte 18") == NULL) {
        fail_msg("\"%s\" does not say \"%s\" at record 1", t.damage, what);
    }
    free(b.buf);
}

static void test_cpyrec_refuses_hostile_records_after_the_good_ones(void **state)
{
    struct builder b = {.len = 0};
    put_record(&b, 9, 1); /* a thread the header did not count */
    check_hostile(&b, 10, 1, "more threads than the 1");

    b.len = 0;
    put_record(&b, 7, 4);
    check_hostile(&b, 10, 1, "unknown record type 4");

    b.len = 0;
    put_record(&b, 7, 1); /* a stack deeper than any walk keeps */
    put_varint(&b, 1);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 100000);
    check_hostile(&b, 10, 1, "at most 8192");

    b.len = 0;
    put_record(&b, 7, 1);
    put_varint(&b, 1);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 1);
    put_varint(&b, 2);
    check_hostile(&b, 10, 1, "frame index 2 of 2");

    b.len = 0;
    put_record(&b, 7, 2); /* more frames shared than the stack has */
    put_varint(&b, 1);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 5);
    put_varint(&b, 0);
    check_hostile(&b, 10, 1, "5 frames shared of a stack of 1");

    b.len = 0;
    put_record(&b, 7, 0); /* more repeats than the header's samples */
    put_varint(&b, 1000000);
    check_hostile(&b, 10, 1, "more samples than the 10");

    b.len = 0;
    put_record(&b, 7, 0);
    put_varint(&b, 1);
    put_varint(&b, UINT64_MAX);
    put_bytes(&b, "\0", 1);
    check_hostile(&b, 10, 1, "overflows");

    b.len = 0;
    put_record(&b, 7, 1); /* cut inside its frame indices */
    put_varint(&b, 1);
    put_bytes(&b, "\0", 1);
    put_varint(&b, 3);
    put_varint(&b, 0);
    check_hostile(&b, 10, 1, "ends inside its frame indices");

    b.len = 0; /* the data ends cleanly, but short of the header's count */
    check_hostile(&b, 10, 1, "after 1 of the header's 10 samples");
    free(b.buf);
}

static int count_samples(void *ctx, const struct rec_sample *s)
{
    size_t *n = ctx;
    assert_true(s->n_threads >= 1);
    for (size_t k = 0; k < s->n_threads; k++) {
        (*n)++;
        for (size_t i = 0; i < s->threads[k].n_frames; i++) {
            const struct rec_frame *f = &s->threads[k].frames[i];
            if (f->code != NULL) {
                assert_true(f->code->function.len < 4096);
            }
        }
    }
    return 0;
}

/* Opens LEN bytes and scans them: refused as a format error, or fewer samples than ALL and
 * a damage sentence, or (for bytes that still decode) a clean scan. Returns the samples. */
static size_t scan_damaged(const uint8_t *p, size_t len, size_t all, bool must_fail)
{
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open_mem(p, len, &err);
    if (r == NULL) {
        assert_int_equal(err.code, PT_E_FORMAT);
        assert_true(err.msg[0] != '\0');
        return 0;
    }
    size_t n = 0;
    int rc = cpyrec_scan(r, -1e18, 1e18, count_samples, &n, &err);
    if (rc < 0) {
        assert_int_equal(err.code, PT_E_FORMAT);
        assert_true(cpyrec_damage(r)[0] != '\0');
        assert_non_null(strstr(err.msg, "sample data"));
        assert_true(n < all);
    } else {
        assert_int_equal(rc, 0);
        assert_false(must_fail);
    }
    cpyrec_close(r);
    return n;
}

/* MIN_GROWTH: how many cuts at least must give more samples than the cuts before them (zstd
 * hands out nothing of a block that is cut, and a small recording is one block). */
static void check_cuts(const char *path, size_t min_growth)
{
    struct blob b = slurp(path);
    size_t all = scan_damaged(b.p, b.len, SIZE_MAX, false);
    assert_true(all > 1000);
    /* every 1/50th prefix of the file: the footer and tables are gone */
    for (int k = 0; k < 50; k++) {
        assert_int_equal(scan_damaged(b.p, b.len * (size_t)k / 50, all, true), 0);
    }
    /* the sample data cut short, the tables kept: the samples before the cut, then damage */
    size_t data = (size_t)le64(b.p + 40) - 64;
    size_t last = 0;
    size_t grew = 0;
    for (int k = 0; k < 50; k++) {
        struct blob c = cut_samples(&b, data * (size_t)k / 50);
        size_t n = scan_damaged(c.p, c.len, all, true);
        grew += n > last;
        last = n > last ? n : last;
        free(c.p);
    }
    assert_true(grew >= min_growth);
    free(b.p);
}

static void test_cpyrec_plain_file_cut_short_gives_the_samples_before_the_cut(void **state)
{
    check_cuts(DATA "plain.bin", 40);
}

static void test_cpyrec_zstd_file_cut_short_gives_the_samples_before_the_cut(void **state)
{
    check_cuts(DATA "zstd.bin", 0);
}

static void test_cpyrec_corrupt_bytes_never_crash(void **state)
{
    static const char *const files[] = {DATA "plain.bin", DATA "zstd.bin"};
    for (size_t f = 0; f < 2; f++) {
        struct blob b = slurp(files[f]);
        uint32_t seed = 12345;
        for (int trial = 0; trial < 300; trial++) {
            struct blob c = {malloc(b.len), b.len};
            assert_non_null(c.p);
            memcpy(c.p, b.p, b.len);
            for (int k = 0; k < 1 + trial % 4; k++) {
                seed = seed * 1103515245u + 12345u;
                size_t at = (seed >> 8) % c.len;
                seed = seed * 1103515245u + 12345u;
                c.p[at] ^= (uint8_t)(1 + (seed >> 16) % 255);
            }
            /* corrupt data may still decode, to a different count of samples */
            scan_damaged(c.p, c.len, SIZE_MAX, false);
            free(c.p);
        }
        free(b.p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpyrec_sniff_knows_the_magic_and_refuses_other_bytes),
        cmocka_unit_test(test_cpyrec_plain_file_gives_the_stacks_cpython_replays),
        cmocka_unit_test(test_cpyrec_zstd_file_gives_the_stacks_cpython_replays),
        cmocka_unit_test(test_cpyrec_native_frames_give_the_stacks_cpython_replays),
        cmocka_unit_test(test_cpyrec_interns_one_code_per_function_and_file),
        cmocka_unit_test(test_cpyrec_maps_status_bits_to_thread_flags),
        cmocka_unit_test(test_cpyrec_scan_keeps_only_the_time_range_asked),
        cmocka_unit_test(test_cpyrec_scan_stops_when_the_callback_says_so),
        cmocka_unit_test(test_cpyrec_open_names_a_missing_file_as_io),
        cmocka_unit_test(test_cpyrec_open_refuses_a_header_never_written),
        cmocka_unit_test(test_cpyrec_decodes_every_record_type_by_hand),
        cmocka_unit_test(test_cpyrec_takes_a_first_record_repeating_an_empty_stack),
        cmocka_unit_test(test_cpyrec_refuses_hostile_records_after_the_good_ones),
        cmocka_unit_test(test_cpyrec_delivers_a_run_held_back_past_the_window_late),
        cmocka_unit_test(test_cpyrec_plain_file_cut_short_gives_the_samples_before_the_cut),
        cmocka_unit_test(test_cpyrec_zstd_file_cut_short_gives_the_samples_before_the_cut),
        cmocka_unit_test(test_cpyrec_corrupt_bytes_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
