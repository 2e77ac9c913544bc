/* ui_list: a scrolling list's position (a cursor row, or a plain scroll), its keys, and room for
 * its rows. */
#include "config.h"

#include "ui/ui_list.h"

#include <stdlib.h>

enum move { MOVE_NONE, MOVE_UP, MOVE_DOWN, MOVE_PAGE_UP, MOVE_PAGE_DOWN, MOVE_HOME, MOVE_END };

static enum move move_of(const TermKeyKey *key)
{
    if (key->type == TERMKEY_TYPE_KEYSYM) {
        switch (key->code.sym) {
        case TERMKEY_SYM_UP:
            return MOVE_UP;
        case TERMKEY_SYM_DOWN:
            return MOVE_DOWN;
        case TERMKEY_SYM_PAGEUP:
            return MOVE_PAGE_UP;
        case TERMKEY_SYM_PAGEDOWN:
            return MOVE_PAGE_DOWN;
        case TERMKEY_SYM_HOME:
            return MOVE_HOME;
        case TERMKEY_SYM_END:
            return MOVE_END;
        default:
            return MOVE_NONE;
        }
    }
    if (key->type == TERMKEY_TYPE_UNICODE && key->modifiers == 0) {
        return key->code.codepoint == 'k'   ? MOVE_UP
               : key->code.codepoint == 'j' ? MOVE_DOWN
                                            : MOVE_NONE;
    }
    return MOVE_NONE;
}

/* Where POS goes for move M within [0, LAST], paging by PAGE. */
static size_t moved(size_t pos, enum move m, size_t last, size_t page)
{
    switch (m) {
    case MOVE_UP:
        return pos > 0 ? pos - 1 : 0;
    case MOVE_DOWN:
        return pos < last ? pos + 1 : last;
    case MOVE_PAGE_UP:
        return pos > page ? pos - page : 0;
    case MOVE_PAGE_DOWN:
        return pos + page < last ? pos + page : last;
    case MOVE_HOME:
        return 0;
    case MOVE_END:
        return last;
    case MOVE_NONE:
        break;
    }
    return pos;
}

static size_t page_of(const struct ui_list *l)
{
    return l->height > 1 ? (size_t)l->height - 1 : 1;
}

void ui_list_fit(struct ui_list *l, size_t n, int height)
{
    size_t h = height > 0 ? (size_t)height : 1;
    l->height = height;
    if (n == 0) {
        l->cursor = 0;
        l->top = 0;
        return;
    }
    if (l->cursor >= n) {
        l->cursor = n - 1;
    }
    if (l->cursor < l->top) {
        l->top = l->cursor;
    }
    if (l->cursor >= l->top + h) {
        l->top = l->cursor - h + 1;
    }
    /* No empty rows below the last one while there are rows above the top. */
    if (l->top + h > n) {
        l->top = n > h ? n - h : 0;
    }
}

bool ui_list_key(struct ui_list *l, const TermKeyKey *key, size_t n)
{
    enum move m = move_of(key);
    if (m == MOVE_NONE) {
        return false;
    }
    l->cursor = n > 0 ? moved(l->cursor, m, n - 1, page_of(l)) : 0;
    return true;
}

void ui_list_fit_scroll(struct ui_list *l, size_t n, int height)
{
    size_t h = height > 0 ? (size_t)height : 1;
    l->height = height;
    size_t last = n > h ? n - h : 0;
    if (l->top > last) {
        l->top = last;
    }
}

bool ui_list_scroll_key(struct ui_list *l, const TermKeyKey *key, size_t n)
{
    enum move m = move_of(key);
    if (m == MOVE_NONE) {
        return false;
    }
    size_t h = l->height > 0 ? (size_t)l->height : 1;
    l->top = moved(l->top, m, n > h ? n - h : 0, page_of(l));
    return true;
}

bool ui_list_reserve(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) {
        return true;
    }
    size_t ncap = *cap > 0 ? *cap : 64;
    while (ncap < n) {
        ncap *= 2;
    }
    void *np = realloc(*p, ncap * size);
    if (np == NULL) {
        return false;
    }
    *p = np;
    *cap = ncap;
    return true;
}

static enum ui_redraw move(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    const struct ui_list_mover *mv = ctx;
    return mv->move(mv->state, m, key);
}

const struct ui_binding ui_list_bindings[] = {
    {"arrows, j/k",
     {{UI_KEY_SYM, TERMKEY_SYM_UP},
      {UI_KEY_SYM, TERMKEY_SYM_DOWN},
      {UI_KEY_CHAR, 'j'},
      {UI_KEY_CHAR, 'k'}},
     move,
     UI_HELP_VIEWS,
     "move the cursor (or scroll)"},
    {"PgUp/PgDn",
     {{UI_KEY_SYM, TERMKEY_SYM_PAGEUP}, {UI_KEY_SYM, TERMKEY_SYM_PAGEDOWN}},
     move,
     UI_HELP_VIEWS,
     "a page up or down"},
    {"Home/End",
     {{UI_KEY_SYM, TERMKEY_SYM_HOME}, {UI_KEY_SYM, TERMKEY_SYM_END}},
     move,
     UI_HELP_VIEWS,
     "first or last row"},
    {NULL},
};
