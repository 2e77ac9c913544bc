/* view_functions: the top-like table of functions over the sampling window, sortable. */
#include "config.h"

#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_sort.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum sort_key { SORT_OWN, SORT_TOTAL, SORT_CPU, SORT_FUNCTION, SORT_FILE, SORT_KEYS };

/* One function of the table, with what it needs to be sorted. */
struct row {
    const struct sampler_function *f;
    enum sort_key sort;
    bool invert;
};

struct functions_view {
    struct ui_list list;
    struct ui_sort order;
    struct row *rows;
    size_t n_rows;
    size_t cap_rows;
    size_t n_functions; /* in the statistics shown, before the filter */
    bool by_name;       /* at the last draw the filter picked rows by their names */
};

static void *create(void)
{
    struct functions_view *v = calloc(1, sizeof *v);
    if (v != NULL) {
        v->order.n_columns = SORT_KEYS;
    }
    return v;
}

static void destroy(void *state)
{
    struct functions_view *v = state;
    if (v != NULL) {
        free(v->rows);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "Functions";
}

static int compare_counts(uint64_t a, uint64_t b)
{
    return (a < b) - (a > b); /* most first */
}

/* Most first; unknown last. */
static int compare_shares(double a, double b)
{
    if (isnan(a) || isnan(b)) {
        return isnan(a) - isnan(b);
    }
    return (a < b) - (a > b);
}

static int compare_rows(const void *pa, const void *pb)
{
    const struct row *ra = pa;
    const struct row *rb = pb;
    const struct sampler_function *a = ra->f;
    const struct sampler_function *b = rb->f;
    int c = 0;
    switch (ra->sort) {
    case SORT_OWN:
        c = compare_counts(a->own, b->own);
        c = c != 0 ? c : compare_counts(a->total, b->total);
        break;
    case SORT_TOTAL:
        c = compare_counts(a->total, b->total);
        c = c != 0 ? c : compare_counts(a->own, b->own);
        break;
    case SORT_CPU:
        c = compare_shares(sampler_function_cpu_pct(a), sampler_function_cpu_pct(b));
        c = c != 0 ? c : compare_counts(a->own, b->own);
        break;
    case SORT_FUNCTION:
        c = snapshot_str_compare(a->function, b->function, SNAP_STR_READING);
        break;
    case SORT_FILE:
        c = snapshot_str_compare(a->file, b->file, SNAP_STR_READING);
        c = c != 0 ? c : (a->first_line > b->first_line) - (a->first_line < b->first_line);
        break;
    case SORT_KEYS:
        break;
    }
    if (c == 0) {
        c = snapshot_str_compare(a->function, b->function, SNAP_STR_READING);
    }
    if (c == 0) {
        c = snapshot_str_compare(a->file, b->file, SNAP_STR_READING);
    }
    return ra->invert ? -c : c;
}

/* The statistics shown: of the thread chosen with t, else of the threads the filter names
 * (NULL until they come), else of all. */
static const struct sampler_stats *stats_of(const struct ui_model *m)
{
    return m->focus_tid != 0 || m->n_named > 0 ? m->focus : m->stats;
}

/* The name of the thread TID in the snapshot, or unknown. */
static struct snap_str thread_name(const struct ui_model *m, pid_t tid)
{
    for (size_t i = 0; m->snap != NULL && i < m->snap->n_interps; i++) {
        for (size_t j = 0; j < m->snap->interps[i].n_threads; j++) {
            if (m->snap->interps[i].threads[j].tid == tid) {
                return m->snap->interps[i].threads[j].name;
            }
        }
    }
    return (struct snap_str){NULL, 0};
}

/* Whether the filter picks functions by their name and file. Not when it names the threads
 * counted (the thread chosen with t, or the threads it names): it picked them already, and
 * none of their functions need bear the thread's name. */
static bool filters_by_name(const struct ui_model *m)
{
    if (m->filter[0] == '\0') {
        return false;
    }
    if (m->focus_tid != 0) {
        struct snap_str name = thread_name(m, m->focus_tid);
        return name.ptr == NULL || !ui_text_match(m->filter, name);
    }
    return m->n_named == 0;
}

static bool collect(struct functions_view *v, const struct ui_model *m)
{
    const struct sampler_stats *st = stats_of(m);
    v->n_rows = 0;
    v->n_functions = st != NULL ? st->n_functions : 0;
    v->by_name = filters_by_name(m);
    for (size_t i = 0; st != NULL && i < st->n_functions; i++) {
        const struct sampler_function *f = &st->functions[i];
        if (v->by_name && !ui_text_match(m->filter, f->function) &&
            !ui_text_match(m->filter, f->file)) {
            continue;
        }
        if (!ui_list_reserve((void **)&v->rows, &v->cap_rows, v->n_rows + 1, sizeof *v->rows)) {
            return false;
        }
        v->rows[v->n_rows++] = (struct row){f, (enum sort_key)v->order.column, v->order.invert};
    }
    if (v->n_rows > 1) {
        qsort(v->rows, v->n_rows, sizeof *v->rows, compare_rows);
    }
    return true;
}

/* The thread of the picture whose name the filter is found in (the first one). */
static const struct snap_thread *named_thread(const struct ui_model *m)
{
    for (size_t i = 0; m->snap != NULL && i < m->snap->n_interps; i++) {
        for (size_t j = 0; j < m->snap->interps[i].n_threads; j++) {
            const struct snap_thread *t = &m->snap->interps[i].threads[j];
            if (t->name.ptr != NULL && ui_text_match(m->filter, t->name)) {
                return t;
            }
        }
    }
    return NULL;
}

/* Which threads are counted: "Thread 12 worker-1", "3 threads the filter names", "All". */
static void draw_whose(WINDOW *w, int width, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct snap_thread *named = m->n_named == 1 ? named_thread(m) : NULL;
    wattrset(w, st->attr[UI_HEADER]);
    if (m->focus_tid != 0 || named != NULL) {
        pid_t tid = m->focus_tid != 0 ? m->focus_tid : named->tid;
        ui_text_printf(w, width - getcurx(w), st, "Thread %d ", (int)tid);
        ui_text_put(w, thread_name(m, tid), width - getcurx(w), st);
        if (m->focus_tid == 0) {
            ui_text_puts(w, " (the filter names it)", width - getcurx(w), st);
        }
    } else if (m->n_named > m->n_named_counted) {
        ui_text_printf(w, width - getcurx(w), st,
                       "The first %zu of the %zu threads the filter names", m->n_named_counted,
                       m->n_named);
    } else if (m->n_named > 0) {
        ui_text_printf(w, width - getcurx(w), st, "The %zu threads the filter names", m->n_named);
    } else {
        wattrset(w, st->attr[UI_NORMAL]);
        ui_text_puts(w, "All threads", width - getcurx(w), st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw_summary(WINDOW *w, int width, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct sampler_stats *s = stats_of(m);
    wmove(w, 0, 1);
    draw_whose(w, width, m);
    ui_text_printf(w, width - getcurx(w), st, ": %llu thread-samples%s in %llu samples over %.1f s",
                   (unsigned long long)(s != NULL ? s->thread_samples : 0),
                   s != NULL ? sampler_mode_words(s->mode) : "",
                   (unsigned long long)(s != NULL ? s->samples : 0), s != NULL ? s->window_s : 0.0);
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, m->focus_tid != 0 ? "  (t: all threads)" : "  (t: the selected thread only)",
                 width - getcurx(w), st);
    if (s != NULL && s->functions_truncated) {
        ui_text_puts(w, "  (some frames not counted: too many functions)", width - getcurx(w), st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

/* Where each column starts in a window WIDTH columns wide; the function and the file share
 * what the numbers leave. */
struct columns {
    int own;
    int total;
    int own_s;
    int total_s;
    int cpu;
    int fn;
    int fn_w;
    int file;
    int file_w;
};

static struct columns columns_for(int width)
{
    struct columns c;
    c.own = 1;
    c.total = c.own + 6 + 1;
    c.own_s = c.total + 7 + 1;
    c.total_s = c.own_s + 8 + 1;
    c.cpu = c.total_s + 8 + 1;
    c.fn = c.cpu + 5 + 2;
    int rest = width - c.fn > 0 ? width - c.fn : 0;
    c.fn_w = rest * 11 / 20;
    c.file = c.fn + c.fn_w + 1;
    c.file_w = width - c.file > 0 ? width - c.file : 0;
    return c;
}

/* Draws TEXT right-aligned in the WIDTH columns ending before X + WIDTH. */
static void put_right(WINDOW *w, int y, int x, int width, const char *text,
                      const struct ui_style *st)
{
    int len = ui_text_width(ui_text_str(text), st);
    wmove(w, y, len < width ? x + width - len : x);
    ui_text_puts(w, text, width, st);
}

static void draw_title(const struct functions_view *v, WINDOW *w, int y, int width,
                       const struct ui_style *st)
{
    static const char *const heads[SORT_KEYS] = {"OWN%", "TOTAL%", "CPU%", "FUNCTION",
                                                 "FILE:LINE"};
    char h[SORT_KEYS][24];
    for (int k = 0; k < SORT_KEYS; k++) {
        const char *mark = ui_sort_marker(&v->order, (int)k, st);
        snprintf(h[k], sizeof h[k], "%s%s", heads[k], mark);
    }
    struct columns c = columns_for(width);
    wattrset(w, st->attr[UI_TITLE]);
    mvwhline(w, y, 0, ' ', width);
    put_right(w, y, c.own, 6, h[SORT_OWN], st);
    put_right(w, y, c.total, 7, h[SORT_TOTAL], st);
    /* The times are the shares in seconds: they sort with them, and say so. */
    char own_s[24];
    char total_s[24];
    snprintf(own_s, sizeof own_s, "OWN s%s", ui_sort_marker(&v->order, SORT_OWN, st));
    snprintf(total_s, sizeof total_s, "TOTAL s%s", ui_sort_marker(&v->order, SORT_TOTAL, st));
    put_right(w, y, c.own_s, 8, own_s, st);
    put_right(w, y, c.total_s, 8, total_s, st);
    put_right(w, y, c.cpu, 5, h[SORT_CPU], st);
    wmove(w, y, c.fn);
    ui_text_puts(w, h[SORT_FUNCTION], c.fn_w, st);
    wmove(w, y, c.file);
    ui_text_puts(w, h[SORT_FILE], c.file_w, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw_row(const struct sampler_function *f, bool selected, WINDOW *w, int y, int width,
                     const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct sampler_stats *s = stats_of(m);
    double base = s->thread_samples > 0 ? (double)s->thread_samples : 1;
    double per = s->samples > 0 ? s->window_s / (double)s->samples : 0;
    struct columns c = columns_for(width);
    attr_t a = st->attr[selected ? UI_SELECTED : UI_NORMAL];
    wattrset(w, a);
    mvwhline(w, y, 0, ' ', width);
    wmove(w, y, c.own);
    ui_text_printf(w, c.fn - c.own, st, "%6.1f %7.1f %8.2f %8.2f", 100.0 * (double)f->own / base,
                   100.0 * (double)f->total / base, (double)f->own * per, (double)f->total * per);
    /* CPU%: of the function's own samples whose thread's state was read, those on a CPU. */
    double cpu = sampler_function_cpu_pct(f);
    char cpu_text[16] = "-";
    if (!isnan(cpu)) {
        snprintf(cpu_text, sizeof cpu_text, "%.0f", cpu);
    }
    put_right(w, y, c.cpu, 5, cpu_text, st);
    wmove(w, y, c.fn);
    ui_text_put(w, f->function, c.fn_w, st);
    wmove(w, y, c.file);
    /* Frames pytop could not read have no file: the function column says what they are. */
    if (f->unreadable != SNAP_UNREADABLE_NONE) {
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    if (!selected) {
        wattrset(w, st->attr[UI_DIM]);
    }
    char num[24];
    snprintf(num, sizeof num, f->first_line > 0 ? ":%d" : ":?", f->first_line);
    int room = c.file_w - (int)strlen(num);
    if (room > 1) {
        ui_text_put_tail(w, f->file, room, st);
        ui_text_puts(w, num, (int)strlen(num), st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct functions_view *v = state;
    int height = getmaxy(w);
    int width = getmaxx(w);
    const struct ui_style *st = m->style;
    if (stats_of(m) == NULL) {
        wmove(w, 1, 2);
        wattrset(w, st->attr[UI_DIM]);
        const char *why = m->waiting          ? m->waiting_why
                          : m->focus_tid != 0 ? "counting the selected thread's functions (t: all)"
                          : m->n_named > 0    ? "counting the functions of the threads the "
                                                "filter names"
                                              : "waiting for the first samples";
        ui_text_puts(w, why, width - 2, st);
        if (m->frozen && (m->focus_tid != 0 || m->n_named > 0)) {
            ui_text_puts(w, " (once the picture moves again: p)", width - getcurx(w), st);
        }
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    if (!collect(v, m)) {
        return;
    }
    draw_summary(w, width, m);
    draw_title(v, w, 1, width, st);
    ui_list_fit(&v->list, v->n_rows, height - 2);
    if (v->n_rows == 0) {
        wmove(w, 2, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w,
                     v->by_name && v->n_functions > 0 ? "no function matches the filter"
                     : m->focus_tid != 0 || m->n_named > 0
                         ? "no samples of the thread in the window yet"
                         : "no samples in the window yet",
                     width - 2, st);
        wattrset(w, st->attr[UI_NORMAL]);
    }
    for (int i = 0; i + 2 < height && v->list.top + (size_t)i < v->n_rows; i++) {
        size_t k = v->list.top + (size_t)i;
        draw_row(v->rows[k].f, k == v->list.cursor, w, i + 2, width, m);
    }
}

static enum ui_redraw move_rows(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct functions_view *v = state;
    if (!collect(v, m)) {
        return UI_REDRAW_NONE;
    }
    return ui_list_key(&v->list, key, v->n_rows) ? UI_REDRAW_VIEW : UI_REDRAW_NONE;
}

/* Enter: the source heat view of the function under the cursor. */
static enum ui_redraw open_source(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct functions_view *v = state;
    if (stats_of(m) == NULL || !collect(v, m) || v->list.cursor >= v->n_rows) {
        return UI_REDRAW_NONE;
    }
    const struct sampler_function *f = v->rows[v->list.cursor].f;
    ui_show_heat(f->function, f->unreadable == SNAP_UNREADABLE_NONE ? f->file : (struct snap_str){0},
                 f->first_line);
    return UI_REDRAW_VIEW;
}

static const struct ui_binding KEYS[] = {
    {"Enter",
     {{UI_KEY_SYM, TERMKEY_SYM_ENTER}},
     open_source,
     UI_HELP_VIEWS,
     "the function's source, each line's share of the samples"},
    {NULL},
};

static struct ui_sort *sort_of(void *state)
{
    struct functions_view *v = state;
    return &v->order;
}

static void filter_note(const void *state, const struct ui_model *m, char *buf, size_t size)
{
    const struct functions_view *v = state;
    if (m->filter[0] == '\0') {
        snprintf(buf, size, "%s", "");
    } else if (v->by_name) {
        ui_text_hides(buf, size, v->n_functions - v->n_rows, v->n_functions, "function");
    } else if (m->focus_tid != 0) {
        snprintf(buf, size, "names the thread counted (t)");
    } else {
        if (m->n_named == 1) {
            snprintf(buf, size, "names a thread: its functions alone");
        } else {
            snprintf(buf, size, "names %zu threads: their functions alone", m->n_named);
        }
    }
}

const struct view_ops view_functions_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .move = move_rows,
    .keys = KEYS,
    .sort = sort_of,
    .selected_tid = NULL,
    .filter_note = filter_note,
    .enter_does = "source",
};
