/* sampler_write: batch mode's documents, a snapshot with the sampler's statistics (JSON, text). */
#include "config.h"

#include "core/sampler/sampler.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/util/error.h"
#include "core/write/sampler_write.h"
#include "core/model/snapshot_words.h"
#include "core/write/snapshot_write.h"
#include "core/util/strbuf.h"

enum {
    NUMBER_MAX_DECIMALS = 3,
};

/* V with DECIMALS decimals, built from integers: "%.1f" would follow LC_NUMERIC, and a decimal
 * comma is neither JSON nor what a grep expects. TRIM drops trailing zeros ("100", "99.7").
 * Negative, huge or not-a-number values are unknown: NULL_TEXT. */
static void put_number(struct strbuf *sb, double v, int decimals, bool trim, const char *null_text)
{
    static const long long scales[] = {1, 10, 100, 1000};
    if (!isfinite(v) || v < 0 || v > 1e15 || decimals < 0 || decimals > NUMBER_MAX_DECIMALS) {
        strbuf_puts(sb, null_text);
        return;
    }
    long long scale = scales[decimals];
    long long x = (long long)(v * (double)scale + 0.5);
    long long frac = x % scale;
    strbuf_printf(sb, "%lld", x / scale);
    while (trim && decimals > 0 && frac % 10 == 0) {
        frac /= 10;
        decimals--;
    }
    if (decimals > 0) {
        strbuf_printf(sb, ".%0*lld", decimals, frac);
    }
}

/* The same in JSON: trimmed, null when unknown. */
static void put_json_number(struct strbuf *sb, double v, int decimals)
{
    put_number(sb, v, decimals, true, "null");
}

/* ---- JSON ---- */

static void json_head(void *ctx, struct snapshot_json_out *w)
{
    const struct sampler_stats *st = ctx;
    struct strbuf *sb = snapshot_json_buf(w);
    /* rate_hz is always a number or null, so that numeric filters work on it; --rate max has
     * no rate to ask for, and says so in rate_max. */
    strbuf_printf(sb, ",\"sampling\":{\"mode\":\"%s\",\"active_only\":%s,\"rate_hz\":",
                  sampler_mode_name(st->mode), st->active_only ? "true" : "false");
    if (st->rate_hz > 0) {
        put_json_number(sb, st->rate_hz, 1);
    } else {
        strbuf_puts(sb, "null");
    }
    strbuf_puts(sb, st->rate_hz > 0 ? ",\"rate_max\":false" : ",\"rate_max\":true");
    strbuf_puts(sb, ",\"achieved_hz\":");
    put_json_number(sb, st->achieved_hz, 1);
    strbuf_printf(sb, ",\"samples\":%" PRIu64 ",\"errors\":%" PRIu64, st->samples, st->errors);
    strbuf_puts(sb, ",\"window_s\":");
    put_json_number(sb, st->window_s, 3);
    strbuf_printf(sb, ",\"thread_samples\":%" PRIu64 ",\"gc_samples\":%" PRIu64, st->thread_samples,
                  st->gc_samples);
    strbuf_puts(sb, ",\"last_error\":");
    strbuf_json_string(sb, st->last_error.ptr, st->last_error.len);
    strbuf_puts(sb, ",\"backoff_s\":");
    if (st->backoff_s > 0) {
        put_json_number(sb, st->backoff_s, 3);
    } else {
        strbuf_puts(sb, "null");
    }
    if (st->threads_truncated) {
        strbuf_puts(sb, ",\"threads_truncated\":true");
    }
    strbuf_puts(sb, "}");
    if (st->execed) {
        strbuf_puts(sb, ",\"exec\":{\"time\":");
        put_json_number(sb, st->exec_time, 3);
        strbuf_puts(sb, ",\"program\":");
        strbuf_json_string(sb, st->exec_program.ptr, st->exec_program.len);
        strbuf_puts(sb, "}");
    }
    if (st->has_reader) {
        const struct unwind_counters *r = &st->reader;
        strbuf_printf(sb,
                      ",\"reader\":{\"reads\":%" PRIu64 ",\"bytes\":%" PRIu64
                      ",\"failed_reads\":%" PRIu64 ",\"code_cache\":{\"hits\":%" PRIu64
                      ",\"misses\":%" PRIu64 ",\"entries\":%" PRIu64 "},\"kept_stacks\":%" PRIu64
                      ",\"samples\":%" PRIu64 "}",
                      r->reads, r->bytes, r->failed_reads, r->code_hits, r->code_misses,
                      r->code_entries, r->kept_stacks, st->reader_samples);
    }
}

static void json_thread(void *ctx, struct snapshot_json_out *w, const struct snap_interp *in,
                        const struct snap_thread *t)
{
    const struct sampler_stats *st = ctx;
    struct strbuf *sb = snapshot_json_buf(w);
    const struct sampler_thread *th = sampler_stats_find_thread(st, in->id, t->tid, t->thread_id);
    if (th == NULL) {
        strbuf_puts(sb, ",\"samples\":0,\"gil_pct\":null,\"cpu_pct\":null,\"gc_pct\":null");
        return;
    }
    strbuf_printf(sb, ",\"samples\":%" PRIu64 ",\"gil_pct\":", th->samples);
    put_json_number(sb, th->gil_pct, 1);
    strbuf_puts(sb, ",\"cpu_pct\":");
    put_json_number(sb, th->cpu_pct, 1);
    strbuf_puts(sb, ",\"gc_pct\":");
    put_json_number(sb, th->gc_pct, 1);
}

static void json_tail(void *ctx, struct snapshot_json_out *w)
{
    const struct sampler_stats *st = ctx;
    struct strbuf *sb = snapshot_json_buf(w);
    strbuf_puts(sb, ",\"functions\":[");
    for (size_t i = 0; i < st->n_functions; i++) {
        const struct sampler_function *f = &st->functions[i];
        strbuf_puts(sb, i > 0 ? ",{\"function\":" : "{\"function\":");
        strbuf_json_string(sb, f->function.ptr, f->function.len);
        strbuf_puts(sb, ",\"file\":");
        strbuf_json_string(sb, f->file.ptr, f->file.len);
        if (f->first_line >= 0) {
            strbuf_printf(sb, ",\"line\":%d", f->first_line);
        } else {
            strbuf_puts(sb, ",\"line\":null");
        }
        strbuf_printf(sb, ",\"own\":%" PRIu64 ",\"total\":%" PRIu64 ",\"own_state_samples\":%" PRIu64
                          ",\"own_cpu_pct\":",
                      f->own, f->total, f->own_state);
        put_json_number(sb, sampler_function_cpu_pct(f), 1);
        strbuf_puts(sb, "}");
        snapshot_json_flush(w);
    }
    strbuf_puts(sb, "]");
    if (st->functions_truncated) {
        strbuf_puts(sb, ",\"functions_truncated\":true");
    }
}

/* "stack changed while read: 12 of 2700 thread-samples in 1 s" for a row of unreadable frames
 * (its total: the thread-samples whose stack had one). */
static void unreadable_text(struct strbuf *sb, const struct sampler_stats *st,
                            const struct sampler_function *f)
{
    strbuf_printf(sb, "%s: %" PRIu64 " of %" PRIu64 " thread-samples in ",
                  snapshot_unreadable_reason(f->unreadable), f->total, st->thread_samples);
    put_number(sb, st->window_s, 3, true, "?");
    strbuf_puts(sb, " s");
}

/* The frames the interval could not read, one warning per reason. */
static void json_warnings(void *ctx, struct snapshot_json_out *w)
{
    const struct sampler_stats *st = ctx;
    for (size_t i = 0; i < st->n_functions; i++) {
        const struct sampler_function *f = &st->functions[i];
        if (f->unreadable == SNAP_UNREADABLE_NONE) {
            continue;
        }
        struct strbuf text = {0};
        strbuf_puts(&text, "unreadable frame: ");
        unreadable_text(&text, st, f);
        if (!text.failed && text.data != NULL) {
            snapshot_json_add_warning(w, text.data, text.len);
        }
        strbuf_free(&text);
    }
}

/* An empty snapshot standing in for none, saying why. */
static struct snapshot *placeholder(struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    if (s != NULL) {
        s->pid = -1;
        s->time = -1;
        snapshot_warn(s, "no sample succeeded in this interval");
    }
    return s;
}

int sampler_write_json(const struct snapshot *snap, const struct sampler_stats *st, FILE *out,
                       bool newline, struct pt_error *err)
{
    struct snapshot_json_extra extra = {json_head, json_thread, json_tail, json_warnings,
                                        (void *)st};
    struct snapshot *empty = NULL;
    if (snap == NULL && (snap = empty = placeholder(err)) == NULL) {
        return -1;
    }
    int rc = snapshot_write_json_extra(snap, out, newline, &extra, err);
    snapshot_free(empty);
    return rc;
}

/* ---- text ---- */

struct text_out {
    FILE *out;
    struct strbuf sb;
    int write_errno;
};

/* "pytop 0.1.0 - 2025-11-30 12:00:00 UTC - pid 4242". */
static void text_head(struct strbuf *sb, const struct snapshot *snap)
{
    strbuf_puts(sb, "pytop " PACKAGE_VERSION);
    if (snap != NULL && isfinite(snap->time) && snap->time > 0 && snap->time < 1e12) {
        time_t secs = (time_t)snap->time;
        struct tm tm;
        char when[32];
        if (gmtime_r(&secs, &tm) != NULL &&
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0) {
            strbuf_printf(sb, " - %s", when);
        }
    }
    if (snap != NULL && snap->pid > 0) {
        strbuf_printf(sb, " - pid %jd", (intmax_t)snap->pid);
    }
    strbuf_puts(sb, "\n");
}

/* The sampling line (samples, span, rates, errors), then the last error and an exec. */
static void text_sampling(struct strbuf *sb, const struct sampler_stats *st)
{
    strbuf_printf(sb, "Samples: %" PRIu64 " in ", st->samples);
    put_number(sb, st->window_s, 2, false, "?");
    strbuf_puts(sb, " s, ");
    put_number(sb, st->achieved_hz, 1, false, "?");
    strbuf_puts(sb, "/s achieved of ");
    if (st->rate_hz > 0) {
        put_number(sb, st->rate_hz, 1, true, "?");
        strbuf_puts(sb, "/s requested");
    } else {
        strbuf_puts(sb, "max");
    }
    uint64_t tries = st->samples + st->errors;
    strbuf_printf(sb, ", errors: %" PRIu64 " (", st->errors);
    put_number(sb, tries > 0 ? 100.0 * (double)st->errors / (double)tries : 0, 1, false, "?");
    strbuf_puts(sb, "%)\n");
    if (st->mode != SAMPLER_MODE_WALL || st->active_only) {
        strbuf_printf(sb, "Mode: %s: %s%s%s\n", sampler_mode_name(st->mode),
                      st->mode == SAMPLER_MODE_WALL ? "every thread-sample counts"
                                                    : "only thread-samples",
                      sampler_mode_words(st->mode), st->mode == SAMPLER_MODE_WALL ? "" : " count");
        if (st->active_only) {
            strbuf_puts(sb, "Active only: each sample reads the thread holding the GIL (its "
                            "state and stack), no other\n");
        }
    }
    if (st->last_error.ptr != NULL) {
        strbuf_puts(sb, "Last error: ");
        strbuf_text(sb, st->last_error.ptr, st->last_error.len);
        if (st->backoff_s > 0) {
            strbuf_puts(sb, " (failing in a row: retrying every ");
            put_number(sb, st->backoff_s, 3, true, "?");
            strbuf_puts(sb, " s)");
        }
        strbuf_puts(sb, "\n");
    }
    if (st->execed) {
        strbuf_puts(sb, "Exec: the process exec()ed ");
        strbuf_text(sb, st->exec_program.ptr != NULL ? st->exec_program.ptr : "?",
                    st->exec_program.ptr != NULL ? st->exec_program.len : 1);
        strbuf_puts(sb, "; following the new program\n");
    }
}

static void put_cell(struct strbuf *sb, double pct)
{
    struct strbuf cell = {0};
    put_number(&cell, pct, 1, false, "?");
    strbuf_printf(sb, " %6s", cell.data != NULL ? cell.data : "?");
    strbuf_free(&cell);
}

static void text_threads(struct strbuf *sb, const struct sampler_stats *st)
{
    strbuf_printf(sb, "\n%8s %6s %6s %6s %8s  %s\n", "TID", "%GIL", "%CPU", "%GC", "SAMPLES",
                  "NAME");
    for (size_t i = 0; i < st->n_threads; i++) {
        const struct sampler_thread *t = &st->threads[i];
        if (t->tid > 0) {
            strbuf_printf(sb, "%8jd", (intmax_t)t->tid);
        } else {
            strbuf_printf(sb, "%8s", "?");
        }
        /* A thread seen whose samples never matched the mode has no share but its CPU time. */
        if (t->samples == 0) {
            strbuf_printf(sb, " %6s", "-");
        } else {
            put_cell(sb, t->gil_pct);
        }
        put_cell(sb, t->cpu_pct);
        if (t->samples == 0) {
            strbuf_printf(sb, " %6s", "-");
        } else {
            put_cell(sb, t->gc_pct);
        }
        strbuf_printf(sb, " %8" PRIu64 "  ", t->samples);
        if (t->name.ptr != NULL) {
            strbuf_text_quoted(sb, t->name.ptr, t->name.len);
        } else {
            strbuf_puts(sb, "?");
        }
        strbuf_puts(sb, "\n");
    }
    if (st->threads_truncated) {
        strbuf_puts(sb, "(more threads than pytop counts: some left out)\n");
    }
}

static void text_functions(struct text_out *w, const struct sampler_stats *st, size_t top)
{
    struct strbuf *sb = &w->sb;
    size_t n = st->n_functions < top ? st->n_functions : top;
    strbuf_printf(sb,
                  "\nFunctions: %zu of %zu, by own samples (%% of %" PRIu64 " thread-samples%s)\n",
                  n, st->n_functions, st->thread_samples, sampler_mode_words(st->mode));
    strbuf_printf(sb, "%6s %6s %8s %8s %5s  %s\n", "OWN%", "TOTAL%", "OWN", "TOTAL", "CPU%",
                  "FUNCTION");
    for (size_t i = 0; i < n; i++) {
        const struct sampler_function *f = &st->functions[i];
        uint64_t base = st->thread_samples;
        put_cell(sb, base > 0 ? 100.0 * (double)f->own / (double)base : 0);
        put_cell(sb, base > 0 ? 100.0 * (double)f->total / (double)base : 0);
        strbuf_printf(sb, " %8" PRIu64 " %8" PRIu64, f->own, f->total);
        double cpu = sampler_function_cpu_pct(f);
        if (isnan(cpu)) {
            strbuf_printf(sb, " %5s  ", "-");
        } else {
            strbuf_printf(sb, " %5.0f  ", cpu);
        }
        strbuf_text(sb, f->function.ptr != NULL ? f->function.ptr : "?",
                    f->function.ptr != NULL ? f->function.len : 1);
        if (f->unreadable != SNAP_UNREADABLE_NONE) {
            strbuf_puts(sb, "\n"); /* no file: the name says what it is */
            strbuf_drain(sb, w->out, STRBUF_DRAIN_AT, &w->write_errno);
            continue;
        }
        strbuf_puts(sb, " (");
        strbuf_text(sb, f->file.ptr != NULL ? f->file.ptr : "?",
                    f->file.ptr != NULL ? f->file.len : 1);
        if (f->first_line >= 0) {
            strbuf_printf(sb, ":%d", f->first_line);
        }
        strbuf_puts(sb, ")\n");
        strbuf_drain(sb, w->out, STRBUF_DRAIN_AT, &w->write_errno);
    }
    if (st->functions_truncated) {
        strbuf_puts(sb, "(more functions than pytop counts: some frames left out)\n");
    }
    for (size_t i = 0; i < st->n_functions; i++) {
        if (st->functions[i].unreadable != SNAP_UNREADABLE_NONE) {
            strbuf_puts(sb, "(unreadable frames: ");
            unreadable_text(sb, st, &st->functions[i]);
            strbuf_puts(sb, ")\n");
        }
    }
}

static int text_finish(struct text_out *w, struct pt_error *err)
{
    bool nomem = w->sb.failed;
    if (!nomem) {
        strbuf_drain(&w->sb, w->out, 0, &w->write_errno);
    }
    strbuf_free(&w->sb);
    if (nomem) {
        return pt_error_set(err, PT_E_NOMEM, 0, "writing the statistics");
    }
    errno = 0;
    if (w->write_errno == 0 && fflush(w->out) != 0) {
        w->write_errno = errno != 0 ? errno : EIO;
    }
    if (w->write_errno != 0 || ferror(w->out)) {
        int e = w->write_errno != 0 ? w->write_errno : EIO;
        return pt_error_set(err, PT_E_IO, e, "writing the statistics: %s", strerror(e));
    }
    return 0;
}

int sampler_write_stats_text(const struct sampler_stats *st, FILE *out, size_t top_functions,
                             struct pt_error *err)
{
    struct text_out w = {.out = out};
    text_sampling(&w.sb, st);
    text_threads(&w.sb, st);
    text_functions(&w, st, top_functions);
    return text_finish(&w, err);
}

int sampler_write_text(const struct snapshot *snap, const struct sampler_stats *st, FILE *out,
                       const struct snapshot_source *src, size_t top_functions,
                       struct pt_error *err)
{
    struct text_out w = {.out = out};
    text_head(&w.sb, snap);
    text_sampling(&w.sb, st);
    text_threads(&w.sb, st);
    text_functions(&w, st, top_functions);
    if (snap == NULL) {
        strbuf_puts(&w.sb, "\n(no sample succeeded in this interval)\n");
    } else {
        strbuf_puts(&w.sb, "\n");
    }
    if (text_finish(&w, err) < 0) {
        return -1;
    }
    if (snap != NULL && snapshot_write_text(snap, out, src, err) < 0) {
        return -1;
    }
    /* A blank line between one interval's block and the next. */
    if (fputc('\n', out) == EOF || fflush(out) != 0) {
        return pt_error_set(err, PT_E_IO, errno, "writing the batch report: %s",
                            strerror(errno != 0 ? errno : EIO));
    }
    return 0;
}
