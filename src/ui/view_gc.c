/* view_gc: the garbage collector per interpreter and generation, and the share of samples in it. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/sampler.h"
#include "core/snapshot.h"
#include "ui/ui_list.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum { LINE_CHARS = 160 };

/* The view is a scrolling text of pytop's own words and numbers, made afresh at each draw. */
struct gc_line {
    enum ui_attr attr;
    char text[LINE_CHARS];
};

struct gc_view {
    struct ui_list scroll;
    struct gc_line *lines;
    size_t n;
    size_t cap;
};

static void *create(void)
{
    return calloc(1, sizeof(struct gc_view));
}

static void destroy(void *state)
{
    struct gc_view *v = state;
    if (v != NULL) {
        free(v->lines);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "GC";
}

static void add(struct gc_view *v, enum ui_attr attr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(struct gc_view *v, enum ui_attr attr, const char *fmt, ...)
{
    if (v->n == v->cap) {
        size_t cap = v->cap > 0 ? v->cap * 2 : 64;
        struct gc_line *lines = realloc(v->lines, cap * sizeof *lines);
        if (lines == NULL) {
            return;
        }
        v->lines = lines;
        v->cap = cap;
    }
    struct gc_line *l = &v->lines[v->n++];
    l->attr = attr;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text, sizeof l->text, fmt, ap);
    va_end(ap);
}

static void number(char *buf, size_t size, int64_t v)
{
    if (v < 0) {
        snprintf(buf, size, "?");
    } else {
        snprintf(buf, size, "%" PRId64, v);
    }
}

static void add_generations(struct gc_view *v, const struct snap_gc *gc)
{
    const char *now = gc->collecting == SNAP_YES ? "yes" : gc->collecting == SNAP_NO ? "no" : "?";
    add(v, UI_NORMAL, "  collecting now: %s", now);
    add(v, UI_TITLE, "  %4s %10s %10s %12s %12s %14s", "GEN", "COUNT", "THRESHOLD", "COLLECTIONS",
        "COLLECTED", "UNCOLLECTABLE");
    for (size_t i = 0; i < gc->n_generations; i++) {
        const struct snap_gc_gen *g = &gc->generations[i];
        char c[5][24];
        number(c[0], sizeof c[0], g->count);
        number(c[1], sizeof c[1], g->threshold);
        number(c[2], sizeof c[2], g->collections);
        number(c[3], sizeof c[3], g->collected);
        number(c[4], sizeof c[4], g->uncollectable);
        add(v, UI_NORMAL, "  %4d %10s %10s %12s %12s %14s", g->generation, c[0], c[1], c[2], c[3],
            c[4]);
    }
}

static void add_share(struct gc_view *v, const struct sampler_stats *st)
{
    if (st == NULL) {
        return;
    }
    uint64_t n = st->samples;
    add(v, UI_NORMAL, "Samples with a thread in the GC: %.1f %% (%llu of %llu over %.1f s)",
        n > 0 ? 100.0 * (double)st->gc_samples / (double)n : 0.0,
        (unsigned long long)st->gc_samples, (unsigned long long)n, st->window_s);
    add(v, UI_DIM, "(each thread's share is the %%GC column of the Threads view)");
}

static void build(struct gc_view *v, const struct ui_model *m)
{
    v->n = 0;
    add_share(v, m->stats);
    for (size_t i = 0; i < m->snap->n_interps; i++) {
        const struct snap_interp *in = &m->snap->interps[i];
        add(v, UI_NORMAL, "%s", "");
        add(v, UI_HEADER, "Interpreter %" PRId64, in->id);
        if (!in->gc.present) {
            add(v, UI_DIM, "  GC generations: not available for this target yet");
            continue;
        }
        add_generations(v, &in->gc);
    }
    add(v, UI_NORMAL, "%s", "");
    add(v, UI_DIM, "Recent collections: not available for this target yet");
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct gc_view *v = state;
    int height = getmaxy(w);
    int width = getmaxx(w);
    const struct ui_style *st = m->style;
    if (m->snap == NULL) {
        wmove(w, 1, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, m->waiting ? m->waiting_why : "waiting for the first sample", width - 2,
                     st);
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    build(v, m);
    ui_list_fit_scroll(&v->scroll, v->n, height);
    for (int y = 0; y < height && v->scroll.top + (size_t)y < v->n; y++) {
        const struct gc_line *l = &v->lines[v->scroll.top + (size_t)y];
        wattrset(w, st->attr[l->attr]);
        wmove(w, y, 1);
        ui_text_puts(w, l->text, width - 1, st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static bool on_key(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct gc_view *v = state;
    return ui_list_scroll_key(&v->scroll, key, v->n);
}

const struct view_ops view_gc_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .on_key = on_key,
    .selected_tid = NULL,
};
