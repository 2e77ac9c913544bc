/* test_record: .pyrec recordings written by recwrite and read back by recread: random sample
 * streams come back exactly, sample for sample; a file cut short anywhere or corrupted gives
 * what came before the damage and says so, never a crash. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/pyobj/code.h"
#include "core/record/recconv.h"
#include "core/record/recformat.h"
#include "core/record/recread.h"
#include "core/record/recwrite.h"
#include "core/util/error.h"
#include "core/walk/sample.h"

enum {
    N_CODES = 24,
    MAX_THREADS = 8,
    MAX_DEPTH = 48,
    N_SAMPLES = 3000,
};

/* The stream written, kept to compare: per sample its time, whether it failed, and each
 * thread's fields and frames. */
struct kept_thread {
    struct sample_thread t;
    char name[32];
    struct sample_frame frames[MAX_DEPTH];
    enum snap_bool on_cpu;
};

struct kept {
    double t;
    bool failed;
    size_t n;
    struct kept_thread threads[MAX_THREADS];
};

static struct code_info codes[N_CODES];
static char code_names[N_CODES][32];
static struct kept *stream;
static size_t n_stream;

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(next() % n);
}

static void make_codes(void)
{
    for (int i = 0; i < N_CODES; i++) {
        /* Odd names: separators, a newline, bytes that are not UTF-8. */
        snprintf(code_names[i], sizeof code_names[i], "f%d;\n\xff<%d>", i, i * 7);
        codes[i] = (struct code_info){.qualname = code_names[i],
                                      .qualname_len = strlen(code_names[i]),
                                      .name = code_names[i],
                                      .name_len = 2,
                                      .filename = (char *)(i % 3 == 0 ? "/srv/a.py" : "/srv/b.py"),
                                      .filename_len = 9,
                                      .firstlineno = 10 * i,
                                      .serial = 1000 + (uint64_t)i};
    }
}

static enum snap_bool tri(void)
{
    unsigned v = pick(3);
    return v == 0 ? SNAP_NO : v == 1 ? SNAP_YES : SNAP_UNKNOWN;
}

/* The next sample: each thread's stack changes a little (most stay), flags now and then;
 * threads come and go; names change. */
static void next_sample(struct kept *k, const struct kept *prev, double t)
{
    *k = (struct kept){.t = t};
    if (pick(50) == 0) {
        k->failed = true;
        return;
    }
    k->n = prev != NULL && prev->n > 0 && pick(20) != 0 ? prev->n : 1 + pick(MAX_THREADS);
    for (size_t i = 0; i < k->n; i++) {
        struct kept_thread *th = &k->threads[i];
        if (prev != NULL && i < prev->n && !prev->failed) {
            *th = prev->threads[i];
        } else {
            th->t = (struct sample_thread){.interp_id = pick(4) == 0 ? 1 : 0,
                                           .tid = 100 + (pid_t)i,
                                           .thread_id = 7000 + i,
                                           .main = i == 0};
            snprintf(th->name, sizeof th->name, "w-%u", (unsigned)i);
            th->t.n_frames = pick(MAX_DEPTH);
            for (size_t f = 0; f < th->t.n_frames; f++) {
                th->frames[f] = (struct sample_frame){&codes[pick(N_CODES)], 0, pick(200) * 2,
                                                      SNAP_FRAME_PYTHON, SNAP_UNREADABLE_NONE};
            }
        }
        if (pick(8) == 0) {
            /* A new innermost part. */
            size_t keep = th->t.n_frames > 0 ? pick((unsigned)th->t.n_frames + 1) : 0;
            size_t n = keep + pick(6);
            n = n > MAX_DEPTH ? MAX_DEPTH : n;
            for (size_t f = 0; f < n - keep; f++) {
                th->frames[f] = (struct sample_frame){&codes[pick(N_CODES)], 0, pick(200) * 2,
                                                      SNAP_FRAME_PYTHON, SNAP_UNREADABLE_NONE};
                if (pick(10) == 0) {
                    th->frames[f] = (struct sample_frame){NULL, 0, SAMPLE_OFFSET_UNKNOWN,
                                                          (enum snap_frame_kind)(1 + pick(4)),
                                                          SNAP_UNREADABLE_NONE};
                    if (th->frames[f].kind == SNAP_FRAME_UNREADABLE) {
                        th->frames[f].unreadable = (enum snap_unreadable)(1 + pick(4));
                    }
                }
            }
            /* The kept outer part moves to its place. */
            if (th->t.n_frames > 0 && keep > 0) {
                memmove(&th->frames[n - keep], &th->frames[th->t.n_frames - keep],
                        keep * sizeof th->frames[0]);
            }
            th->t.n_frames = n;
        }
        if (pick(10) == 0) {
            th->t.gil = tri();
            th->t.gil_requested = tri();
            th->t.has_exception = tri();
            th->t.in_gc = tri();
            th->t.frames_truncated = pick(2);
            th->t.frames_torn = pick(2);
        }
        if (pick(100) == 0) {
            snprintf(th->name, sizeof th->name, "renamed-%u", pick(100));
        }
        th->on_cpu = pick(5) == 0 ? tri() : SNAP_UNKNOWN;
        for (size_t f = 0; f < th->t.n_frames; f++) {
            th->frames[f].code_serial = th->frames[f].code != NULL ? th->frames[f].code->serial : 0;
        }
    }
}

/* K as the unwinder hands a sample on. */
static void as_sample(struct kept *k, struct sample *smp, struct sample_thread *threads,
                      enum snap_bool *on_cpu)
{
    for (size_t i = 0; i < k->n; i++) {
        threads[i] = k->threads[i].t;
        threads[i].name = k->threads[i].name;
        threads[i].name_len = strlen(k->threads[i].name);
        threads[i].frames = k->threads[i].frames;
        on_cpu[i] = k->threads[i].on_cpu;
    }
    *smp = (struct sample){threads, k->n, 0, ""};
}

static struct snapshot *small_snapshot(double when)
{
    struct pt_error err = {0};
    struct snapshot *s = snapshot_new(&err);
    assert_non_null(s);
    s->pid = 4242;
    s->time = when;
    s->started = 1.0;
    s->python.version = snapshot_strdup(s, "3.15.2", 6);
    return s;
}

/* Writes the stream to a new file; its name in PATH. */
static void write_stream(char *path, size_t size)
{
    snprintf(path, size, "/tmp/pytop-test-record-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct pt_error err = {0};
    struct snap_str argv[2] = {{"python3", 7}, {"app.py", 6}};
    struct rec_header h = {.pid = 4242, .cmdline = argv, .n_cmdline = 2,
                           .python_version = {"3.15.2", 6}, .hexversion = 0x030f02f0,
                           .debug_build = SNAP_NO, .binary = {"/usr/bin/python3.15", 19},
                           .rate_hz = 1000, .interval_s = 1, .start_wall = 1.7e9, .started = 1.0};
    struct recwriter *w = recwriter_open(fd, &h, &err);
    assert_non_null(w);
    recwriter_set_offsets(w, true);
    struct sample_thread threads[MAX_THREADS];
    enum snap_bool on_cpu[MAX_THREADS];
    for (size_t i = 0; i < n_stream; i++) {
        struct kept *k = &stream[i];
        if (i % 700 == 0) {
            struct snapshot *s = small_snapshot(k->t);
            assert_int_equal(recwriter_snapshot(w, k->t, s, &err), 0);
            snapshot_free(s);
        }
        if (k->failed) {
            assert_int_equal(recwriter_error(w, k->t, "a read failed", &err), 0);
            continue;
        }
        struct sample smp;
        as_sample(k, &smp, threads, on_cpu);
        assert_int_equal(recwriter_sample(w, k->t, &smp, on_cpu, NULL, &err), 0);
    }
    assert_int_equal(recwriter_close(w, stream[n_stream - 1].t, &err), 0);
}

/* Compares the samples read back with the stream, from its start. */
struct check {
    size_t at;
    size_t mismatches;
};

static bool same_str(struct snap_str a, const char *b, size_t len)
{
    return a.ptr != NULL && a.len == len && memcmp(a.ptr, b, len) == 0;
}

static int compare_fn(void *ctx, const struct rec_sample *s)
{
    struct check *c = ctx;
    assert_true(c->at < n_stream);
    const struct kept *k = &stream[c->at++];
    bool ok = s->failed == k->failed && s->t > k->t - RECFORMAT_TICK && s->t < k->t + RECFORMAT_TICK;
    if (!k->failed) {
        ok = ok && s->n_threads == k->n;
        for (size_t i = 0; ok && i < k->n; i++) {
            const struct rec_thread *t = &s->threads[i];
            const struct kept_thread *w = &k->threads[i];
            ok = t->tid == w->t.tid && t->thread_id == w->t.thread_id &&
                 t->interp_id == w->t.interp_id && t->main == w->t.main &&
                 same_str(t->name, w->name, strlen(w->name)) && t->gil == w->t.gil &&
                 t->gil_requested == w->t.gil_requested && t->on_cpu == w->on_cpu &&
                 t->has_exception == w->t.has_exception && t->in_gc == w->t.in_gc &&
                 t->frames_truncated == w->t.frames_truncated &&
                 t->frames_torn == w->t.frames_torn && t->n_frames == w->t.n_frames;
            for (size_t f = 0; ok && f < t->n_frames; f++) {
                const struct rec_frame *rf = &t->frames[f];
                const struct sample_frame *sf = &w->frames[f];
                ok = rf->kind == sf->kind && rf->unreadable == sf->unreadable &&
                     rf->offset == sf->offset && (rf->code == NULL) == (sf->code == NULL);
                if (ok && sf->code != NULL) {
                    ok = rf->code->id == (uint32_t)sf->code->serial &&
                         same_str(rf->code->function, sf->code->qualname, sf->code->qualname_len) &&
                         same_str(rf->code->file, sf->code->filename, sf->code->filename_len) &&
                         rf->code->first_line == sf->code->firstlineno;
                }
            }
        }
    }
    if (!ok) {
        c->mismatches++;
    }
    return 0;
}

/* recconv_compact() on every sample read back: the same stacks as written (each frame's code
 * by its names, its kind and reason), whether it kept frames of the sample before or not. */
struct compact_check {
    struct recconv *conv;
    size_t at;
    size_t mismatches;
};

static int compact_fn(void *ctx, const struct rec_sample *s)
{
    struct compact_check *c = ctx;
    const struct kept *k = &stream[c->at++];
    if (s->failed) {
        return 0;
    }
    const enum snap_bool *on_cpu = NULL;
    const struct sample *smp = recconv_compact(c->conv, s, &on_cpu, NULL);
    assert_non_null(smp);
    bool ok = smp->n_threads == k->n;
    for (size_t i = 0; ok && i < k->n; i++) {
        const struct sample_thread *t = &smp->threads[i];
        const struct kept_thread *w = &k->threads[i];
        ok = t->tid == w->t.tid && t->n_frames == w->t.n_frames && on_cpu[i] == w->on_cpu;
        for (size_t f = 0; ok && f < t->n_frames; f++) {
            const struct sample_frame *a = &t->frames[f];
            const struct sample_frame *b = &w->frames[f];
            ok = a->kind == b->kind && a->unreadable == b->unreadable &&
                 (a->code == NULL) == (b->code == NULL);
            if (ok && a->code != NULL) {
                ok = a->code->qualname_len == b->code->qualname_len &&
                     memcmp(a->code->qualname, b->code->qualname, b->code->qualname_len) == 0 &&
                     a->code->firstlineno == b->code->firstlineno;
            }
        }
    }
    c->mismatches += !ok;
    return 0;
}

static void test_compact(void **state)
{
    (void)state;
    char path[64];
    write_stream(path, sizeof path);
    struct pt_error err = {0};
    struct recreader *r = recreader_open(path, &err);
    assert_non_null(r);
    struct compact_check c = {recconv_new(&err), 0, 0};
    assert_non_null(c.conv);
    assert_int_equal(recreader_scan(r, -1, 1e9, compact_fn, &c, &err), 0);
    assert_int_equal(c.at, n_stream);
    assert_int_equal(c.mismatches, 0);
    /* From the middle, with the same converter: nothing carried over wrongly. */
    c.at = 1234;
    assert_int_equal(recreader_scan(r, stream[1234].t - RECFORMAT_TICK / 2, 1e9, compact_fn, &c,
                                    &err), 0);
    assert_int_equal(c.mismatches, 0);
    recconv_free(c.conv);
    recreader_close(r);
    unlink(path);
}

static void make_stream(void)
{
    stream = calloc(N_SAMPLES, sizeof *stream);
    assert_non_null(stream);
    n_stream = N_SAMPLES;
    double t = 0.0005;
    for (size_t i = 0; i < n_stream; i++) {
        next_sample(&stream[i], i > 0 ? &stream[i - 1] : NULL, t);
        /* 1 kHz with jitter, and a pause now and then. */
        t += 0.0008 + (double)pick(400) * 1e-6 + (pick(500) == 0 ? 3.0 : 0);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    char path[64];
    write_stream(path, sizeof path);
    struct pt_error err = {0};
    struct recreader *r = recreader_open(path, &err);
    assert_non_null(r);
    assert_string_equal(recreader_damage(r), "");
    const struct rec_header *h = recreader_header(r);
    assert_int_equal(h->pid, 4242);
    assert_int_equal(h->n_cmdline, 2);
    assert_true(same_str(h->cmdline[1], "app.py", 6));
    assert_true(same_str(h->python_version, "3.15.2", 6));
    assert_true(h->rate_hz == 1000);
    struct check c = {0};
    assert_int_equal(recreader_scan(r, -1, 1e9, compare_fn, &c, &err), 0);
    assert_int_equal(c.at, n_stream);
    assert_int_equal(c.mismatches, 0);

    /* A window from the middle: exactly the samples in it. */
    double from = stream[1234].t, to = stream[2345].t;
    c = (struct check){.at = 1234};
    assert_int_equal(recreader_scan(r, from - RECFORMAT_TICK / 2, to + RECFORMAT_TICK / 2,
                                    compare_fn, &c, &err), 0);
    assert_int_equal(c.at, 2346);
    assert_int_equal(c.mismatches, 0);

    /* A snapshot at any time: the last taken at or before it. */
    double when = -1;
    struct snapshot *s = recreader_snapshot_at(r, stream[1500].t, &when, &err);
    assert_non_null(s);
    assert_true(when > stream[1399].t && when < stream[1401].t);
    assert_int_equal(s->pid, 4242);
    snapshot_free(s);
    recreader_close(r);
    unlink(path);
}

/* The bytes of the file at PATH, and their count in *SIZE. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

static void spill(const char *path, const unsigned char *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    fclose(f);
}

/* Every cut of the file (at chunk boundaries and in between) reads as the stream's start. */
static void test_cut_short(void **state)
{
    (void)state;
    char path[64];
    write_stream(path, sizeof path);
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    size_t opened = 0, most = 0;
    for (size_t cut = 0; cut < size; cut += 1 + size / 97) {
        spill(path, bytes, cut);
        struct pt_error err = {0};
        struct recreader *r = recreader_open(path, &err);
        if (r == NULL) {
            assert_int_equal(err.code, PT_E_FORMAT);
            continue;
        }
        opened++;
        assert_string_not_equal(recreader_damage(r), "");
        struct check c = {0};
        recreader_scan(r, -1, 1e9, compare_fn, &c, &err);
        assert_int_equal(c.mismatches, 0);
        /* Read up to the last whole chunk: the more the file holds, the more is read. */
        assert_true(c.at >= most);
        most = c.at;
        recreader_close(r);
    }
    assert_true(opened > 90);
    assert_true(most > n_stream / 2);
    free(bytes);
    unlink(path);
}

/* Bytes changed anywhere: an error or the samples before the damage, never a crash. */
static void test_corrupt(void **state)
{
    (void)state;
    char path[64];
    write_stream(path, sizeof path);
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    for (int round = 0; round < 200; round++) {
        size_t at = (size_t)(next() % size);
        unsigned char old = bytes[at];
        bytes[at] ^= (unsigned char)(1 + pick(255));
        spill(path, bytes, size);
        struct pt_error err = {0};
        struct recreader *r = recreader_open(path, &err);
        if (r != NULL) {
            struct check c = {0};
            recreader_scan(r, -1, 1e9, compare_fn, &c, &err);
            assert_int_equal(c.mismatches, 0);
            recreader_close(r);
        }
        bytes[at] = old;
    }
    free(bytes);
    unlink(path);
}

int main(void)
{
    make_codes();
    make_stream();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_cut_short),
        cmocka_unit_test(test_corrupt),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(stream);
    return rc;
}
