/* ui_tree: a folding tree's state (which nodes are folded, by a 64-bit key) and its connectors. */
#include "config.h"

#include "ui/ui_tree.h"

#include <stdlib.h>
#include <string.h>

#include "ui/view.h"

enum { LEVEL_COLS = 4 };

/* Where KEY is, or would go, in the sorted keys. */
static size_t position(const struct ui_tree *t, uint64_t key)
{
    size_t lo = 0;
    size_t hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->folded[mid] < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

bool ui_tree_is_folded(const struct ui_tree *t, uint64_t key)
{
    size_t i = position(t, key);
    return i < t->n && t->folded[i] == key;
}

bool ui_tree_set_folded(struct ui_tree *t, uint64_t key, bool folded)
{
    size_t i = position(t, key);
    bool present = i < t->n && t->folded[i] == key;
    if (present == folded) {
        return true;
    }
    if (!folded) {
        memmove(&t->folded[i], &t->folded[i + 1], (t->n - i - 1) * sizeof *t->folded);
        t->n--;
        t->changes++;
        return true;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap > 0 ? t->cap * 2 : 16;
        uint64_t *keys = realloc(t->folded, cap * sizeof *keys);
        if (keys == NULL) {
            return false;
        }
        t->folded = keys;
        t->cap = cap;
    }
    memmove(&t->folded[i + 1], &t->folded[i], (t->n - i) * sizeof *t->folded);
    t->folded[i] = key;
    t->n++;
    t->changes++;
    return true;
}

void ui_tree_keep_only(struct ui_tree *t, const uint64_t *keys, size_t n)
{
    size_t kept = 0;
    size_t j = 0;
    for (size_t i = 0; i < t->n; i++) {
        while (j < n && keys[j] < t->folded[i]) {
            j++;
        }
        if (j < n && keys[j] == t->folded[i]) {
            t->folded[kept++] = t->folded[i];
        }
    }
    t->changes += kept != t->n;
    t->n = kept;
}

void ui_tree_free(struct ui_tree *t)
{
    free(t->folded);
    *t = (struct ui_tree){0};
}

int ui_tree_draw_prefix(WINDOW *w, const bool *last, size_t depth, int width, int keep,
                        const struct ui_style *st)
{
    if (depth == 0 || width < LEVEL_COLS) {
        return 0;
    }
    size_t room = width > keep ? (size_t)(width - keep) / LEVEL_COLS : 0;
    room = room > 2 ? room : 2;
    size_t first = 0;
    int cols = 0;
    if (depth > room) {
        /* The outer levels do not fit: one ellipsis, padded to a level, stands for them. */
        waddstr(w, st->ellipsis);
        waddstr(w, "   ");
        cols += LEVEL_COLS;
        first = depth - (room - 1);
    }
    for (size_t k = first; k < depth && cols + LEVEL_COLS <= width; k++) {
        const char *glyph = k + 1 < depth ? (last[k] ? "    " : st->tree_pipe)
                            : last[k]     ? st->tree_last
                                          : st->tree_tee;
        waddstr(w, glyph);
        cols += LEVEL_COLS;
    }
    return cols;
}
