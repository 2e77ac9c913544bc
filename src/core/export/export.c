/* export: which thread-samples an export counts, what time each stands for, and the dispatch
 * to the four writers. */
#include "config.h"

#include "core/export/export.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/export/export_int.h"
#include "core/util/limits.h"

static const char *const format_names[EXPORT_FORMAT_COUNT] = {
    [EXPORT_COLLAPSED] = "collapsed",
    [EXPORT_SPEEDSCOPE] = "speedscope",
    [EXPORT_PPROF] = "pprof",
    [EXPORT_CHROME] = "chrome",
};

const char *export_format_name(enum export_format f)
{
    return (unsigned)f < EXPORT_FORMAT_COUNT ? format_names[f] : "?";
}

int export_format_parse(const char *name)
{
    for (int f = 0; f < EXPORT_FORMAT_COUNT; f++) {
        if (strcmp(name, format_names[f]) == 0) {
            return f;
        }
    }
    return -1;
}

/* A sample's time in nanoseconds from the start, within what int64_t holds with room to add
 * weights (a recording of more than thirty years is someone's mistake). */
static int64_t to_ns(double t)
{
    if (t <= 0) {
        return 0;
    }
    if (t > 1e9) {
        t = 1e9;
    }
    return (int64_t)(t * 1e9 + 0.5);
}

struct exporter *exporter_new(enum export_format f, const struct export_opts *opts,
                              struct pt_error *err)
{
    if ((unsigned)f >= EXPORT_FORMAT_COUNT) {
        pt_error_set(err, PT_E_FORMAT, 0, "no export format %d", (int)f);
        return NULL;
    }
    struct exporter *x = calloc(1, sizeof *x);
    if (x == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "no memory for an exporter");
        return NULL;
    }
    x->format = f;
    x->opts = *opts;
    x->keep_runs = f == EXPORT_SPEEDSCOPE || f == EXPORT_CHROME;
    /* The nominal period: as the caller says, else the rate the recording asked for. */
    double period = 0;
    if (isfinite(opts->period_s) && opts->period_s > 0) {
        period = opts->period_s;
    } else if (opts->header != NULL && isfinite(opts->header->rate_hz) &&
               opts->header->rate_hz > 0) {
        period = 1 / opts->header->rate_hz;
    }
    x->period_ns = period > 0 && period < 3600 ? to_ns(period) : 0;
    x->cap_ns = x->period_ns > 0 ? 4 * x->period_ns : 100000000;
    memset(x->synthetic, 0xff, sizeof x->synthetic);
    for (size_t i = 0; i < EXPORT_FRAME_CACHE; i++) {
        x->frame_cache[i].frame = EXPORT_NONE;
    }
    x->last_gap_ns = -1;
    x->first_ns = -1;
    return x;
}

void exporter_free(struct exporter *x)
{
    if (x == NULL) {
        return;
    }
    export_intern_free(x);
    free(x->scratch);
    free(x->scratch_ids);
    free(x->thread_hint);
    free(x->pending);
    free(x);
}

/* Whether a thread-sample counts: its stack was read, it is the thread asked for, and it
 * matches the mode as the statistics count it (sampler.h: a flag not known is not yes). */
static bool selected(const struct exporter *x, const struct rec_thread *th)
{
    if (th->not_read) {
        return false;
    }
    if (x->opts.thread != 0 && th->tid != x->opts.thread) {
        return false;
    }
    switch (x->opts.mode) {
    case SAMPLER_MODE_CPU:
        return th->on_cpu == SNAP_YES;
    case SAMPLER_MODE_GIL:
        return th->gil == SNAP_YES;
    case SAMPLER_MODE_EXCEPTION:
        return th->has_exception == SNAP_YES;
    case SAMPLER_MODE_WALL:
    case SAMPLER_MODE_COUNT:
        break;
    }
    return true;
}

/* What each thread-sample stands for (the weight of speedscope, pprof's wall time, the length
 * of chrome's events): half the time from the sample before to the sample after (samples
 * taken, whether or not they count it, so a thread the mode counts only now and then is not
 * stretched over the samples between; the first sample: the time to the next), each gap at
 * most CAP_NS (four periods, or 0.1 s when the period is not known) so a pause in the
 * recording does not land on one stack. The last sample's thread-samples stand for one
 * period, or for the gap before them when the period is not known. */
static void settle(struct exporter *x, int64_t w)
{
    for (size_t i = 0; i < x->n_pending; i++) {
        struct export_thread *t = &x->threads[x->pending[i]];
        x->pairs[t->last_pair].weight_ns += w;
        if (x->keep_runs && t->n_runs > 0) {
            t->runs[t->n_runs - 1].end_ns += w;
        }
    }
    if (x->n_pending > 0 && x->pending_ns + w > x->end_ns) {
        x->end_ns = x->pending_ns + w;
    }
    x->n_pending = 0;
}

static int set_name(struct exporter *x, struct export_thread *t, struct snap_str name,
                    struct pt_error *err)
{
    if (name.ptr == NULL || (t->name.ptr != NULL && t->name.len == name.len &&
                             memcmp(t->name.ptr, name.ptr, name.len) == 0)) {
        return 0;
    }
    struct snap_str copy;
    if (export_copy_str(x, name, &copy, err) < 0) {
        return -1;
    }
    if (t->name.ptr != NULL) {
        x->name_bytes -= t->name.len;
        free((char *)t->name.ptr);
    }
    t->name = copy;
    return 0;
}

static bool raw_eq(const struct export_raw_frame *a, const struct export_raw_frame *b)
{
    return a->code == b->code && a->line == b->line && a->kind == b->kind && a->why == b->why;
}

enum { RAW_PYTHON = 0xff };

/* Shims are C-owned entry frames, not Python functions: the statistics leave them out too
 * (sampler_window.c). */
static bool is_shim(const struct rec_frame *f)
{
    return f->code == NULL && f->kind == SNAP_FRAME_SHIM;
}

/* A synthetic frame's kind as a byte that is never RAW_PYTHON (a file may say anything). */
static uint8_t raw_kind(const struct rec_frame *f)
{
    return (unsigned)f->kind < RAW_PYTHON ? (uint8_t)f->kind : RAW_PYTHON - 1;
}

/* An unreadable frame's reason, those this build does not know as one (all labelled
 * "<unreadable frame>", export_synthetic_func()). */
static uint8_t raw_why(const struct rec_frame *f)
{
    if (f->kind != SNAP_FRAME_UNREADABLE) {
        return 0;
    }
    return (unsigned)f->unreadable < 8 ? (uint8_t)f->unreadable : 7;
}

static struct export_raw_frame raw_of(const struct rec_frame *f)
{
    if (f->code != NULL) {
        return (struct export_raw_frame){
            .code = f->code->id, .line = f->line < 0 ? -1 : f->line, .kind = RAW_PYTHON};
    }
    return (struct export_raw_frame){
        .line = -1,
        .kind = raw_kind(f),
        .why = raw_why(f),
    };
}

static bool frame_matches(const struct rec_frame *f, const struct export_raw_frame *r)
{
    if (f->code != NULL) {
        return r->kind == RAW_PYTHON && r->code == f->code->id &&
               r->line == (f->line < 0 ? -1 : f->line);
    }
    return r->kind == raw_kind(f) && r->why == raw_why(f) && r->code == 0 && r->line == -1;
}

static uint32_t frame_of(struct exporter *x, const struct rec_frame *f, struct pt_error *err)
{
    uint32_t func;
    int line = -1;
    if (f->code != NULL) {
        func = export_code_func(x, f->code, err);
        line = f->line;
    } else {
        func = export_synthetic_func(x, f->kind, f->unreadable, err);
    }
    return func == EXPORT_NONE ? EXPORT_NONE : export_frame_id(x, func, line, err);
}

/* frame_of() through the exporter's small cache of frames by their recorded identity. */
static uint32_t cached_frame(struct exporter *x, const struct rec_frame *f,
                             const struct export_raw_frame *raw, struct pt_error *err)
{
    uint32_t h = raw->code * 0x9e3779b1U ^ (uint32_t)raw->line * 0x85ebca77U ^
                 (uint32_t)raw->kind << 8 ^ raw->why;
    struct export_frame_cache *e = &x->frame_cache[(h ^ h >> 15) & (EXPORT_FRAME_CACHE - 1)];
    if (e->frame != EXPORT_NONE && raw_eq(&e->raw, raw)) {
        return e->frame;
    }
    uint32_t frame = frame_of(x, f, err);
    if (frame != EXPORT_NONE) {
        e->raw = *raw;
        e->frame = frame;
    }
    return frame;
}

/* The stack of TH for thread T: an unchanged one from T's previous stack at the cost of one
 * comparison a frame; else the frames inside those it shares with the previous stack looked
 * up and hashed (stacks change at the inner end), and the stack interned. */
static uint32_t stack_of(struct exporter *x, struct export_thread *t, const struct rec_thread *th,
                         struct pt_error *err)
{
    size_t n = th->n_frames;
    if (n > LIMIT_FRAMES) {
        pt_error_set(err, PT_E_LIMIT, 0, "a stack of %zu frames (more than %d)", n,
                     (int)LIMIT_FRAMES);
        return EXPORT_NONE;
    }
    size_t m = 0;
    size_t same = 0;
    bool matching = true;
    for (size_t i = n; i > 0; i--) {
        const struct rec_frame *f = &th->frames[i - 1];
        if (is_shim(f)) {
            continue;
        }
        if (matching) {
            matching = m < t->n_cached && frame_matches(f, &t->cached[t->n_cached - 1 - m].raw);
            same += matching;
        }
        m++;
    }
    if (same == m && m == t->n_cached && t->last_stack != EXPORT_NONE) {
        return t->last_stack;
    }
    if (export_grow(&x->scratch, &x->cap_scratch, m, sizeof *x->scratch) < 0 ||
        export_grow(&x->scratch_ids, &x->cap_scratch_ids, m, sizeof *x->scratch_ids) < 0) {
        pt_error_set(err, PT_E_NOMEM, 0, "no memory for a stack");
        return EXPORT_NONE;
    }
    struct export_cached *c = x->scratch;
    if (same > 0) {
        memcpy(c + (m - same), t->cached + (t->n_cached - same), same * sizeof *c);
    }
    size_t k = m;
    for (size_t i = n; i > 0 && k > 0; i--) {
        const struct rec_frame *f = &th->frames[i - 1];
        if (is_shim(f)) {
            continue;
        }
        k--;
        if (k >= m - same) {
            continue;
        }
        c[k].raw = raw_of(f);
        c[k].frame = cached_frame(x, f, &c[k].raw, err);
        if (c[k].frame == EXPORT_NONE) {
            return EXPORT_NONE;
        }
        c[k].hash = export_stack_hash(k + 1 < m ? c[k + 1].hash : 0, c[k].frame);
    }
    for (size_t i = 0; i < m; i++) {
        x->scratch_ids[i] = c[i].frame;
    }
    uint32_t stack = export_stack_id(x, x->scratch_ids, m, m > 0 ? c[0].hash : 0, err);
    if (stack == EXPORT_NONE) {
        return EXPORT_NONE;
    }
    /* The thread keeps this stack; the scratch array takes its old one's buffer. */
    struct export_cached *old = t->cached;
    size_t old_cap = t->cap_cached;
    t->cached = x->scratch;
    t->cap_cached = x->cap_scratch;
    t->n_cached = m;
    x->scratch = old;
    x->cap_scratch = old_cap;
    return stack;
}

static int add_run(struct exporter *x, struct export_thread *t, uint32_t stack, int64_t t_ns,
                   struct pt_error *err)
{
    if (t->n_runs > 0) {
        struct export_run *r = &t->runs[t->n_runs - 1];
        if (r->stack == stack && r->end_ns == t_ns && r->count < UINT32_MAX) {
            r->count++;
            return 0;
        }
    }
    if (x->n_runs >= EXPORT_MAX_RUNS) {
        return pt_error_set(err, PT_E_LIMIT, 0, "more than %d changes of stack in one export",
                            (int)EXPORT_MAX_RUNS);
    }
    if (export_grow(&t->runs, &t->cap_runs, t->n_runs + 1, sizeof *t->runs) < 0) {
        return pt_error_set(err, PT_E_NOMEM, 0, "no memory for a thread's timeline");
    }
    t->runs[t->n_runs++] =
        (struct export_run){.stack = stack, .count = 1, .start_ns = t_ns, .end_ns = t_ns};
    x->n_runs++;
    return 0;
}

/* The thread TH, the POS-th of its sample: usually where it was in the sample before. */
static uint32_t thread_at(struct exporter *x, size_t pos, const struct rec_thread *th,
                          struct pt_error *err)
{
    if (pos < x->cap_hint && x->thread_hint[pos] < x->n_threads) {
        const struct export_thread *t = &x->threads[x->thread_hint[pos]];
        if (t->tid == th->tid && (th->tid != 0 || t->thread_id == th->thread_id)) {
            return x->thread_hint[pos];
        }
    }
    uint32_t ti = export_thread_id(x, th->tid, th->thread_id, err);
    if (ti == EXPORT_NONE) {
        return EXPORT_NONE;
    }
    size_t old_cap = x->cap_hint;
    if (pos < LIMIT_THREADS &&
        export_grow(&x->thread_hint, &x->cap_hint, pos + 1, sizeof *x->thread_hint) == 0) {
        for (size_t i = old_cap; i < x->cap_hint; i++) {
            x->thread_hint[i] = EXPORT_NONE;
        }
        x->thread_hint[pos] = ti;
    }
    return ti;
}

static int count_thread(struct exporter *x, size_t pos, const struct rec_thread *th, int64_t t_ns,
                        struct pt_error *err)
{
    uint32_t ti = thread_at(x, pos, th, err);
    if (ti == EXPORT_NONE) {
        return -1;
    }
    struct export_thread *t = &x->threads[ti];
    if (set_name(x, t, th->name, err) < 0) {
        return -1;
    }
    uint32_t stack = stack_of(x, t, th, err);
    if (stack == EXPORT_NONE) {
        return -1;
    }
    uint32_t pair = t->last_pair;
    if (stack != t->last_stack || pair == EXPORT_NONE) {
        pair = export_pair_id(x, ti, stack, err);
        if (pair == EXPORT_NONE) {
            return -1;
        }
    }
    if (x->keep_runs && add_run(x, t, stack, t_ns, err) < 0) {
        return -1;
    }
    if (export_grow(&x->pending, &x->cap_pending, x->n_pending + 1, sizeof *x->pending) < 0) {
        return pt_error_set(err, PT_E_NOMEM, 0, "no memory for a sample");
    }
    x->pending[x->n_pending++] = ti;
    x->pairs[pair].count++;
    t->last_stack = stack;
    t->last_pair = pair;
    x->thread_samples++;
    return 0;
}

int exporter_add(struct exporter *x, const struct rec_sample *s, struct pt_error *err)
{
    if (x->failed) {
        if (err != NULL) {
            *err = x->err;
        }
        return -1;
    }
    if (s->failed || isnan(s->t)) {
        return 0;
    }
    int64_t t_ns = to_ns(s->t);
    if (x->n_pending > 0) {
        int64_t gap = t_ns > x->pending_ns ? t_ns - x->pending_ns : 0;
        int64_t capped = gap < x->cap_ns ? gap : x->cap_ns;
        /* Half the gaps on either side: pytop samples at a random point of each period
         * (schedule.h), and the gap to the next sample alone is long for a sample early in
         * its period, which would weigh what a target does early in each period more. */
        int64_t before = x->last_gap_ns;
        x->last_gap_ns = gap;
        if (before >= 0) {
            settle(x, ((before < x->cap_ns ? before : x->cap_ns) + capped) / 2);
        } else {
            settle(x, capped);
        }
    }
    if (!(s->t >= x->opts.from && s->t <= x->opts.to)) {
        return 0;
    }
    x->pending_ns = t_ns;
    for (size_t i = 0; i < s->n_threads; i++) {
        const struct rec_thread *th = &s->threads[i];
        if (!selected(x, th)) {
            continue;
        }
        if (x->first_ns < 0) {
            x->first_ns = t_ns;
        }
        if (count_thread(x, i, th, t_ns, &x->err) < 0) {
            pt_error_prefix(&x->err, "sample at %.6f s", s->t);
            x->failed = true;
            if (err != NULL) {
                *err = x->err;
            }
            return -1;
        }
    }
    return 0;
}

int exporter_add_fn(void *ctx, const struct rec_sample *s)
{
    return exporter_add(ctx, s, NULL) < 0 ? -1 : 0;
}

int exporter_finish(struct exporter *x, FILE *out, struct pt_error *err)
{
    if (x->failed) {
        if (err != NULL) {
            *err = x->err;
        }
        return -1;
    }
    if (x->n_pending > 0) {
        int64_t last =
            x->last_gap_ns >= 0 && x->last_gap_ns < x->cap_ns ? x->last_gap_ns : x->cap_ns;
        settle(x, x->period_ns > 0 ? x->period_ns : (x->last_gap_ns >= 0 ? last : 0));
    }
    int rc = 0;
    switch (x->format) {
    case EXPORT_COLLAPSED:
        rc = export_write_collapsed(x, out, err);
        break;
    case EXPORT_SPEEDSCOPE:
        rc = export_write_speedscope(x, out, err);
        break;
    case EXPORT_PPROF:
        rc = export_write_pprof(x, out, err);
        break;
    case EXPORT_CHROME:
        rc = export_write_chrome(x, out, err);
        break;
    case EXPORT_FORMAT_COUNT:
        break;
    }
    if (rc < 0) {
        pt_error_prefix(err, "%s export", export_format_name(x->format));
    }
    return rc;
}

struct snap_str export_func_title(const struct export_func *f)
{
    if (f->function.ptr != NULL) {
        return f->function;
    }
    if (f->name.ptr != NULL) {
        return f->name;
    }
    return (struct snap_str){"?", 1};
}

const char *export_thread_number(const struct export_thread *t, char *buf, size_t size)
{
    if (t->tid != 0) {
        snprintf(buf, size, "%d", (int)t->tid);
    } else {
        snprintf(buf, size, "0x%" PRIx64, t->thread_id);
    }
    return buf;
}

struct snap_str export_thread_name(const struct export_thread *t, char *buf, size_t size)
{
    if (t->name.ptr != NULL) {
        return t->name;
    }
    char num[32];
    int n = snprintf(buf, size, "thread %s", export_thread_number(t, num, sizeof num));
    return (struct snap_str){buf, n < 0 ? 0 : ((size_t)n < size ? (size_t)n : size - 1)};
}

void export_put_u64(struct strbuf *sb, uint64_t v)
{
    char buf[24];
    size_t i = sizeof buf;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    strbuf_append(sb, buf + i, sizeof buf - i);
}

void export_put_decimal(struct strbuf *sb, int64_t v, int decimals)
{
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    char buf[48];
    size_t i = sizeof buf;
    for (int d = 0; d < decimals; d++) {
        buf[--i] = (char)('0' + u % 10);
        u /= 10;
    }
    if (decimals > 0) {
        buf[--i] = '.';
    }
    do {
        buf[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        buf[--i] = '-';
    }
    strbuf_append(sb, buf + i, sizeof buf - i);
}

int export_flush(struct strbuf *sb, FILE *out, int *write_errno, const char *what,
                 struct pt_error *err)
{
    if (sb->failed) {
        return pt_error_set(err, PT_E_NOMEM, 0, "no memory for the %s", what);
    }
    strbuf_drain(sb, out, 0, write_errno);
    if (*write_errno == 0 && fflush(out) != 0) {
        *write_errno = errno != 0 ? errno : EIO;
    }
    if (*write_errno != 0) {
        return pt_error_set(err, PT_E_IO, *write_errno, "writing the %s: %s", what,
                            strerror(*write_errno));
    }
    return 0;
}
