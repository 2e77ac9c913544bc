/* ui_keys: keys bound to named actions in tables, what an action changed, and the help screen
 * made from the tables. */
#ifndef PYTOP_UI_UI_KEYS_H
#define PYTOP_UI_UI_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include <termkey.h>

struct ui_model;

/* What an action changed, so what the loop draws again. Each takes in the ones before it. */
enum ui_redraw {
    UI_REDRAW_NONE,   /* nothing on screen changed (a key that did nothing here) */
    UI_REDRAW_LINES,  /* the header and the two bottom lines: FROZEN, a message, the refresh,
                       * the filter being typed */
    UI_REDRAW_VIEW,   /* the current view too (and the lines around it) */
    UI_REDRAW_SCREEN, /* the whole screen, every window sent afresh: another layout (the help
                       * opened or closed, a resize), Ctrl-L */
};

enum ui_key_kind {
    UI_KEY_END,  /* ends a binding's keys */
    UI_KEY_CHAR, /* a character typed without Ctrl or Alt (Shift is in the character) */
    UI_KEY_CTRL, /* Ctrl and a letter (the lower-case letter), nothing else */
    UI_KEY_SYM,  /* a named key (a TermKeySym: Tab, Enter, arrows), with any modifiers */
};

struct ui_key {
    enum ui_key_kind kind;
    long code; /* the character, or the TermKeySym */
};

enum {
    UI_BINDING_KEYS = 8, /* keys of one binding, at most, with the UI_KEY_END */
    UI_HELP_TEXT = 160,  /* bytes of one help line's text */
};

/* Where a binding is listed on the help screen. */
enum ui_help_part {
    UI_HELP_TOP,     /* before the parts with titles: quit, help */
    UI_HELP_VIEWS,   /* "Views": switching, moving, sorting */
    UI_HELP_PICTURE, /* "The picture": freezing, filtering, dumping, the statistics */
    UI_HELP_REPLAY,  /* "A replay": pytop --replay FILE's own keys */
    UI_HELP_PARTS,
};

/* One line of a key table: the keys, the action they are bound to, and its help. A table is an
 * array of them ended by one whose KEYS_TEXT is NULL. */
struct ui_binding {
    const char *keys_text; /* the keys as the help and the man page's Keys list name them:
                            * "p, Space, Z" (names apart by ", " or "/") */
    struct ui_key keys[UI_BINDING_KEYS];
    /* The named action: does what KEY asks to CTX (NULL for the global table, the view's state
     * in a view's table, the view's struct ui_sort in the sort table), on the picture M.
     * Returns what must be drawn again; UI_REDRAW_NONE when it did nothing. */
    enum ui_redraw (*action)(void *ctx, const struct ui_model *m, const TermKeyKey *key);
    enum ui_help_part part;
    const char *help; /* what it does, for the help screen; further lines after a '\n' */
};

/* True when KEY is K. */
bool ui_keys_is(const struct ui_key *k, const TermKeyKey *key);

/* The binding of TABLE that KEY is one of, or NULL. */
const struct ui_binding *ui_keys_find(const struct ui_binding *table, const TermKeyKey *key);

/* A key table and whom it belongs to, as the help lists it. */
struct ui_keys_table {
    const struct ui_binding *bindings;
    const char *view; /* the view's title when the keys are one view's own; NULL: all views' */
};

/* One line of the help screen. */
struct ui_help_line {
    bool title;              /* a part's title, in TEXT */
    const char *keys;        /* the keys; "" on a further line of the same keys */
    char text[UI_HELP_TEXT]; /* what they do */
};

/* Makes the help screen's lines from TABLES[0..N), part by part, in table order, into
 * OUT[0..CAP); returns how many there are (at most CAP). Keys that several views bind alike
 * are listed once; keys bound differently, or in some views only, say which view does what
 * ("Threads: ..."). */
size_t ui_keys_help(const struct ui_keys_table *tables, size_t n, struct ui_help_line *out,
                    size_t cap);

#endif
