/* view_tasks: the asyncio awaited-by tree of each interpreter, as `asyncio pstree` draws it,
 * foldable, and the selected task's coroutine stack below it. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/limits.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"
#include "core/util/strbuf.h"
#include "core/model/tasktree.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_stack.h"
#include "ui/ui_task.h"
#include "ui/ui_text.h"
#include "ui/ui_tree.h"
#include "ui/view.h"

enum {
    FILTER_BYTES = 256,
    MAX_FOLDED_COUNT = 100000,
};

static const size_t NONE = SIZE_MAX;

/* Marks of a node while filtering: does it, or anything below it, match? */
enum mark { MARK_UNSEEN = 0, MARK_OPEN, MARK_HIT, MARK_MISS };

/* One row of the view: a node of an interpreter's tree, or a line of text. */
struct row {
    size_t interp;
    size_t node;   /* in TREES[INTERP]; NONE: a line of text */
    size_t parent; /* the row it hangs under; NONE: a root or text */
    size_t owner;  /* the task row it belongs to (itself for a task); NONE: text */
    uint64_t task; /* the id of the task it belongs to (its own, for a task); 0 for text */
    size_t depth;
    size_t folded_tasks; /* a folded task: how many tasks its fold hides */
    size_t at;           /* text: where it is in TEXT, and how long */
    size_t len;
    bool last;    /* the last of its siblings */
    bool hit;     /* the filter matched it */
    bool heading; /* an interpreter's title */
    bool folded;  /* a task whose rows below are not shown */
    bool can_fold;
};

/* A place on the depth-first walk of a tree. */
struct walk {
    size_t node;
    size_t parent; /* the row of the node it hangs under */
    size_t depth;
    bool last;
    bool open;   /* at or below a task the filter matched: folding alone decides */
    size_t next; /* mark_hits(): the kids looked at so far */
};

struct tasks_view {
    struct ui_list list;
    struct ui_tree fold;
    /* The trees of picture FRAME_NO, one per interpreter (NULL: no graph, or no memory). */
    bool built;
    unsigned long frame_no;
    struct tasktree **trees;
    long *cycles;
    size_t n_trees;
    /* The rows, as laid out for that picture, FILTER and the folding at FOLD_CHANGES. */
    bool laid_out;
    char filter[FILTER_BYTES];
    unsigned long fold_changes;
    struct row *rows;
    size_t n_rows;
    size_t cap_rows;
    struct strbuf text;
    size_t n_tasks; /* in the graph, and of them the ones the filter keeps (shown or folded) */
    size_t n_kept;
    /* Scratch space. */
    uint8_t *marks;
    struct walk *stack;
    size_t cap_stack;
    size_t *below; /* tasks_below()'s own: it runs while STACK holds the layout's walk */
    size_t cap_below;
    bool *last;
    size_t cap_last;
    /* The row under the cursor, found again in the next layout by what it shows: its task, and
     * a frame's label or a line's text (empty for a task). */
    uint64_t selected_task;
    struct strbuf selected_text;
    bool nomem;
};

static void *create(void)
{
    return calloc(1, sizeof(struct tasks_view));
}

static void drop_trees(struct tasks_view *v)
{
    for (size_t i = 0; i < v->n_trees; i++) {
        tasktree_free(v->trees[i]);
    }
    free(v->trees);
    free(v->cycles);
    v->trees = NULL;
    v->cycles = NULL;
    v->n_trees = 0;
    v->built = false;
}

static void destroy(void *state)
{
    struct tasks_view *v = state;
    if (v != NULL) {
        drop_trees(v);
        ui_tree_free(&v->fold);
        strbuf_free(&v->text);
        strbuf_free(&v->selected_text);
        free(v->rows);
        free(v->marks);
        free(v->stack);
        free(v->below);
        free(v->last);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "Tasks";
}

static int compare_ids(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa;
    uint64_t b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Forgets the folding of the tasks that have ended, so that a new task which happens to get
 * the address of an old one is not born folded. */
static void forget_ended(struct tasks_view *v, const struct snapshot *tasks)
{
    size_t n = 0;
    for (size_t i = 0; i < tasks->n_interps; i++) {
        n += tasks->interps[i].tasks != NULL ? tasks->interps[i].n_tasks : 0;
    }
    uint64_t *ids = malloc((n > 0 ? n : 1) * sizeof *ids);
    if (ids == NULL) {
        return;
    }
    n = 0;
    for (size_t i = 0; i < tasks->n_interps; i++) {
        const struct snap_interp *in = &tasks->interps[i];
        for (size_t j = 0; in->tasks != NULL && j < in->n_tasks; j++) {
            ids[n++] = in->tasks[j].id;
        }
    }
    qsort(ids, n, sizeof *ids, compare_ids);
    ui_tree_keep_only(&v->fold, ids, n);
    free(ids);
}

/* The trees of M's task graph, built once a picture. */
static void build(struct tasks_view *v, const struct ui_model *m)
{
    drop_trees(v);
    v->built = true;
    v->frame_no = m->frame_no;
    v->laid_out = false;
    size_t n = m->tasks->n_interps;
    v->trees = calloc(n > 0 ? n : 1, sizeof *v->trees);
    v->cycles = calloc(n > 0 ? n : 1, sizeof *v->cycles);
    if (v->trees == NULL || v->cycles == NULL) {
        v->nomem = true;
        return;
    }
    v->n_trees = n;
    for (size_t i = 0; i < n; i++) {
        const struct snap_interp *in = &m->tasks->interps[i];
        if (!in->tasks_present || in->n_tasks == 0) {
            continue;
        }
        v->trees[i] = tasktree_new(in->tasks, in->n_tasks, NULL);
        struct strbuf none = {0};
        v->cycles[i] = v->trees[i] != NULL ? tasktree_write_cycles(&none, v->trees[i], NULL) : 0;
        strbuf_free(&none);
    }
    if (v->fold.n > 0) {
        forget_ended(v, m->tasks);
    }
}

static struct row *add_row(struct tasks_view *v)
{
    if (!ui_list_reserve((void **)&v->rows, &v->cap_rows, v->n_rows + 1, sizeof *v->rows)) {
        v->nomem = true;
        return NULL;
    }
    struct row *r = &v->rows[v->n_rows++];
    *r = (struct row){.node = NONE, .parent = NONE, .owner = NONE};
    return r;
}

/* A line of text: what TEXT gained since START. */
static void add_text(struct tasks_view *v, size_t interp, size_t start, bool heading)
{
    struct row *r = add_row(v);
    if (r != NULL) {
        r->interp = interp;
        r->at = start;
        r->len = v->text.len - start;
        r->heading = heading;
    }
}

static void add_line(struct tasks_view *v, size_t interp, const char *line)
{
    size_t start = v->text.len;
    strbuf_puts(&v->text, line);
    add_text(v, interp, start, false);
}

static bool node_matches(const struct tasktree_node *n, const char *filter)
{
    if (n->is_task) {
        struct snap_str coro;
        /* A task with no name is shown, and found, by its coroutine's function. */
        return n->task != NULL &&
               (ui_text_match(filter, n->task->name) ||
                (snapshot_task_coro_label(n->task, &coro) && ui_text_match(filter, coro)));
    }
    return n->frame != NULL && ui_stack_frame_matches(n->frame, filter);
}

/* Marks each node reachable from the roots of T: MARK_HIT when it or a node below it matches
 * FILTER, else MARK_MISS. Depth first, without recursion: a hostile graph may be deep. */
static bool mark_hits(struct tasks_view *v, const struct tasktree *t, const char *filter)
{
    size_t n = tasktree_size(t);
    free(v->marks);
    v->marks = calloc(n > 0 ? n : 1, 1);
    if (v->marks == NULL) {
        return false;
    }
    for (size_t root = 0; root < n; root++) {
        struct tasktree_node rn;
        tasktree_node(t, root, &rn);
        if (!rn.root) {
            continue;
        }
        size_t depth = 0;
        if (!ui_list_reserve((void **)&v->stack, &v->cap_stack, 1, sizeof *v->stack)) {
            return false;
        }
        v->stack[depth++] = (struct walk){.node = root};
        v->marks[root] = MARK_OPEN;
        while (depth > 0) {
            struct walk *top = &v->stack[depth - 1];
            struct tasktree_node nd;
            tasktree_node(t, top->node, &nd);
            if (top->next < nd.n_kids) {
                size_t kid = nd.kids[top->next++];
                if (v->marks[kid] == MARK_UNSEEN) {
                    if (!ui_list_reserve((void **)&v->stack, &v->cap_stack, depth + 1,
                                         sizeof *v->stack)) {
                        return false;
                    }
                    v->marks[kid] = MARK_OPEN;
                    v->stack[depth++] = (struct walk){.node = kid};
                }
                continue;
            }
            bool hit = node_matches(&nd, filter);
            for (size_t k = 0; !hit && k < nd.n_kids; k++) {
                hit = v->marks[nd.kids[k]] == MARK_HIT;
            }
            v->marks[top->node] = hit ? MARK_HIT : MARK_MISS;
            depth--;
        }
    }
    return true;
}

/* How many tasks are below task node I of T (each time it is drawn), up to a bound. Called
 * in the middle of lay_out_tree()'s walk, so it keeps its own stack (BELOW), never STACK. */
static size_t tasks_below(struct tasks_view *v, const struct tasktree *t, size_t i)
{
    size_t count = 0;
    size_t depth = 0;
    size_t visits = 0;
    if (!ui_list_reserve((void **)&v->below, &v->cap_below, 1, sizeof *v->below)) {
        return 0;
    }
    v->below[depth++] = i;
    while (depth > 0 && visits++ < MAX_FOLDED_COUNT) {
        struct tasktree_node nd;
        tasktree_node(t, v->below[--depth], &nd);
        if (!ui_list_reserve((void **)&v->below, &v->cap_below, depth + nd.n_kids,
                             sizeof *v->below)) {
            break;
        }
        for (size_t k = 0; k < nd.n_kids; k++) {
            struct tasktree_node kid;
            tasktree_node(t, nd.kids[k], &kid);
            count += kid.is_task ? 1 : 0;
            v->below[depth++] = nd.kids[k];
        }
    }
    return count;
}

/* Whether the kid K of a node walked at W is shown, and whether the filter opens it. */
static bool kid_shown(const struct tasks_view *v, const struct tasktree *t, const struct walk *w,
                      size_t k, const char *filter, bool *open)
{
    *open = w->open;
    if (filter[0] == '\0' || w->open) {
        return true;
    }
    if (v->marks[k] != MARK_HIT) {
        return false;
    }
    struct tasktree_node kid;
    tasktree_node(t, k, &kid);
    *open = kid.is_task && node_matches(&kid, filter);
    return true;
}

/* Pushes the kids of the node walked at W (row ROW) that are shown, the first on top. Returns
 * how many, or -1 out of memory. */
static long push_kids(struct tasks_view *v, const struct tasktree *t, const struct walk *w,
                      size_t row, size_t *depth, const char *filter)
{
    struct tasktree_node nd;
    tasktree_node(t, w->node, &nd);
    struct walk at = *w;
    if (!ui_list_reserve((void **)&v->stack, &v->cap_stack, *depth + nd.n_kids, sizeof *v->stack)) {
        return -1;
    }
    long pushed = 0;
    for (size_t k = nd.n_kids; k-- > 0;) {
        bool open;
        if (kid_shown(v, t, &at, nd.kids[k], filter, &open)) {
            v->stack[(*depth)++] = (struct walk){.node = nd.kids[k],
                                                 .parent = row,
                                                 .depth = at.depth + 1,
                                                 .last = pushed == 0,
                                                 .open = open};
            pushed++;
        }
    }
    return pushed;
}

/* Adds the row of the node walked at W. */
static bool add_node_row(struct tasks_view *v, const struct tasktree *t, size_t interp,
                         const struct walk *w, const char *filter)
{
    struct tasktree_node nd;
    tasktree_node(t, w->node, &nd);
    struct row *r = add_row(v);
    if (r == NULL) {
        return false;
    }
    size_t self = v->n_rows - 1;
    r->interp = interp;
    r->node = w->node;
    r->parent = w->parent;
    r->depth = w->depth;
    r->last = w->last;
    r->hit = filter[0] != '\0' && node_matches(&nd, filter);
    r->owner = nd.is_task ? self : w->parent != NONE ? v->rows[w->parent].owner : NONE;
    r->can_fold = nd.is_task && nd.n_kids > 0;
    r->task = nd.is_task ? nd.id : r->owner != NONE ? v->rows[r->owner].task : 0;
    return true;
}

/* The rows of one interpreter's tree, depth first from its roots. */
static void lay_out_tree(struct tasks_view *v, size_t interp, const struct tasktree *t,
                         const char *filter)
{
    if (filter[0] != '\0' && !mark_hits(v, t, filter)) {
        v->nomem = true;
        return;
    }
    size_t n = tasktree_size(t);
    size_t depth = 0;
    for (size_t i = n; i-- > 0;) {
        struct tasktree_node nd;
        tasktree_node(t, i, &nd);
        bool open = filter[0] == '\0' || node_matches(&nd, filter);
        if (!nd.root || (filter[0] != '\0' && v->marks[i] != MARK_HIT)) {
            continue;
        }
        if (!ui_list_reserve((void **)&v->stack, &v->cap_stack, depth + 1, sizeof *v->stack)) {
            v->nomem = true;
            return;
        }
        /* Every root is drawn as the last of its level, as pstree draws them. */
        v->stack[depth++] =
            (struct walk){.node = i, .parent = NONE, .depth = 1, .last = true, .open = open};
    }
    while (depth > 0) {
        if (v->n_rows >= LIMIT_TREE_LINES) {
            size_t start = v->text.len;
            strbuf_printf(&v->text, "... (tree cut at %d lines)", LIMIT_TREE_LINES);
            add_text(v, interp, start, false);
            return;
        }
        struct walk w = v->stack[--depth];
        if (!add_node_row(v, t, interp, &w, filter)) {
            return;
        }
        size_t self = v->n_rows - 1;
        struct row *r = &v->rows[self];
        if (r->can_fold && ui_tree_is_folded(&v->fold, r->task) && (filter[0] == '\0' || w.open)) {
            r->folded = true;
            r->folded_tasks = tasks_below(v, t, w.node);
            continue;
        }
        if (push_kids(v, t, &w, self, &depth, filter) < 0) {
            v->nomem = true;
            return;
        }
    }
}

static void lay_out_interp(struct tasks_view *v, const struct ui_model *m, size_t i)
{
    const struct snap_interp *in = &m->tasks->interps[i];
    size_t start = v->text.len;
    strbuf_printf(&v->text, "Interpreter %lld: %zu task%s%s", (long long)in->id, in->n_tasks,
                  in->n_tasks == 1 ? "" : "s", in->tasks_truncated ? " (list cut short)" : "");
    add_text(v, i, start, true);
    if (!in->tasks_present) {
        add_line(v, i, "  task graph not available (see the warnings in a dump)");
        return;
    }
    if (in->n_tasks == 0) {
        return;
    }
    if (i >= v->n_trees || v->trees[i] == NULL) {
        add_line(v, i, "  out of memory drawing the tree");
        return;
    }
    if (v->cycles[i] == 0) {
        lay_out_tree(v, i, v->trees[i], m->filter);
        return;
    }
    /* A graph with cycles has no tree: its cycles are listed as pstree lists them. */
    start = v->text.len;
    if (tasktree_write_cycles(&v->text, v->trees[i], NULL) < 0) {
        return;
    }
    size_t end = v->text.len;
    for (size_t at = start; at < end;) {
        const char *nl = memchr(v->text.data + at, '\n', end - at);
        size_t len = nl != NULL ? (size_t)(nl - (v->text.data + at)) : end - at;
        struct snap_str s = {v->text.data + at, len};
        if (len > 0 && ui_text_match(m->filter, s)) {
            struct row *r = add_row(v);
            if (r != NULL) {
                *r = (struct row){
                    .interp = i, .node = NONE, .parent = NONE, .owner = NONE, .at = at, .len = len};
            }
        }
        at += len + 1;
    }
}

/* What row I shows besides its task: a frame's label, a line's text; nothing for a task. */
static struct snap_str row_text(const struct tasks_view *v, size_t i)
{
    const struct row *r = &v->rows[i];
    if (r->node == NONE) {
        return (struct snap_str){v->text.data + r->at, r->len};
    }
    struct tasktree_node nd;
    tasktree_node(v->trees[r->interp], r->node, &nd);
    return nd.is_task ? (struct snap_str){"", 0} : nd.label;
}

static bool is_selected_row(const struct tasks_view *v, size_t i)
{
    struct snap_str t = row_text(v, i);
    const struct strbuf *sel = &v->selected_text;
    return v->rows[i].task == v->selected_task && t.len == sel->len &&
           (t.len == 0 || memcmp(t.ptr, sel->data, t.len) == 0);
}

static void remember_selected(struct tasks_view *v)
{
    if (v->list.cursor < v->n_rows) {
        struct snap_str t = row_text(v, v->list.cursor);
        v->selected_task = v->rows[v->list.cursor].task;
        v->selected_text.len = 0;
        strbuf_append(&v->selected_text, t.ptr, t.len);
    }
}

/* Puts the cursor back on the row it was on; of several alike, the one nearest to it. */
static void find_selected(struct tasks_view *v, size_t before)
{
    size_t best = NONE;
    for (size_t i = 0; i < v->n_rows; i++) {
        if (!is_selected_row(v, i)) {
            continue;
        }
        size_t d = i > before ? i - before : before - i;
        if (best == NONE || d < (best > before ? best - before : before - best)) {
            best = i;
        }
    }
    if (best != NONE) {
        v->list.cursor = best;
        return;
    }
    /* The first picture, or the row is gone: a task row rather than a title, if there is one. */
    for (size_t i = v->list.cursor; i < v->n_rows && v->rows[i].owner == NONE; i++) {
        if (i + 1 < v->n_rows && v->rows[i + 1].owner != NONE) {
            v->list.cursor = i + 1;
        }
    }
}

/* How many tasks there are, and how many of them the rows show or fold away. */
static void count_kept(struct tasks_view *v, const struct ui_model *m)
{
    v->n_tasks = 0;
    v->n_kept = 0;
    for (size_t i = 0; i < m->tasks->n_interps; i++) {
        v->n_tasks += m->tasks->interps[i].tasks_present ? m->tasks->interps[i].n_tasks : 0;
    }
    for (size_t i = 0; i < v->n_rows; i++) {
        const struct row *r = &v->rows[i];
        v->n_kept += r->node != NONE && r->owner == i ? 1 + r->folded_tasks : 0;
    }
    v->n_kept = v->n_kept < v->n_tasks ? v->n_kept : v->n_tasks;
}

/* Lays the rows out again when the picture, the filter or the folding changed. */
static void lay_out(struct tasks_view *v, const struct ui_model *m)
{
    if (!v->built || v->frame_no != m->frame_no) {
        build(v, m);
    }
    if (v->laid_out && strcmp(v->filter, m->filter) == 0 && v->fold_changes == v->fold.changes) {
        return;
    }
    v->laid_out = true;
    v->nomem = false;
    snprintf(v->filter, sizeof v->filter, "%s", m->filter);
    v->fold_changes = v->fold.changes;
    v->text.len = 0;
    v->n_rows = 0;
    for (size_t i = 0; i < m->tasks->n_interps && !v->nomem; i++) {
        lay_out_interp(v, m, i);
    }
    count_kept(v, m);
    find_selected(v, v->list.cursor);
}

/* The connectors of row R, from the levels of its ancestors. */
static int draw_prefix(struct tasks_view *v, const struct row *r, WINDOW *w, int width,
                       const struct ui_style *st)
{
    if (!ui_list_reserve((void **)&v->last, &v->cap_last, r->depth, sizeof *v->last)) {
        return 0;
    }
    const struct row *a = r;
    for (size_t k = r->depth; k-- > 0 && a != NULL;) {
        v->last[k] = a->last;
        a = a->parent != NONE ? &v->rows[a->parent] : NULL;
    }
    return ui_tree_draw_prefix(w, v->last, r->depth, width, 30, st);
}

static void draw_row(struct tasks_view *v, size_t i, WINDOW *w, int y, int width,
                     const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct row *r = &v->rows[i];
    bool selected = i == v->list.cursor;
    attr_t base = st->attr[selected ? UI_SELECTED : r->heading ? UI_HEADER : UI_NORMAL];
    wattrset(w, base);
    mvwhline(w, y, 0, ' ', width);
    wmove(w, y, 1);
    if (r->node == NONE) {
        ui_text_put(w, (struct snap_str){v->text.data + r->at, r->len}, width - 1, st);
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    struct tasktree_node nd;
    tasktree_node(v->trees[r->interp], r->node, &nd);
    if (!selected) {
        wattrset(w, st->attr[UI_DIM]);
    }
    draw_prefix(v, r, w, width - 1, st);
    wattrset(w, base);
    struct ui_task_look look = {
        .selected = selected,
        .hit = r->hit,
        .folded = r->folded,
        .can_fold = r->can_fold,
        .folded_tasks = r->folded_tasks,
        .more = r->folded_tasks >= MAX_FOLDED_COUNT,
    };
    ui_task_draw_node(w, width, &nd, &look, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw_pane(struct tasks_view *v, const struct ui_model *m, WINDOW *w, int y, int height,
                      int width)
{
    const struct row *r = v->list.cursor < v->n_rows ? &v->rows[v->list.cursor] : NULL;
    const struct row *owner = r != NULL && r->owner != NONE ? &v->rows[r->owner] : NULL;
    struct tasktree_node nd = {0};
    if (owner != NULL) {
        tasktree_node(v->trees[owner->interp], owner->node, &nd);
    }
    if (nd.task == NULL) {
        bool any = false;
        for (size_t i = 0; !any && i < v->n_rows; i++) {
            any = v->rows[i].owner != NONE;
        }
        const char *why = any                    ? "select a task to see its coroutine stack"
                          : m->filter[0] != '\0' ? "no task matches the filter"
                                                 : "";
        wattrset(w, m->style->attr[UI_DIM]);
        wmove(w, y, 2);
        ui_text_puts(w, why, width - 2, m->style);
        wattrset(w, m->style->attr[UI_NORMAL]);
        return;
    }
    ui_task_draw(w, y, height, width, nd.task, &m->tasks->interps[owner->interp], m);
}

static void draw_message(WINDOW *w, const char *text, const struct ui_style *st)
{
    wmove(w, 1, 2);
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, text, getmaxx(w) - 2, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct tasks_view *v = state;
    const struct ui_style *st = m->style;
    int width = getmaxx(w);
    int height = getmaxy(w);
    if (m->snap == NULL || m->tasks == NULL) {
        draw_message(w,
                     m->snap == NULL
                         ? (m->waiting ? m->waiting_why : "waiting for the first sample")
                         : "asyncio tasks: not read yet (the graph is read once a "
                           "refresh)",
                     st);
        return;
    }
    lay_out(v, m);
    if (v->nomem) {
        draw_message(w, "out of memory laying out the task tree", st);
        return;
    }
    /* The tree takes up to two thirds of the height, the selected task's stack the rest: fixed
     * shares, so that nothing moves when the cursor or the stacks do. */
    int most = height * 2 / 3 > 3 ? height * 2 / 3 : 3;
    int tree = (int)v->n_rows < most ? (int)v->n_rows : most;
    /* The cursor may be pushed here by rows that went (a filter, a folding); the row it was
     * put on by a key is still the one to come back to when they return. */
    ui_list_fit(&v->list, v->n_rows, tree);
    for (int y = 0; y < tree && v->list.top + (size_t)y < v->n_rows; y++) {
        draw_row(v, v->list.top + (size_t)y, w, y, width, m);
    }
    if (height - tree > 1) {
        draw_pane(v, m, w, tree, height - tree, width);
    }
}

/* The task row that row I belongs to; NONE for text. */
static size_t owner_of(const struct tasks_view *v, size_t i)
{
    return i < v->n_rows ? v->rows[i].owner : NONE;
}

/* Folds or unfolds (FOLD) the task the cursor is in, and puts the cursor on it. */
static bool fold(struct tasks_view *v, bool fold)
{
    size_t o = owner_of(v, v->list.cursor);
    if (o == NONE || !v->rows[o].can_fold) {
        return false;
    }
    v->list.cursor = o;
    remember_selected(v);
    return ui_tree_set_folded(&v->fold, v->rows[o].task, fold);
}

/* The task row the cursor is in, once the tree is laid out for M; NONE without a tree. */
static size_t ready(struct tasks_view *v, const struct ui_model *m, bool *laid_out)
{
    *laid_out = m->snap != NULL && m->tasks != NULL;
    if (!*laid_out) {
        return NONE;
    }
    lay_out(v, m);
    return owner_of(v, v->list.cursor);
}

static enum ui_redraw redraw_if(bool changed)
{
    return changed ? UI_REDRAW_VIEW : UI_REDRAW_NONE;
}

/* Enter: folds or unfolds the task under the cursor. */
static enum ui_redraw toggle_fold(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct tasks_view *v = state;
    bool laid_out;
    size_t o = ready(v, m, &laid_out);
    return redraw_if(o != NONE && fold(v, !v->rows[o].folded));
}

/* Right unfolds the task under the cursor. Left folds an open one; on a folded one (or a
 * leaf) it goes up to the task above. */
static enum ui_redraw fold_or_up(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct tasks_view *v = state;
    bool laid_out;
    size_t o = ready(v, m, &laid_out);
    if (key->code.sym == TERMKEY_SYM_RIGHT) {
        return redraw_if(laid_out && fold(v, false));
    }
    if (o != NONE && v->rows[o].can_fold && !v->rows[o].folded) {
        return redraw_if(fold(v, true));
    }
    if (o != NONE && owner_of(v, v->rows[o].parent) != NONE) {
        v->list.cursor = owner_of(v, v->rows[o].parent);
        remember_selected(v);
        return UI_REDRAW_VIEW;
    }
    return UI_REDRAW_NONE;
}

static enum ui_redraw move_rows(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct tasks_view *v = state;
    bool laid_out;
    ready(v, m, &laid_out);
    if (laid_out && ui_list_key(&v->list, key, v->n_rows)) {
        remember_selected(v);
        return UI_REDRAW_VIEW;
    }
    return UI_REDRAW_NONE;
}

static const struct ui_binding KEYS[] = {
    {"Enter",
     {{UI_KEY_SYM, TERMKEY_SYM_ENTER}},
     toggle_fold,
     UI_HELP_VIEWS,
     "fold / unfold the task under the cursor"},
    {"Left / Right",
     {{UI_KEY_SYM, TERMKEY_SYM_LEFT}, {UI_KEY_SYM, TERMKEY_SYM_RIGHT}},
     fold_or_up,
     UI_HELP_VIEWS,
     "fold (again: up to the awaiting task) / unfold"},
    {NULL},
};

static void filter_note(const void *state, const struct ui_model *m, char *buf, size_t size)
{
    const struct tasks_view *v = state;
    if (m->filter[0] == '\0' || !v->laid_out) {
        snprintf(buf, size, "%s", "");
    } else {
        ui_text_hides(buf, size, v->n_tasks - v->n_kept, v->n_tasks, "task");
    }
}

const struct view_ops view_tasks_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .keys = KEYS,
    .move = move_rows,
    .selected_tid = NULL,
    .filter_note = filter_note,
    .enter_does = "fold",
};
