/* view_gc: the garbage collector per interpreter and generation, and the share of samples in it. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum { LINE_CHARS = 160 };

/* The view is a scrolling text of pytop's own words and numbers, made afresh at each draw. */
struct gc_line {
    enum ui_attr attr;
    char text[LINE_CHARS];
};

struct gc_seen;

struct gc_view {
    struct ui_list scroll;
    struct gc_line *lines;
    size_t n;
    size_t cap;
    struct gc_seen *seen;   /* HISTORY entries, a ring */
    size_t seen_at;
    size_t n_seen;
};

static void *create(void)
{
    struct gc_view *v = calloc(1, sizeof *v);
    return v;
}

static void destroy(void *state)
{
    struct gc_view *v = state;
    if (v != NULL) {
        free(v->lines);
        free(v->seen);
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
    if (!ui_list_reserve((void **)&v->lines, &v->cap, v->n + 1, sizeof *v->lines)) {
        return;
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

/* "+12": what one collection added to a total; "?" when not known. */
static void added(char *buf, size_t size, int64_t v)
{
    if (v < 0) {
        snprintf(buf, size, "?");
    } else {
        snprintf(buf, size, "+%" PRId64, v);
    }
}

/* Collections per second over the window come from the totals seen frame after frame. */
enum { HISTORY = 512, MAX_GENS = 4, RATE_MIN_S = 5 };

struct gc_seen {
    double time;
    int64_t interp;
    int64_t collections[MAX_GENS];
};

static void remember(struct gc_view *v, double time, int64_t interp, const struct snap_gc *gc)
{
    if (v->seen == NULL && (v->seen = calloc(HISTORY, sizeof *v->seen)) == NULL) {
        return;
    }
    for (size_t i = 0; i < v->n_seen; i++) {
        const struct gc_seen *e = &v->seen[(v->seen_at + HISTORY - 1 - i) % HISTORY];
        if (e->interp == interp) {
            if (e->time >= time) {
                return; /* this frame is known already (frozen, or redrawn) */
            }
            break;
        }
    }
    struct gc_seen *e = &v->seen[v->seen_at];
    v->seen_at = (v->seen_at + 1) % HISTORY;
    v->n_seen = v->n_seen < HISTORY ? v->n_seen + 1 : HISTORY;
    e->time = time;
    e->interp = interp;
    for (size_t g = 0; g < MAX_GENS; g++) {
        e->collections[g] = g < gc->n_generations ? gc->generations[g].collections : -1;
    }
}

/* Collections of generation GEN (all of them when GEN < 0) per second between the oldest frame
 * inside the window and the newest; negative when not known yet. */
static double per_second(const struct gc_view *v, int64_t interp, int gen, double window_s)
{
    const struct gc_seen *newest = NULL;
    const struct gc_seen *oldest = NULL;
    for (size_t i = 0; i < v->n_seen; i++) {
        const struct gc_seen *e = &v->seen[(v->seen_at + HISTORY - 1 - i) % HISTORY];
        if (e->interp != interp) {
            continue;
        }
        if (newest == NULL) {
            newest = e;
        } else if (newest->time - e->time <= window_s + 0.5) {
            oldest = e;
        } else {
            break;
        }
    }
    if (newest == NULL || oldest == NULL || newest->time <= oldest->time) {
        return -1.0;
    }
    int64_t d = 0;
    for (int g = 0; g < MAX_GENS; g++) {
        if (gen >= 0 && g != gen) {
            continue;
        }
        if (newest->collections[g] < 0 || oldest->collections[g] < 0) {
            if (gen >= 0) {
                return -1.0;
            }
            continue;
        }
        d += newest->collections[g] - oldest->collections[g];
    }
    return d >= 0 ? (double)d / (newest->time - oldest->time) : -1.0;
}

static void rate(char *buf, size_t size, double r)
{
    if (r < 0) {
        snprintf(buf, size, "...");
    } else {
        snprintf(buf, size, "%.1f", r);
    }
}

static void ms(char *buf, size_t size, double seconds)
{
    if (!(seconds >= 0)) {
        snprintf(buf, size, "?");
    } else {
        snprintf(buf, size, "%.3f ms", seconds * 1e3);
    }
}

static const char *thread_name(const struct snap_interp *in, pid_t tid, int *len)
{
    for (size_t i = 0; i < in->n_threads; i++) {
        if (in->threads[i].tid == tid && in->threads[i].name.ptr != NULL) {
            *len = (int)(in->threads[i].name.len < 40 ? in->threads[i].name.len : 40);
            return in->threads[i].name.ptr;
        }
    }
    *len = 1;
    return "?";
}

static void add_state(struct gc_view *v, const struct snap_interp *in)
{
    const struct snap_gc *gc = &in->gc;
    const char *enabled = gc->enabled == SNAP_YES  ? "automatic collection on"
                          : gc->enabled == SNAP_NO ? "automatic collection OFF (gc.disable())"
                                                   : "automatic collection ?";
    if (gc->collecting == SNAP_YES && gc->thread > 0) {
        int len;
        const char *name = thread_name(in, gc->thread, &len);
        add(v, UI_GC, "  %s; COLLECTING NOW in thread %d \"%.*s\"", enabled, (int)gc->thread,
            len, name);
    } else if (gc->collecting == SNAP_YES) {
        add(v, UI_GC, "  %s; COLLECTING NOW", enabled);
    } else {
        add(v, UI_NORMAL, "  %s; not collecting", enabled);
    }
}

static void add_generations(struct gc_view *v, const struct snap_interp *in, double window_s)
{
    const struct snap_gc *gc = &in->gc;
    bool timed = false;
    for (size_t i = 0; i < gc->n_generations; i++) {
        timed |= gc->generations[i].candidates >= 0;
    }
    add(v, UI_TITLE, "  %4s %17s %12s %10s %14s %8s%s", "GEN", "COUNT/THRESHOLD", "COLLECTIONS",
        "COLLECTED", "UNCOLLECTABLE", "PER SEC", timed ? "   CANDIDATES   TOTAL TIME" : "");
    for (size_t i = 0; i < gc->n_generations && i < MAX_GENS; i++) {
        const struct snap_gc_gen *g = &gc->generations[i];
        char c[8][24];
        char ct[48];
        number(c[0], sizeof c[0], g->count);
        number(c[1], sizeof c[1], g->threshold);
        snprintf(ct, sizeof ct, "%s/%s", c[0], c[1]);
        number(c[2], sizeof c[2], g->collections);
        number(c[3], sizeof c[3], g->collected);
        number(c[4], sizeof c[4], g->uncollectable);
        rate(c[5], sizeof c[5], per_second(v, in->id, (int)i, window_s));
        number(c[6], sizeof c[6], g->candidates);
        ms(c[7], sizeof c[7], g->duration);
        if (timed) {
            add(v, UI_NORMAL, "  %4d %17s %12s %10s %14s %8s %12s %12s", g->generation, ct, c[2],
                c[3], c[4], c[5], c[6], c[7]);
        } else {
            add(v, UI_NORMAL, "  %4d %17s %12s %10s %14s %8s", g->generation, ct, c[2], c[3],
                c[4], c[5]);
        }
    }
}

/* The records of recent collections, newest first, each on its own. */
static void add_recent(struct gc_view *v, const struct snap_gc *gc)
{
    if (!snapshot_gc_counts_kept(gc)) {
        add(v, UI_DIM, "  Collections: this Python counts none (gc.get_stats() came in 3.4)");
    }
    if (!gc->recent_present) {
        add(v, UI_DIM, "  Recent collections: this Python keeps no record of them (3.15+ does)");
        return;
    }
    if (gc->n_recent == 0) {
        add(v, UI_DIM, "  Recent collections: none yet");
        return;
    }
    /* What each collection added to its generation's totals: "+COLLECTED", so that the word
     * COLLECTED keeps the one meaning it has in the table above (and in JSON), a total. */
    bool untold = false;
    add(v, UI_TITLE, "  %-20s %4s %12s %11s %12s %10s", "RECENT COLLECTIONS", "GEN", "TOOK",
        "+COLLECTED", "+CANDIDATES", "HEAP");
    for (size_t k = gc->n_recent; k-- > 0;) {
        const struct snap_gc_record *r = &gc->recent[k];
        struct snap_gc_record d;
        char when[32];
        char took[24];
        char c[3][24];
        double ago = (double)(gc->read_ns - r->stop_ns) / 1e9;
        if (gc->read_ns >= r->stop_ns && r->stop_ns > 0 && ago < 1.0) {
            snprintf(when, sizeof when, "%.0f ms ago", ago * 1e3);
        } else if (gc->read_ns >= r->stop_ns && r->stop_ns > 0) {
            snprintf(when, sizeof when, "%.1f s ago", ago);
        } else {
            snprintf(when, sizeof when, "?");
        }
        bool own = snapshot_gc_record_delta(gc, k, &d);
        untold = untold || !own;
        ms(took, sizeof took,
           r->stop_ns >= r->start_ns ? (double)(r->stop_ns - r->start_ns) / 1e9 : -1.0);
        added(c[0], sizeof c[0], own ? d.collected : -1);
        added(c[1], sizeof c[1], own ? d.candidates : -1);
        number(c[2], sizeof c[2], r->heap_size);
        add(v, UI_NORMAL, "  %-20s %4d %12s %11s %12s %10s", when, r->generation, took, c[0], c[1],
            c[2]);
    }
    if (untold) {
        add(v, UI_DIM,
            "  ?: the collection before it in its generation is not among the "
            "records kept");
    }
}

static int by_gc_share(const void *a, const void *b)
{
    const struct sampler_thread *x = *(const struct sampler_thread *const *)a;
    const struct sampler_thread *y = *(const struct sampler_thread *const *)b;
    return (x->gc_samples < y->gc_samples) - (x->gc_samples > y->gc_samples);
}

/* The threads seen in the GC over the window, most first. UNTOLD: a collection runs now and
 * which thread runs it is not known (also taken as so when a thread's share is not known). */
static void add_threads(struct gc_view *v, const struct sampler_stats *st, int64_t interp,
                        bool untold)
{
    enum { SHOWN = 8 };
    const struct sampler_thread *in_gc[SHOWN * 8];
    size_t n = 0;
    for (size_t i = 0; st != NULL && i < st->n_threads && n < SHOWN * 8; i++) {
        if (st->threads[i].interp_id != interp) {
            continue;
        }
        /* A share that is not known: the window holds collections whose thread was not. */
        untold = untold || isnan(st->threads[i].gc_pct);
        if (st->threads[i].gc_samples > 0) {
            in_gc[n++] = &st->threads[i];
        }
    }
    if (n == 0 && untold) {
        add(v, UI_DIM, "  Which thread collects is not known (pytop did not see the collections "
                       "start: see in_gc in pytop(1))");
        return;
    }
    if (n == 0) {
        add(v, UI_DIM, "  No thread was seen in the GC over the window");
        return;
    }
    qsort(in_gc, n, sizeof in_gc[0], by_gc_share);
    add(v, UI_TITLE, "  %-8s %-24s %7s %9s", "TID", "THREAD IN GC", "%GC", "SAMPLES");
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        const struct sampler_thread *t = in_gc[i];
        int len = t->name.ptr != NULL ? (int)(t->name.len < 24 ? t->name.len : 24) : 1;
        char pct[16] = "     ?";
        if (!isnan(t->gc_pct)) {
            snprintf(pct, sizeof pct, "%6.1f", t->gc_pct);
        }
        add(v, UI_NORMAL, "  %-8d %-24.*s %s%% %9llu", (int)t->tid, len,
            t->name.ptr != NULL ? t->name.ptr : "?", pct, (unsigned long long)t->gc_samples);
    }
    if (n > SHOWN) {
        add(v, UI_DIM, "  ... %zu more", n - SHOWN);
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
}

static void build(struct gc_view *v, const struct ui_model *m)
{
    /* Frames come about once a second: the rate needs a few of them. */
    double window_s = m->stats != NULL && m->stats->window_s > RATE_MIN_S ? m->stats->window_s
                                                                        : RATE_MIN_S;
    v->n = 0;
    add_share(v, m->stats);
    for (size_t i = 0; i < m->snap->n_interps; i++) {
        const struct snap_interp *in = &m->snap->interps[i];
        char all[24];
        if (in->gc.present) {
            remember(v, m->snap->time, in->id, &in->gc);
        }
        add(v, UI_NORMAL, "%s", "");
        if (!in->gc.present) {
            add(v, UI_HEADER, "Interpreter %" PRId64, in->id);
            add(v, UI_DIM, "  GC: not read (the warnings of a dump, key d, say why)");
            continue;
        }
        rate(all, sizeof all, per_second(v, in->id, -1, window_s));
        add(v, UI_HEADER, "Interpreter %" PRId64 ": %s collections/s over the last %.0f s", in->id,
            all, window_s);
        add_state(v, in);
        add_generations(v, in, window_s);
        add_threads(v, m->stats, in->id, in->gc.collecting == SNAP_YES && in->gc.thread <= 0);
        add_recent(v, &in->gc);
    }
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

static enum ui_redraw move_rows(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct gc_view *v = state;
    return ui_list_scroll_key(&v->scroll, key, v->n) ? UI_REDRAW_VIEW : UI_REDRAW_NONE;
}

const struct view_ops view_gc_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .move = move_rows,
    .selected_tid = NULL,
};
