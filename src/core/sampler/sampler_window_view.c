/* sampler_window_view: the window read out: its counts, threads and functions over the span
 * asked for, without the buckets that fell out of it. */
#include "config.h"

#include "core/sampler/sampler_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampler/sampler_window_int.h"

static void view_drop_bucket(const struct sampler_window *w, const struct sampler_window_bucket *b,
                             struct sampler_window_view *v)
{
    sampler_window_counts_sub(&v->counts, &b->c);
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const struct thread_delta *d = &b->threads[i];
        struct sampler_window_thread_counts *tc = &v->threads[d->thread];
        tc->samples -= d->samples;
        tc->seen -= d->seen;
        tc->gil -= d->gil;
        tc->cpu -= d->cpu;
        tc->cpu_known -= d->cpu_known;
        tc->gc -= d->gc;
        tc->cpu_ns -= d->cpu_ns;
    }
    for (uint32_t i = 0; i < b->n_pairs; i++) {
        const struct pair_delta *d = &b->pairs[i];
        const struct sampler_table_pair *p = sampler_table_pair_at(&w->table, d->pair);
        if (!v->one || p->thread == v->only) {
            v->funcs[p->func].own -= d->own;
            v->funcs[p->func].total -= d->total;
            v->funcs[p->func].own_state -= d->own_state;
            v->funcs[p->func].own_on_cpu -= d->own_on_cpu;
        }
    }
}

static void view_fill(const struct sampler_window *w, struct sampler_window_view *v)
{
    const struct sampler_table *t = &w->table;
    for (uint32_t i = 0; i < t->threads.n; i++) {
        const struct sampler_table_thread *th = sampler_table_thread_at(t, i);
        if (th->used) {
            v->threads[i] = (struct sampler_window_thread_counts){
                th->samples, th->seen, th->gil, th->cpu, th->cpu_known, th->gc, th->cpu_ns};
        }
    }
    if (!v->one) {
        for (uint32_t i = 0; i < t->funcs.n; i++) {
            const struct sampler_table_func *f = sampler_table_func_at(t, i);
            if (f->used) {
                v->funcs[i] = (struct sampler_window_func_counts){f->own, f->total, f->own_state,
                                                                  f->own_on_cpu};
            }
        }
        return;
    }
    for (uint32_t i = 0; i < t->pairs.n && v->only != SAMPLER_TABLE_NONE; i++) {
        const struct sampler_table_pair *p = sampler_table_pair_at(t, i);
        if (p->used && p->thread == v->only) {
            v->funcs[p->func] = (struct sampler_window_func_counts){p->own, p->total,
                                                                    p->own_state, p->own_on_cpu};
        }
    }
}

/* How long the window at NOW reaches back: to the start of its oldest bucket, or to the first
 * sample since the reset when that came later. */
double sampler_window_span(const struct sampler_window *w, double now)
{
    if (isnan(w->started) || !isfinite(now)) {
        return 0;
    }
    double lower = (double)(sampler_window_bucket_number(w, now) - SAMPLER_BUCKETS + 1) * w->width;
    if (lower < w->started) {
        lower = w->started;
    }
    return now > lower ? now - lower : 0;
}

bool sampler_window_view(const struct sampler_window *w, double now, struct sampler_window_view *v)
{
    const struct sampler_table *t = &w->table;
    v->counts = w->counts;
    v->span = sampler_window_span(w, now);
    v->threads = calloc(t->threads.n > 0 ? t->threads.n : 1, sizeof *v->threads);
    v->funcs = calloc(t->funcs.n > 0 ? t->funcs.n : 1, sizeof *v->funcs);
    if (v->threads == NULL || v->funcs == NULL) {
        return false;
    }
    view_fill(w, v);
    int64_t k = sampler_window_bucket_number(w, now);
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        const struct sampler_window_bucket *b = &w->buckets[i];
        if (b->number != INT64_MIN && b->number <= k - SAMPLER_BUCKETS) {
            view_drop_bucket(w, b, v);
        }
    }
    return true;
}

void sampler_window_view_free(struct sampler_window_view *v)
{
    free(v->threads);
    free(v->funcs);
    v->threads = NULL;
    v->funcs = NULL;
}
