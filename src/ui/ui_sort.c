/* ui_sort: a table's sort order (which column, which way) and the keys that change it. */
#include "config.h"

#include "ui/ui_sort.h"

/* s: the next column; S: the one before. */
static enum ui_redraw step_column(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    struct ui_sort *s = ctx;
    int step = key->code.codepoint == 'S' ? s->n_columns - 1 : 1;
    s->column = (s->column + step) % s->n_columns;
    return UI_REDRAW_VIEW;
}

static enum ui_redraw invert(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    struct ui_sort *s = ctx;
    s->invert = !s->invert;
    return UI_REDRAW_VIEW;
}

const struct ui_binding ui_sort_bindings[] = {
    {"s / S",
     {{UI_KEY_CHAR, 's'}, {UI_KEY_CHAR, 'S'}},
     step_column,
     UI_HELP_VIEWS,
     "sort by the next / previous column"},
    {"I", {{UI_KEY_CHAR, 'I'}}, invert, UI_HELP_VIEWS, "invert the sort order"},
    {NULL},
};

const char *ui_sort_marker(const struct ui_sort *s, int column, const struct ui_style *st)
{
    return column != s->column ? "" : s->invert ? st->up : st->down;
}
