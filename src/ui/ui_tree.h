/* ui_tree: a folding tree's state (which nodes are folded, by a 64-bit key) and its connectors. */
#ifndef PYTOP_UI_UI_TREE_H
#define PYTOP_UI_UI_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ncurses.h>

struct ui_style;

/* The keys of the folded nodes; a zeroed struct has none. Keys outlive the pictures, so a node
 * folded once stays folded in every later picture that has it. */
struct ui_tree {
    uint64_t *folded; /* sorted */
    size_t n;
    size_t cap;
    unsigned long changes; /* counts the changes, so that a view knows when to lay out again */
};

bool ui_tree_is_folded(const struct ui_tree *t, uint64_t key);
/* Folds or unfolds KEY. False (and nothing changed) on out of memory. */
bool ui_tree_set_folded(struct ui_tree *t, uint64_t key, bool folded);
/* Forgets the folded keys that are not among KEYS[0..N) (sorted): the nodes that are gone. */
void ui_tree_keep_only(struct ui_tree *t, const uint64_t *keys, size_t n);
void ui_tree_free(struct ui_tree *t);

/* Draws the connectors of a row DEPTH levels down (1: a root) at W's cursor, in at most WIDTH
 * columns: LAST[k] says whether the row's ancestor at level k + 1 (LAST[DEPTH - 1]: the row
 * itself) is the last of its siblings. When the connectors would leave less than KEEP columns
 * for the row's text, the outer levels are drawn as one ellipsis. Returns the columns drawn. */
int ui_tree_draw_prefix(WINDOW *w, const bool *last, size_t depth, int width, int keep,
                        const struct ui_style *st);

#endif
