/* view_threads: one row per thread (state, %GIL, %CPU, %GC, where it is) and its stack below. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_sort.h"
#include "ui/ui_stack.h"
#include "ui/ui_text.h"
#include "ui/view.h"

/* The columns, left to right; s and S go through them in this order. */
enum sort_key {
    SORT_TID,
    SORT_NAME,
    SORT_STATE,
    SORT_GIL,
    SORT_CPU,
    SORT_GC,
    SORT_WAIT,
    SORT_FUNCTION,
    SORT_KEYS
};

static const char *const SORT_TITLES[SORT_KEYS] = {"TID",  "NAME", "STATE", "%GIL",
                                                   "%CPU", "%GC",  "WAIT",  "FUNCTION"};

enum {
    NAME_MIN = 10,     /* the name column never narrower (then names are cut) */
    NAME_MAX = 32,     /* nor wider (the stack's title has the whole name) */
    FUNCTION_MIN = 22, /* the name column grows only while the function keeps this */
    WAIT_MIN = 12,     /* the wait column, when there is room for it at all */
    WAIT_MAX = 60,     /* the stack's head line has the whole wait */
};

/* One thread of the table, with what it needs to be sorted. */
struct row {
    const struct snapshot *snap;
    const struct snap_thread *t;
    const struct sampler_thread *st; /* NULL: not in the statistics' window */
    int64_t interp;
    enum sort_key sort;
    bool invert;
};

struct threads_view {
    struct ui_list table;
    struct ui_list stacks; /* the all-stacks scroll */
    size_t stacks_skip;    /* its top line within the selected thread's stack */
    bool all_stacks;       /* Enter: every stack, one after the other, instead of the table */
    bool in_stack;         /* Right: the cursor is on a frame of the selected thread's stack */
    size_t frame;          /* that frame (innermost first), while IN_STACK */
    pid_t selected_tid;    /* the thread under the cursor, kept across frames */
    uint64_t selected_ident;
    struct ui_sort order;
    struct row *rows;
    size_t n_rows;
    size_t cap_rows;
    size_t n_threads; /* in the picture, before the filter */
};

static void *create(void)
{
    struct threads_view *v = calloc(1, sizeof *v);
    if (v != NULL) {
        v->order.n_columns = SORT_KEYS;
    }
    return v;
}

static void destroy(void *state)
{
    struct threads_view *v = state;
    if (v != NULL) {
        free(v->rows);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "Threads";
}

static pid_t selected_tid(const void *state)
{
    const struct threads_view *v = state;
    return v->selected_tid;
}

static bool thread_matches(const struct snap_thread *t, const char *filter)
{
    if (ui_text_match(filter, t->name)) {
        return true;
    }
    for (size_t i = 0; i < t->n_frames; i++) {
        if (ui_stack_frame_matches(&t->frames[i], filter)) {
            return true;
        }
    }
    return false;
}

/* A thread's state as a rank, busiest first: holds the GIL, waits for it, on a CPU, in GC,
 * with an exception, idle; unknown last. */
static int state_rank(const struct snap_thread *t)
{
    int rank = (t->gil == SNAP_YES) << 4 | (t->gil_requested == SNAP_YES) << 3 |
               (t->on_cpu == SNAP_YES) << 2 | (t->in_gc == SNAP_YES) << 1 |
               (t->has_exception == SNAP_YES);
    bool idle = t->gil == SNAP_NO && t->gil_requested != SNAP_YES && t->on_cpu == SNAP_NO;
    return rank != 0 || idle ? rank : -1;
}

/* A share of the thread's samples that matched the mode, "-" (-1) without any; %CPU is the
 * kernel's CPU time, known for every thread seen. */
static double share(const struct sampler_thread *st, enum sort_key k)
{
    if (st == NULL || st->seen == 0 || (st->samples == 0 && !(k == SORT_CPU && st->cpu_ns > 0))) {
        return -1;
    }
    return k == SORT_GIL ? st->gil_pct : k == SORT_CPU ? st->cpu_pct : st->gc_pct;
}

/* SHARE for sorting: an unknown one (NAN) between no samples and 0 %. */
static double sort_share(const struct sampler_thread *st, enum sort_key k)
{
    double p = share(st, k);
    return isnan(p) ? -0.5 : p;
}

/* Deadlocked first, then locks, the GIL, I/O, sleeps, the unknown, the running. */
static int wait_rank(const struct snapshot *s, const struct snap_thread *t)
{
    static const int rank[] = {
        [SNAP_WAIT_NONE] = 7,  [SNAP_WAIT_LOCK] = 1,  [SNAP_WAIT_GIL] = 2,     [SNAP_WAIT_IO] = 3,
        [SNAP_WAIT_SLEEP] = 4, [SNAP_WAIT_UNKNOWN] = 5, [SNAP_WAIT_RUNNING] = 6,
    };
    if (ui_stack_in_deadlock(s, t)) {
        return 0;
    }
    return (size_t)t->wait.kind < sizeof rank / sizeof *rank ? rank[t->wait.kind] : 7;
}

static int compare_rows(const void *pa, const void *pb)
{
    const struct row *a = pa;
    const struct row *b = pb;
    int c = 0;
    switch (a->sort) {
    case SORT_NAME:
        c = snapshot_str_compare(a->t->name, b->t->name, SNAP_STR_READING);
        break;
    case SORT_STATE:
        c = (state_rank(a->t) < state_rank(b->t)) - (state_rank(a->t) > state_rank(b->t));
        break;
    case SORT_GIL:
    case SORT_CPU:
    case SORT_GC:
        /* Busiest first unless inverted. */
        c = (sort_share(a->st, a->sort) < sort_share(b->st, a->sort)) -
            (sort_share(a->st, a->sort) > sort_share(b->st, a->sort));
        break;
    case SORT_WAIT:
        /* Deadlocked first, then by kind, the longest waits first within a kind. */
        c = (wait_rank(a->snap, a->t) > wait_rank(b->snap, b->t)) -
            (wait_rank(a->snap, a->t) < wait_rank(b->snap, b->t));
        if (c == 0) {
            c = (a->t->wait.since < b->t->wait.since) - (a->t->wait.since > b->t->wait.since);
        }
        break;
    case SORT_FUNCTION:
        c = snapshot_str_compare(ui_stack_top_function(a->t), ui_stack_top_function(b->t),
                                 SNAP_STR_READING);
        break;
    case SORT_TID:
    case SORT_KEYS:
        break;
    }
    if (c == 0) {
        c = (a->t->tid > b->t->tid) - (a->t->tid < b->t->tid);
    }
    if (c == 0) {
        c = (a->t->thread_id > b->t->thread_id) - (a->t->thread_id < b->t->thread_id);
    }
    return a->invert ? -c : c;
}

/* The threads to show, filtered and sorted, into V->rows. False on out of memory. */
static bool collect(struct threads_view *v, const struct ui_model *m)
{
    v->n_rows = 0;
    v->n_threads = 0;
    for (size_t i = 0; m->snap != NULL && i < m->snap->n_interps; i++) {
        const struct snap_interp *in = &m->snap->interps[i];
        for (size_t j = 0; j < in->n_threads; j++) {
            const struct snap_thread *t = &in->threads[j];
            v->n_threads++;
            if (!thread_matches(t, m->filter)) {
                continue;
            }
            if (!ui_list_reserve((void **)&v->rows, &v->cap_rows, v->n_rows + 1, sizeof *v->rows)) {
                return false;
            }
            const struct sampler_thread *st =
                m->stats != NULL ? sampler_stats_find_thread(m->stats, in->id, t->tid, t->thread_id)
                                 : NULL;
            v->rows[v->n_rows++] =
                (struct row){m->snap, t, st, in->id, (enum sort_key)v->order.column,
                             v->order.invert};
        }
    }
    if (v->n_rows > 1) {
        qsort(v->rows, v->n_rows, sizeof *v->rows, compare_rows);
    }
    return true;
}

/* Puts the cursor back on the selected thread after the rows changed. */
static void find_selected(struct threads_view *v)
{
    for (size_t i = 0; i < v->n_rows; i++) {
        if (v->rows[i].t->tid == v->selected_tid && v->rows[i].t->thread_id == v->selected_ident) {
            v->table.cursor = i;
            return;
        }
    }
}

static void remember_selected(struct threads_view *v)
{
    if (v->table.cursor < v->n_rows) {
        v->selected_tid = v->rows[v->table.cursor].t->tid;
        v->selected_ident = v->rows[v->table.cursor].t->thread_id;
    }
}

/* Where each column starts, and how wide it is. Column 0 marks the thread the Functions view
 * is about. */
struct columns {
    int x[SORT_KEYS];
    int w[SORT_KEYS];
};

/* The columns for the rows of V in a window WIDTH columns wide: the tid, the name and the
 * state as wide as the widest shown (or their titles), the name within bounds and only while
 * the function keeps FUNCTION_MIN columns; the function gets what is left. */
static struct columns columns_for(const struct threads_view *v, int width,
                                  const struct ui_style *st)
{
    struct columns c;
    int tid = 4; /* "TID" and the sort marker */
    int name = 5;
    int state = 6;
    int wait = 0;
    for (size_t i = 0; i < v->n_rows; i++) {
        if (v->rows[i].t->wait.kind != SNAP_WAIT_NONE) {
            char words[WAIT_MAX * 4];
            snapshot_wait_text(v->rows[i].snap, v->rows[i].t, true, words, sizeof words);
            int n = ui_text_width(ui_text_str(words), st);
            wait = n > wait ? n : wait < 4 ? 4 : wait;
        }
        char text[64];
        int n = snprintf(text, sizeof text, "%d", (int)v->rows[i].t->tid);
        tid = n > tid ? n : tid;
        n = ui_text_width(v->rows[i].t->name, st);
        name = n > name ? n : name;
        ui_stack_state_short(v->rows[i].t, text, sizeof text);
        n = (int)strlen(text);
        state = n > state ? n : state;
    }
    name = name < NAME_MIN ? NAME_MIN : name > NAME_MAX ? NAME_MAX : name;
    c.w[SORT_TID] = tid;
    c.w[SORT_STATE] = state;
    c.w[SORT_GIL] = c.w[SORT_CPU] = c.w[SORT_GC] = 5;
    /* Everything but the name, the wait and the function: the marker, the numbers and the
     * gaps. */
    int fixed = 1 + tid + 1 + 1 + state + 1 + 3 * 5 + 2 + 2;
    int room = width - fixed - FUNCTION_MIN;
    c.w[SORT_NAME] = name < room ? name : room > NAME_MIN ? room : NAME_MIN;
    /* The wait gets what the name leaves, up to its widest text; none when that is too
     * little (the stack's head line still says it). */
    room -= c.w[SORT_NAME] + 1;
    wait = wait > WAIT_MAX ? WAIT_MAX : wait;
    c.w[SORT_WAIT] = wait == 0 || room < WAIT_MIN ? 0 : wait < room ? wait : room;
    c.x[SORT_TID] = 1;
    c.x[SORT_NAME] = c.x[SORT_TID] + c.w[SORT_TID] + 1;
    c.x[SORT_STATE] = c.x[SORT_NAME] + c.w[SORT_NAME] + 1;
    c.x[SORT_GIL] = c.x[SORT_STATE] + c.w[SORT_STATE] + 1;
    c.x[SORT_CPU] = c.x[SORT_GIL] + c.w[SORT_GIL] + 1;
    c.x[SORT_GC] = c.x[SORT_CPU] + c.w[SORT_CPU] + 1;
    c.x[SORT_WAIT] = c.x[SORT_GC] + c.w[SORT_GC] + 2;
    c.x[SORT_FUNCTION] = c.x[SORT_WAIT] + c.w[SORT_WAIT] + (c.w[SORT_WAIT] > 0 ? 1 : 0);
    c.w[SORT_FUNCTION] = width - c.x[SORT_FUNCTION] > 0 ? width - c.x[SORT_FUNCTION] : 0;
    return c;
}

static void draw_title(struct threads_view *v, const struct columns *c, WINDOW *w, int y, int width,
                       const struct ui_style *st)
{
    wattrset(w, st->attr[UI_TITLE]);
    mvwhline(w, y, 0, ' ', width);
    for (int k = 0; k < SORT_KEYS; k++) {
        char head[32];
        const char *mark = ui_sort_marker(&v->order, (int)k, st);
        snprintf(head, sizeof head, "%s%s", SORT_TITLES[k], mark);
        int len = ui_text_width(ui_text_str(head), st);
        if (c->w[k] == 0) {
            continue;
        }
        bool right = k != SORT_NAME && k != SORT_STATE && k != SORT_WAIT && k != SORT_FUNCTION &&
                     len < c->w[k];
        wmove(w, y, right ? c->x[k] + c->w[k] - len : c->x[k]);
        ui_text_puts(w, head, c->w[k] + 1, st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw_pct(WINDOW *w, const struct sampler_thread *s, enum sort_key k, int width,
                     const struct ui_style *st)
{
    double p = share(s, k);
    if (isnan(p)) {
        ui_text_printf(w, width, st, "%*s", width, "?");
    } else if (p < 0) {
        ui_text_printf(w, width, st, "%*s", width, "-");
    } else {
        ui_text_printf(w, width, st, "%*.1f", width, p);
    }
}

static void draw_row(const struct row *r, const struct columns *cols, bool selected, bool focused,
                     WINDOW *w, int y, int width, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    struct columns c = *cols;
    attr_t base = st->attr[selected ? UI_SELECTED : UI_NORMAL];
    wattrset(w, base);
    mvwhline(w, y, 0, ' ', width);
    wmove(w, y, 0);
    ui_text_puts(w, focused ? "*" : " ", 1, st);
    if (r->t->tid > 0) {
        ui_text_printf(w, c.w[SORT_TID], st, "%*d", c.w[SORT_TID], (int)r->t->tid);
    } else {
        ui_text_printf(w, c.w[SORT_TID], st, "%*s", c.w[SORT_TID], "?");
    }
    wmove(w, y, c.x[SORT_NAME]);
    ui_text_put(w, r->t->name, c.w[SORT_NAME], st);
    wmove(w, y, c.x[SORT_STATE]);
    if (!selected) {
        wattrset(w, st->attr[ui_stack_state_attr(r->t)]);
    }
    char words[64];
    ui_stack_state_short(r->t, words, sizeof words);
    ui_text_puts(w, words, c.w[SORT_STATE], st);
    wattrset(w, base);
    for (int k = SORT_GIL; k <= SORT_GC; k++) {
        wmove(w, y, c.x[k]);
        draw_pct(w, r->st, (enum sort_key)k, c.w[k], st);
    }
    if (c.w[SORT_WAIT] > 0) {
        char waits[WAIT_MAX * 4];
        snapshot_wait_text(r->snap, r->t, true, waits, sizeof waits);
        wmove(w, y, c.x[SORT_WAIT]);
        if (!selected) {
            wattrset(w, st->attr[ui_stack_wait_attr(r->snap, r->t)]);
        }
        ui_text_puts(w, waits, c.w[SORT_WAIT], st);
        wattrset(w, base);
    }
    wmove(w, y, c.x[SORT_FUNCTION]);
    ui_stack_where(w, r->t, c.w[SORT_FUNCTION], selected, m);
    wattrset(w, st->attr[UI_NORMAL]);
}

/* The table of threads in rows TOP.. of W, HEIGHT rows including the title. */
static void draw_table(struct threads_view *v, const struct ui_model *m, WINDOW *w, int height,
                       int width)
{
    struct columns c = columns_for(v, width, m->style);
    draw_title(v, &c, w, 0, width, m->style);
    ui_list_fit(&v->table, v->n_rows, height - 1);
    remember_selected(v);
    for (int i = 0; i + 1 < height && v->table.top + (size_t)i < v->n_rows; i++) {
        size_t k = v->table.top + (size_t)i;
        bool focused = m->focus_tid != 0 && v->rows[k].t->tid == m->focus_tid;
        draw_row(&v->rows[k], &c, k == v->table.cursor, focused, w, i + 1, width, m);
    }
}

static size_t stack_lines(const struct threads_view *v, const struct ui_model *m)
{
    size_t total = 0;
    for (size_t i = 0; i < v->n_rows; i++) {
        total += ui_stack_lines(v->rows[i].t, m) + 1;
    }
    return total;
}

/* The all-stacks text scrolls by lines, but is anchored to a thread (the selected one, at the
 * top) and a line within its stack, so that stacks growing or shrinking in a new frame do not
 * move the reader to another thread. The anchor's line in the whole text: */
static size_t anchor_line(const struct threads_view *v, const struct ui_model *m)
{
    size_t line = 0;
    for (size_t i = 0; i < v->n_rows; i++) {
        size_t n = ui_stack_lines(v->rows[i].t, m) + 1;
        if (v->rows[i].t->tid == v->selected_tid && v->rows[i].t->thread_id == v->selected_ident) {
            return line + (v->stacks_skip < n ? v->stacks_skip : n - 1);
        }
        line += n;
    }
    return 0;
}

/* Anchors the text at its line TOP: the thread shown there becomes the selected one. */
static void set_anchor(struct threads_view *v, const struct ui_model *m, size_t top)
{
    size_t line = 0;
    for (size_t i = 0; i < v->n_rows; i++) {
        size_t n = ui_stack_lines(v->rows[i].t, m) + 1;
        if (top < line + n || i + 1 == v->n_rows) {
            v->selected_tid = v->rows[i].t->tid;
            v->selected_ident = v->rows[i].t->thread_id;
            v->stacks_skip = top > line ? top - line : 0;
            return;
        }
        line += n;
    }
}

/* Every shown thread's stack, one after the other, each followed by a blank line. */
static void draw_all_stacks(struct threads_view *v, const struct ui_model *m, WINDOW *w, int height,
                            int width)
{
    v->stacks.top = anchor_line(v, m);
    ui_list_fit_scroll(&v->stacks, stack_lines(v, m), height);
    set_anchor(v, m, v->stacks.top);
    size_t line = 0;
    int y = 0;
    for (size_t i = 0; i < v->n_rows && y < height; i++) {
        size_t n = ui_stack_lines(v->rows[i].t, m) + 1;
        if (line + n > v->stacks.top) {
            size_t skip = v->stacks.top > line ? v->stacks.top - line : 0;
            y += ui_stack_draw(w, y, height - y, width, v->rows[i].t, skip, false, m);
            y += y < height ? 1 : 0;
        }
        line += n;
    }
}

static void draw_message(WINDOW *w, int y, const char *text, const struct ui_style *st)
{
    wattrset(w, st->attr[UI_DIM]);
    wmove(w, y, 2);
    ui_text_puts(w, text, getmaxx(w) - 2, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct threads_view *v = state;
    int height = getmaxy(w);
    int width = getmaxx(w);
    if (m->snap == NULL) {
        draw_message(w, 1, m->waiting ? m->waiting_why : "waiting for the first sample", m->style);
        return;
    }
    if (!collect(v, m)) {
        draw_message(w, 1, "out of memory", m->style);
        return;
    }
    find_selected(v);
    if (v->all_stacks) {
        draw_all_stacks(v, m, w, height, width);
        return;
    }
    /* The table takes up to half the height, the selected stack the rest: fixed shares, so
     * that nothing moves when the cursor or the stacks do. */
    int table = (int)v->n_rows + 1;
    int most = (height + 1) / 2 > 3 ? (height + 1) / 2 : 3;
    table = table < most ? table : most;
    draw_table(v, m, w, table, width);
    if (v->n_rows == 0) {
        draw_message(w, 1, "no thread matches the filter", m->style);
        return;
    }
    const struct snap_thread *t = v->rows[v->table.cursor].t;
    if (v->in_stack && t->n_frames > 0) {
        v->frame = v->frame < t->n_frames ? v->frame : t->n_frames - 1;
        ui_stack_draw_cursor(w, table, height - table, width, t, v->frame, m);
        return;
    }
    ui_stack_draw(w, table, height - table, width, t, 0, true, m);
}

/* The selected thread, or NULL. */
static const struct snap_thread *selected(struct threads_view *v, const struct ui_model *m)
{
    if (m->snap == NULL || !collect(v, m)) {
        return NULL;
    }
    find_selected(v);
    return v->table.cursor < v->n_rows ? v->rows[v->table.cursor].t : NULL;
}

/* Right: the cursor goes into the selected thread's stack, on its innermost frame. */
static enum ui_redraw enter_stack(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct threads_view *v = state;
    const struct snap_thread *t = selected(v, m);
    if (v->all_stacks || v->in_stack || t == NULL || t->n_frames == 0) {
        return UI_REDRAW_NONE;
    }
    v->in_stack = true;
    v->frame = 0;
    return UI_REDRAW_VIEW;
}

/* Left, Esc: the cursor goes back to the table. */
static enum ui_redraw leave_stack(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct threads_view *v = state;
    if (!v->in_stack) {
        return UI_REDRAW_NONE;
    }
    v->in_stack = false;
    return UI_REDRAW_VIEW;
}

/* Enter: every stack, one after the other, or the table and the selected thread's stack; on a
 * frame of the stack, the source heat view of its function. */
static enum ui_redraw all_stacks(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct threads_view *v = state;
    if (v->in_stack) {
        const struct snap_thread *t = selected(v, m);
        if (t != NULL && v->frame < t->n_frames) {
            const struct snap_frame *f = &t->frames[v->frame];
            bool python = f->kind == SNAP_FRAME_PYTHON;
            ui_show_heat(f->function, python ? f->file : (struct snap_str){0},
                         python ? f->first_line : -1);
        }
        return UI_REDRAW_VIEW;
    }
    if (!collect(v, m)) {
        return UI_REDRAW_NONE;
    }
    find_selected(v);
    v->all_stacks = !v->all_stacks;
    v->stacks_skip = 0;
    return UI_REDRAW_VIEW;
}

static enum ui_redraw move_rows(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct threads_view *v = state;
    if (!collect(v, m)) {
        return UI_REDRAW_NONE;
    }
    find_selected(v);
    if (v->all_stacks) {
        v->stacks.top = anchor_line(v, m);
        if (!ui_list_scroll_key(&v->stacks, key, stack_lines(v, m))) {
            return UI_REDRAW_NONE;
        }
        set_anchor(v, m, v->stacks.top);
        return UI_REDRAW_VIEW;
    }
    if (v->in_stack && v->table.cursor < v->n_rows) {
        /* The frames, as a list of their own. */
        const struct snap_thread *t = v->rows[v->table.cursor].t;
        struct ui_list frames = {.cursor = v->frame, .height = v->table.height};
        if (!ui_list_key(&frames, key, t->n_frames)) {
            return UI_REDRAW_NONE;
        }
        v->frame = frames.cursor;
        return UI_REDRAW_VIEW;
    }
    if (ui_list_key(&v->table, key, v->n_rows)) {
        remember_selected(v);
        return UI_REDRAW_VIEW;
    }
    return UI_REDRAW_NONE;
}

static const struct ui_binding KEYS[] = {
    {"Enter",
     {{UI_KEY_SYM, TERMKEY_SYM_ENTER}},
     all_stacks,
     UI_HELP_VIEWS,
     "all stacks, scrollable / the selected thread's stack;\n"
     "on a frame of the stack: its function's source heat view"},
    {"Right",
     {{UI_KEY_SYM, TERMKEY_SYM_RIGHT}},
     enter_stack,
     UI_HELP_VIEWS,
     "the cursor into the selected thread's stack (frames)"},
    {"Left, Esc",
     {{UI_KEY_SYM, TERMKEY_SYM_LEFT}, {UI_KEY_SYM, TERMKEY_SYM_ESCAPE}},
     leave_stack,
     UI_HELP_VIEWS,
     "the cursor back to the threads"},
    {NULL},
};

static struct ui_sort *sort_of(void *state)
{
    struct threads_view *v = state;
    return &v->order;
}

static void filter_note(const void *state, const struct ui_model *m, char *buf, size_t size)
{
    const struct threads_view *v = state;
    if (m->filter[0] == '\0') {
        snprintf(buf, size, "%s", "");
    } else {
        ui_text_hides(buf, size, v->n_threads - v->n_rows, v->n_threads, "thread");
    }
}

const struct view_ops view_threads_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .keys = KEYS,
    .move = move_rows,
    .sort = sort_of,
    .selected_tid = selected_tid,
    .filter_note = filter_note,
    .enter_does = "stacks",
};
