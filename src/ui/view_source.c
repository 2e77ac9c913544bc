/* view_source: the source heat view: one function's source, each line with its own and total
 * share of the thread-samples, the hottest selected; with instructions, each line's under it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sampler/sampler.h"
#include "core/write/heat_text.h"
#include "core/write/snapshot_write.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum {
    KEY_BYTES = 1024, /* of the function's name and file kept for the title */
    FOLDED_MAX = 4096,
    BAR = 8, /* columns of the heat bar */
};

/* A row: line LINE, or (INSTR) one of its instructions. */
struct row {
    int line; /* -1: the frames whose line was unknown */
    const struct sampler_heat_instr *instr;
};

struct source_view {
    struct ui_list list;
    bool moved; /* the user moved the cursor: it stays, else it follows the hottest line */
    char function[KEY_BYTES];
    char file[KEY_BYTES];
    int first_line;
    struct row *rows;
    size_t n_rows;
    size_t cap_rows;
    int folded[FOLDED_MAX]; /* lines whose instructions are folded away */
    size_t n_folded;
    size_t n_lines;   /* source lines before the filter */
    size_t hidden;    /* of them, the ones the filter hides */
    int hot;          /* the hottest line; 0 none */
    struct heat_range range; /* the lines shown, as the last collect() found them */
};

static void *create(void)
{
    return calloc(1, sizeof(struct source_view));
}

static void destroy(void *state)
{
    struct source_view *v = state;
    if (v != NULL) {
        free(v->rows);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "Source";
}

void view_source_open(void *state, struct snap_str function, struct snap_str file,
                      int first_line)
{
    struct source_view *v = state;
    snprintf(v->function, sizeof v->function, "%.*s", (int)function.len,
             function.ptr != NULL ? function.ptr : "?");
    snprintf(v->file, sizeof v->file, "%.*s", (int)file.len, file.ptr != NULL ? file.ptr : "?");
    v->first_line = first_line;
    v->moved = false;
    v->list = (struct ui_list){0};
    v->n_folded = 0;
    v->n_rows = 0;
}

static bool is_folded(const struct source_view *v, int line)
{
    for (size_t i = 0; i < v->n_folded; i++) {
        if (v->folded[i] == line) {
            return true;
        }
    }
    return false;
}

static const char *text_of(const struct ui_model *m, const struct sampler_heat *h, int line,
                           size_t *len)
{
    const struct snapshot_source *src = m->source;
    if (src == NULL || src->line == NULL || h->file.ptr == NULL || line <= 0) {
        return NULL;
    }
    return src->line(src->ctx, h->file.ptr, h->file.len, line, len);
}

static bool push(struct source_view *v, int line, const struct sampler_heat_instr *in)
{
    if (!ui_list_reserve((void **)&v->rows, &v->cap_rows, v->n_rows + 1, sizeof *v->rows)) {
        return false;
    }
    v->rows[v->n_rows++] = (struct row){line, in};
    return true;
}

/* Line LINE's row, then its instructions' unless folded. */
static bool push_line(struct source_view *v, const struct sampler_heat *h, int line)
{
    if (!push(v, line, NULL)) {
        return false;
    }
    if (!h->instructions || is_folded(v, line) || heat_find_line(h, line) == NULL) {
        return true;
    }
    for (size_t i = 0; i < h->n_instrs; i++) {
        if (h->instrs[i].line == line && !push(v, line, &h->instrs[i])) {
            return false;
        }
    }
    return true;
}

/* The rows of M's counts, as the filter (on the lines' text) leaves them. */
static bool collect(struct source_view *v, const struct ui_model *m)
{
    const struct sampler_heat *h = m->heat;
    v->n_rows = 0;
    v->n_lines = 0;
    v->hidden = 0;
    v->hot = 0;
    if (h == NULL) {
        return true;
    }
    const struct sampler_heat_line *best = NULL;
    for (size_t i = 0; i < h->n_lines; i++) {
        const struct sampler_heat_line *c = &h->lines[i];
        if (c->line > 0 && (best == NULL || c->own > best->own ||
                            (c->own == best->own && c->total > best->total))) {
            best = c;
        }
    }
    v->hot = best != NULL ? best->line : 0;
    if (heat_find_line(h, -1) != NULL && m->filter[0] == '\0' && !push_line(v, h, -1)) {
        return false;
    }
    struct heat_range r = heat_source_range(h, m->source);
    v->range = r;
    for (int line = r.first; r.first > 0 && line <= r.last; line++) {
        if (!r.readable && heat_find_line(h, line) == NULL) {
            continue;
        }
        v->n_lines++;
        size_t len = 0;
        const char *t = text_of(m, h, line, &len);
        if (m->filter[0] != '\0' && (t == NULL || !ui_text_match(m->filter, (struct snap_str){t, len}))) {
            v->hidden++;
            continue;
        }
        if (!push_line(v, h, line)) {
            return false;
        }
    }
    if (!v->moved) {
        for (size_t i = 0; i < v->n_rows; i++) {
            if (v->rows[i].line == v->hot && v->rows[i].instr == NULL) {
                v->list.cursor = i;
                break;
            }
        }
    }
    return true;
}

static void draw_summary(struct source_view *v, const struct ui_model *m, WINDOW *w, int width)
{
    const struct ui_style *st = m->style;
    const struct sampler_heat *h = m->heat;
    wmove(w, 0, 0);
    wattrset(w, st->attr[UI_TITLE]);
    ui_text_puts(w, v->function, width / 2, st);
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, "  ", width - getcurx(w), st);
    ui_text_put_tail(w, ui_text_str(v->file), width / 3, st);
    ui_text_printf(w, width - getcurx(w), st, ":%d", v->first_line);
    wattrset(w, st->attr[UI_NORMAL]);
    if (h == NULL) {
        return;
    }
    ui_text_printf(w, width - getcurx(w), st,
                   "  own %.1f%% total %.1f%% of %llu thread-samples%s, %.1f s", heat_pct(h, h->own),
                   heat_pct(h, h->total), (unsigned long long)h->thread_samples,
                   sampler_mode_words(h->mode), h->span_s);
}

static void draw_titles(WINDOW *w, int y, int width, const struct ui_model *m, bool readable)
{
    const struct ui_style *st = m->style;
    wattrset(w, st->attr[UI_TITLE]);
    mvwhline(w, y, 0, ' ', width);
    wmove(w, y, 0);
    ui_text_printf(w, width, st, "%6s %6s %7s %-*s %s", "LINE", "OWN%", "TOTAL%", BAR, "",
                   readable ? "SOURCE (Esc: back)" : "(the source could not be read; Esc: back)");
    wattrset(w, st->attr[UI_NORMAL]);
}

/* How hot a counted line looks: most of the hottest line's own samples, some, or few. */
static enum ui_attr heat_attr(const struct sampler_heat_line *c, uint64_t top)
{
    if (c == NULL) {
        return UI_DIM;
    }
    if (top > 0 && c->own * 2 >= top) {
        return UI_ALERT;
    }
    if (top > 0 && c->own * 10 >= top) {
        return UI_WAIT;
    }
    return UI_NORMAL;
}

static void draw_bar(WINDOW *w, uint64_t part, uint64_t top, const struct ui_style *st)
{
    int n = top > 0 ? (int)((part * BAR + top - 1) / top) : 0;
    for (int i = 0; i < BAR; i++) {
        waddstr(w, i < n ? (st->utf8 ? "\u2588" : "#") : " ");
    }
}

static void draw_row(const struct row *r, bool selected, uint64_t top, WINDOW *w, int y,
                     int width, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct sampler_heat *h = m->heat;
    const struct sampler_heat_line *c = heat_find_line(h, r->line);
    enum ui_attr a = selected ? UI_SELECTED : r->instr != NULL ? UI_KEY : heat_attr(c, top);
    wattrset(w, st->attr[a]);
    mvwhline(w, y, 0, ' ', width);
    wmove(w, y, 0);
    if (r->instr != NULL) {
        const struct sampler_heat_instr *in = r->instr;
        ui_text_printf(w, width, st, "%6s %6.1f %7.1f %*s @%-5u %s", "", heat_pct(h, in->own),
                       heat_pct(h, in->total), BAR, "", (unsigned)in->offset,
                       in->name != NULL ? in->name : "?");
        for (size_t k = 0; k < in->n_forms; k++) {
            ui_text_printf(w, width - getcurx(w), st, "%s%s", k == 0 ? " (" : ", ", in->forms[k]);
        }
        if (in->n_forms > 0) {
            ui_text_puts(w, ")", width - getcurx(w), st);
        }
        if (selected) {
            mvwaddstr(w, y, 0, ">");
        }
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    if (r->line < 0) {
        ui_text_printf(w, width, st, "%6s ", "?");
    } else {
        ui_text_printf(w, width, st, "%6d ", r->line);
    }
    if (c != NULL) {
        ui_text_printf(w, width - getcurx(w), st, "%6.1f %7.1f ", heat_pct(h, c->own),
                       heat_pct(h, c->total));
        draw_bar(w, c->own, top, st);
    } else {
        ui_text_printf(w, width - getcurx(w), st, "%6s %7s %*s", "", "", BAR, "");
    }
    waddstr(w, " ");
    size_t len = 0;
    const char *t = r->line > 0 ? text_of(m, h, r->line, &len) : NULL;
    if (t != NULL) {
        ui_text_put(w, (struct snap_str){t, len}, width - getcurx(w), st);
    } else if (r->line < 0) {
        ui_text_puts(w, "(frames whose line was unknown)", width - getcurx(w), st);
    }
    if (selected) {
        mvwaddstr(w, y, 0, ">"); /* the cursor, seen without colours too */
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct source_view *v = state;
    int height = getmaxy(w);
    int width = getmaxx(w);
    const struct ui_style *st = m->style;
    draw_summary(v, m, w, width);
    if (m->heat == NULL) {
        wmove(w, 2, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w,
                     m->frozen ? "frozen: the counts come once the picture moves again (p)"
                               : "counting this function's lines from now on...",
                     width - 2, st);
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    if (!collect(v, m)) {
        return;
    }
    draw_titles(w, 1, width, m, v->range.readable);
    uint64_t top = 0;
    for (size_t i = 0; i < m->heat->n_lines; i++) {
        top = m->heat->lines[i].own > top ? m->heat->lines[i].own : top;
    }
    ui_list_fit(&v->list, v->n_rows, height - 2);
    if (v->n_rows == 0) {
        wmove(w, 2, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, v->hidden > 0 ? "no line matches the filter" : "no samples of it yet",
                     width - 2, st);
        wattrset(w, st->attr[UI_NORMAL]);
    }
    for (int i = 0; i + 2 < height && v->list.top + (size_t)i < v->n_rows; i++) {
        size_t k = v->list.top + (size_t)i;
        draw_row(&v->rows[k], k == v->list.cursor, top, w, i + 2, width, m);
    }
}

static enum ui_redraw move_rows(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct source_view *v = state;
    if (!collect(v, m)) {
        return UI_REDRAW_NONE;
    }
    if (!ui_list_key(&v->list, key, v->n_rows)) {
        return UI_REDRAW_NONE;
    }
    v->moved = true;
    return UI_REDRAW_VIEW;
}

/* Enter: the cursor line's instructions folded away, or shown again. */
static enum ui_redraw fold(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct source_view *v = state;
    if (!collect(v, m) || v->n_rows == 0 || m->heat == NULL || !m->heat->instructions) {
        return UI_REDRAW_NONE;
    }
    int line = v->rows[v->list.cursor < v->n_rows ? v->list.cursor : 0].line;
    for (size_t i = 0; i < v->n_folded; i++) {
        if (v->folded[i] == line) {
            v->folded[i] = v->folded[--v->n_folded];
            return UI_REDRAW_VIEW;
        }
    }
    if (v->n_folded < FOLDED_MAX) {
        v->folded[v->n_folded++] = line;
    }
    /* The cursor goes to the line itself, which stays. */
    if (!collect(v, m)) {
        return UI_REDRAW_VIEW;
    }
    for (size_t i = 0; i < v->n_rows; i++) {
        if (v->rows[i].line == line && v->rows[i].instr == NULL) {
            v->list.cursor = i;
            v->moved = true;
            break;
        }
    }
    return UI_REDRAW_VIEW;
}

static enum ui_redraw close_view(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    ui_close_heat();
    return UI_REDRAW_VIEW;
}

static const struct ui_binding KEYS[] = {
    {"Esc, Left",
     {{UI_KEY_SYM, TERMKEY_SYM_ESCAPE}, {UI_KEY_SYM, TERMKEY_SYM_LEFT}},
     close_view,
     UI_HELP_VIEWS,
     "back to the view it was opened from"},
    {"Enter",
     {{UI_KEY_SYM, TERMKEY_SYM_ENTER}},
     fold,
     UI_HELP_VIEWS,
     "fold / unfold the line's instructions (with o or --opcodes)"},
    {NULL},
};

static void filter_note(const void *state, const struct ui_model *m, char *buf, size_t size)
{
    const struct source_view *v = state;
    if (m->filter[0] == '\0') {
        snprintf(buf, size, "%s", "");
    } else {
        ui_text_hides(buf, size, v->hidden, v->n_lines, "line");
    }
}

const struct view_ops view_source_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .keys = KEYS,
    .move = move_rows,
    .filter_note = filter_note,
    .enter_does = "fold",
};
