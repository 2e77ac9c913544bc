/* view: what one view of the live view is (struct view_ops), and the model every view draws. */
#ifndef PYTOP_UI_VIEW_H
#define PYTOP_UI_VIEW_H

#include <stdbool.h>
#include <sys/types.h>

#include <ncurses.h>
#include <termkey.h>

#include "core/model/snapshot.h"
#include "ui/ui_keys.h"

struct snapshot;
struct snapshot_source;
struct sampler_heat;
struct sampler_stats;
struct ui_binding;
struct ui_sort;

/* The attributes the views draw with; plain attributes only when colours are off. */
enum ui_attr {
    UI_NORMAL,
    UI_TITLE,    /* column titles */
    UI_SELECTED, /* the cursor row */
    UI_GIL,      /* holds the GIL */
    UI_CPU,      /* on a CPU */
    UI_WAIT,     /* waiting for the GIL */
    UI_GC,       /* in the garbage collector */
    UI_DIM,      /* source lines, idle threads, hints */
    UI_ALERT,    /* FROZEN, EXITED, errors */
    UI_MATCH,    /* what the filter matched */
    UI_KEY,      /* key names in the hint line */
    UI_HEADER,   /* the header's labels */
    UI_ATTR_COUNT,
};

/* How to draw: attributes, and UTF-8 or ASCII glyphs. */
struct ui_style {
    bool utf8;
    attr_t attr[UI_ATTR_COUNT];
    const char *hline;    /* "─" or "-" */
    const char *ellipsis; /* "…" or "~" */
    const char *up;       /* sort markers */
    const char *down;
    /* Tree connectors, each four columns: "├── " "└── " "│   " (ASCII "|-- " "`-- " "|   "). */
    const char *tree_tee;
    const char *tree_last;
    const char *tree_pipe;
    const char *folded;   /* a folded node's marker, "▸" or "+" */
    const char *unfolded; /* "▾" or "-" */
};

/* Everything a view draws from; views never change it. */
struct ui_model {
    const struct snapshot *snap;          /* current or frozen; NULL before the first sample */
    const struct snapshot *tasks;         /* the same moment's asyncio task graph; may be NULL */
    unsigned long frame_no;               /* changes whenever SNAP or TASKS does */
    const struct sampler_stats *stats;    /* over the window; NULL before sampling starts */
    /* The Functions view counts the thread chosen with t (FOCUS_TID), else the threads the
     * filter names (N_NAMED of them, found in their names), else all threads. FOCUS holds the
     * functions of the one or the named threads alone; NULL while they are being counted. */
    const struct sampler_stats *focus;
    pid_t focus_tid;        /* 0: none chosen */
    size_t n_named;         /* threads of SNAP whose name the filter is found in; 0 none */
    size_t n_named_counted; /* of those, the ones FOCUS counts (at most LIVE_FOCUS_MAX) */
    const char *filter;     /* "" when none */
    bool frozen;            /* the picture holds still: what is asked now comes when it moves */
    const struct snapshot_source *source; /* the target's source lines; may be NULL */
    const struct ui_style *style;
    /* The source heat view's counts for the function it shows; NULL until the picture has
     * them (or when it is closed). */
    const struct sampler_heat *heat;
    bool waiting;            /* no interpreter to show yet */
    const char *waiting_why; /* why, when WAITING */
};

/* One view: its state is created once and lives until the UI ends. */
struct view_ops {
    void *(*create)(void);
    void (*destroy)(void *state);
    const char *(*title)(const void *state); /* tab label */
    void (*draw)(void *state, const struct ui_model *m, WINDOW *win);
    /* The view's answer to a move key (ui_list_bindings: arrows, j/k, PgUp/PgDn, Home/End):
     * moves its cursor or scrolls. Returns what must be drawn again. */
    enum ui_redraw (*move)(void *state, const struct ui_model *m, const TermKeyKey *key);
    /* The view's own keys (ui_keys.h), ended by a binding without KEYS_TEXT; their actions
     * take STATE. NULL: none. The loop offers a key to them after the global keys, the sort
     * keys and the move keys. */
    const struct ui_binding *keys;
    /* A view that sorts: its order, which the shared sort keys (ui_sort_bindings) change.
     * NULL: the view does not sort. */
    struct ui_sort *(*sort)(void *state);
    /* The thread under the cursor (kernel tid, 0 none), for keys that act on a thread (t).
     * NULL in views without a thread cursor. */
    pid_t (*selected_tid)(const void *state);
    /* What the filter did to the view at its last draw, in a few words ("hides 4 of 7
     * threads"), into BUF of SIZE bytes; "" when M has no filter. NULL: the view is not
     * filtered. */
    void (*filter_note)(const void *state, const struct ui_model *m, char *buf, size_t size);
    /* What Enter does here, in a word for the key hints ("fold"); NULL: nothing. */
    const char *enter_does;
};

/* The source heat view: not one of the views Tab goes through, but shown over them from
 * Enter on a function or a frame (ui_show_heat()) until Esc. */
extern const struct view_ops view_source_ops;
/* Makes the source heat view (its STATE) show the function (FUNCTION, FILE, FIRST_LINE) from
 * the start, the cursor following the hottest line. */
void view_source_open(void *state, struct snap_str function, struct snap_str file, int first_line);

/* Opens the source heat view on the function (FUNCTION, FILE, FIRST_LINE): its lines are
 * counted from now on (ui.c). */
void ui_show_heat(struct snap_str function, struct snap_str file, int first_line);
/* Closes it (counting stops): the view it was opened from shows again. */
void ui_close_heat(void);

extern const struct view_ops view_threads_ops;
extern const struct view_ops view_functions_ops;
extern const struct view_ops view_gc_ops;
extern const struct view_ops view_tasks_ops;

#endif
