/* tasktree: one interpreter's asyncio awaited-by graph drawn as `python -m asyncio pstree`
 * draws it (Lib/asyncio/tools.py, 3.14 and 3.15). */
#include "config.h"

#include "core/model/tasktree.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"
#include "core/util/strbuf.h"

enum {
    MAX_CYCLES_SHOWN = 16,
};

/* A task, or a coroutine frame through which a task awaits others. */
struct node {
    uint64_t id; /* task id */
    bool task;
    bool labelled;                  /* a task met in a list: pstree's id2name */
    bool awaiting;                  /* the task awaits some other task */
    bool child;                     /* some node lists it as a child */
    const struct snap_task *src;    /* the listed task */
    const struct snap_frame *frame; /* coroutine node: the first frame it was made of */
    size_t parent;                  /* coroutine node: the node it hangs under */
    size_t label_off;               /* coroutine node: "function file:line", in the pool */
    size_t label_len;
    size_t *kids;                   /* with two kids or more; else the kid is KID0 */
    size_t kid0;
    size_t n_kids;
    size_t cap_kids;
};

/* The kids of N, in drawing order. */
static const size_t *kids_of(const struct node *n)
{
    return n->kids != NULL ? n->kids : &n->kid0;
}

/* Open addressing from a 64-bit key to a node index; several entries may share a key. An
 * entry holds its value plus one: 0 is a free slot. */
struct map_entry {
    uint64_t key;
    size_t val1;
};

struct map {
    struct map_entry *e;
    size_t cap;
    size_t n;
};

struct tasktree {
    struct node *nodes;
    size_t n;
    size_t cap;
    struct map ids;   /* task id -> node */
    struct map coros; /* hash(parent, label) -> node */
    struct map kids;  /* hash(parent, child) -> child */
    /* The coroutine nodes' labels, each once (thousands of nodes share a few: a one-shot
     * dump's fresh pages are what it costs), each after its length (a uint32_t). */
    char *pool;
    size_t pool_len;
    size_t pool_cap;
    struct map labels; /* hash(label) -> its offset in POOL */
    bool nomem;
};

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t len)
{
    h ^= 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
    }
    return mix(h);
}

/* Gives M room for WANT entries at most half full. */
static bool map_reserve(struct map *m, size_t want)
{
    size_t ncap = m->cap ? m->cap : 64;
    while (ncap / 2 < want) {
        if (ncap > SIZE_MAX / 2 / sizeof *m->e) {
            return false;
        }
        ncap *= 2;
    }
    if (ncap == m->cap) {
        return true;
    }
    struct map_entry *e = calloc(ncap, sizeof *e);
    if (e == NULL) {
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].val1 != 0) {
            size_t h = (size_t)(mix(m->e[i].key) & (ncap - 1));
            while (e[h].val1 != 0) {
                h = (h + 1) & (ncap - 1);
            }
            e[h] = m->e[i];
        }
    }
    free(m->e);
    m->e = e;
    m->cap = ncap;
    return true;
}

static bool map_add(struct map *m, uint64_t key, size_t val)
{
    if ((m->n + 1) * 2 > m->cap && !map_reserve(m, m->cap > 0 ? m->cap : 1)) {
        return false;
    }
    size_t h = (size_t)(mix(key) & (m->cap - 1));
    while (m->e[h].val1 != 0) {
        h = (h + 1) & (m->cap - 1);
    }
    m->e[h] = (struct map_entry){key, val + 1};
    m->n++;
    return true;
}

/* Calls MATCH on each entry with KEY until it accepts one; that entry's value, or SIZE_MAX. */
static size_t map_find(const struct map *m, uint64_t key,
                       bool (*match)(const struct tasktree *t, size_t val, const void *ctx),
                       const struct tasktree *t, const void *ctx)
{
    if (m->cap == 0) {
        return SIZE_MAX;
    }
    size_t h = (size_t)(mix(key) & (m->cap - 1));
    while (m->e[h].val1 != 0) {
        if (m->e[h].key == key && (match == NULL || match(t, m->e[h].val1 - 1, ctx))) {
            return m->e[h].val1 - 1;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return SIZE_MAX;
}

static void map_free(struct map *m)
{
    free(m->e);
}

static size_t new_node(struct tasktree *t)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        struct node *nn = realloc(t->nodes, ncap * sizeof *nn);
        if (nn == NULL) {
            t->nomem = true;
            return SIZE_MAX;
        }
        t->nodes = nn;
        t->cap = ncap;
    }
    memset(&t->nodes[t->n], 0, sizeof t->nodes[t->n]);
    return t->n++;
}

static bool add_kid(struct tasktree *t, size_t parent, size_t kid)
{
    struct node *p = &t->nodes[parent];
    /* Most nodes have one kid, kept in the node: thousands of coroutine nodes take no block
     * each. */
    if (p->n_kids == 0) {
        p->kid0 = kid;
        p->n_kids = 1;
        t->nodes[kid].child = true;
        return true;
    }
    if (p->n_kids >= p->cap_kids) {
        size_t ncap = p->cap_kids ? p->cap_kids * 2 : 4;
        size_t *nk = realloc(p->kids, ncap * sizeof *nk);
        if (nk == NULL) {
            t->nomem = true;
            return false;
        }
        if (p->kids == NULL) {
            nk[0] = p->kid0;
        }
        p->kids = nk;
        p->cap_kids = ncap;
    }
    p->kids[p->n_kids++] = kid;
    t->nodes[kid].child = true;
    return true;
}

/* The task node of ID, created unlabelled when absent. */
static size_t task_node(struct tasktree *t, uint64_t id)
{
    size_t i = map_find(&t->ids, id, NULL, t, NULL);
    if (i != SIZE_MAX) {
        return i;
    }
    i = new_node(t);
    if (i == SIZE_MAX) {
        return i;
    }
    t->nodes[i].task = true;
    t->nodes[i].id = id;
    if (!map_add(&t->ids, id, i)) {
        t->nomem = true;
        return SIZE_MAX;
    }
    return i;
}

/* pstree's _format_stack_entry: "function file:line", or less where unknown. */
static void format_frame(struct strbuf *sb, const struct snap_frame *f)
{
    sb->len = 0;
    if (sb->data != NULL) {
        sb->data[0] = '\0';
    }
    if (f->function.ptr != NULL) {
        strbuf_append(sb, f->function.ptr, f->function.len);
    } else {
        strbuf_puts(sb, "?");
    }
    bool no_file =
        f->file.ptr == NULL || f->file.len == 0 || (f->file.len == 1 && f->file.ptr[0] == '~');
    if (f->line < 0 && no_file) {
        return;
    }
    strbuf_puts(sb, " ");
    if (f->file.ptr != NULL) {
        strbuf_append(sb, f->file.ptr, f->file.len);
    }
    if (f->line >= 0) {
        strbuf_printf(sb, ":%d", f->line);
    }
}

struct coro_key {
    size_t parent;
    const char *label;
    size_t len;
};

static bool coro_match(const struct tasktree *t, size_t val, const void *ctx)
{
    const struct coro_key *k = ctx;
    const struct node *n = &t->nodes[val];
    return n->parent == k->parent && n->label_len == k->len &&
           memcmp(t->pool + n->label_off, k->label, k->len) == 0;
}

static bool label_match(const struct tasktree *t, size_t off, const void *ctx)
{
    const struct coro_key *k = ctx;
    uint32_t len;
    memcpy(&len, t->pool + off - sizeof len, sizeof len);
    return len == k->len && memcmp(t->pool + off, k->label, k->len) == 0;
}

/* The offset of K's label in the pool, added when new; SIZE_MAX on out of memory. */
static size_t intern_label(struct tasktree *t, const struct coro_key *k)
{
    uint64_t h = hash_bytes(0, k->label, k->len);
    size_t off = map_find(&t->labels, h, label_match, t, k);
    if (off != SIZE_MAX) {
        return off;
    }
    uint32_t len = (uint32_t)k->len;
    size_t need;
    if (k->len > UINT32_MAX ||
        __builtin_add_overflow(t->pool_len, sizeof len + k->len, &need)) {
        return SIZE_MAX;
    }
    if (need > t->pool_cap) {
        size_t ncap = t->pool_cap ? t->pool_cap : 4096;
        while (ncap < need) {
            if (ncap > SIZE_MAX / 2) {
                return SIZE_MAX;
            }
            ncap *= 2;
        }
        char *np = realloc(t->pool, ncap);
        if (np == NULL) {
            return SIZE_MAX;
        }
        t->pool = np;
        t->pool_cap = ncap;
    }
    memcpy(t->pool + t->pool_len, &len, sizeof len);
    off = t->pool_len + sizeof len;
    if (k->len > 0) {
        memcpy(t->pool + off, k->label, k->len);
    }
    t->pool_len = need;
    return map_add(&t->labels, h, off) ? off : SIZE_MAX;
}

/* pstree's get_or_create_cor_node. With FRESH, PARENT is known to have no coroutine node of
 * that label yet, nor to be asked for it again: the node is made without the lookup map. */
static size_t coro_node(struct tasktree *t, size_t parent, const struct strbuf *label,
                        const struct snap_frame *frame, bool fresh)
{
    struct coro_key k = {parent, label->data != NULL ? label->data : "", label->len};
    uint64_t h = fresh ? 0 : hash_bytes(mix(parent), k.label, k.len);
    size_t i = fresh ? SIZE_MAX : map_find(&t->coros, h, coro_match, t, &k);
    if (i != SIZE_MAX) {
        return i;
    }
    i = new_node(t);
    if (i == SIZE_MAX) {
        return i;
    }
    size_t off = intern_label(t, &k);
    struct node *n = &t->nodes[i];
    n->parent = parent;
    n->frame = frame;
    n->label_off = off;
    n->label_len = k.len;
    if (off == SIZE_MAX || (!fresh && !map_add(&t->coros, h, i)) || !add_kid(t, parent, i)) {
        t->nomem = true;
        return SIZE_MAX;
    }
    return i;
}

static bool kid_match(const struct tasktree *t, size_t val, const void *ctx)
{
    return val == *(const size_t *)ctx;
}

/* Hangs the frames FRAMES[0..N) (innermost first) under CUR, outermost first; FRESH as for
 * coro_node(), for all of them. */
static size_t hang_frames(struct tasktree *t, size_t cur, const struct snap_frame *frames, size_t n,
                          struct strbuf *label, bool fresh)
{
    for (size_t j = n; j-- > 0 && cur != SIZE_MAX;) {
        format_frame(label, &frames[j]);
        cur = label->failed ? SIZE_MAX : coro_node(t, cur, label, &frames[j], fresh);
    }
    return cur;
}

/* Room, before the tree is built, for as many nodes and map entries as TASKS[0..N) can make:
 * one node per task and awaiter, one per frame; grown one doubling at a time instead, the
 * arrays are copied at each step, and the copies are memory a one-shot dump touches for
 * nothing. Overflow or no memory leaves it to the growth as they go. */
static void reserve(struct tasktree *t, const struct snap_task *tasks, size_t n)
{
    size_t awaiters = 0;
    size_t own = 0;    /* frames of the tasks' own stacks: no lookup (build()) */
    size_t frames = 0; /* frames through which tasks await: looked up */
    for (size_t i = 0; i < n; i++) {
        own += tasks[i].frames != NULL ? tasks[i].n_frames : 0;
        for (size_t a = 0; tasks[i].awaited_by != NULL && a < tasks[i].n_awaited_by; a++) {
            awaiters++;
            frames += tasks[i].awaited_by[a].n_frames;
        }
    }
    size_t nodes = n + awaiters + frames + own;
    if (nodes < n || nodes > SIZE_MAX / sizeof *t->nodes || nodes <= t->cap) {
        return;
    }
    struct node *nn = realloc(t->nodes, nodes * sizeof *nn);
    if (nn != NULL) {
        t->nodes = nn;
        t->cap = nodes;
    }
    map_reserve(&t->ids, n + awaiters);
    map_reserve(&t->coros, frames);
    map_reserve(&t->kids, awaiters);
}

static void build(struct tasktree *t, const struct snap_task *tasks, size_t n)
{
    struct strbuf label = {0};
    reserve(t, tasks, n);
    for (size_t i = 0; i < n && !t->nomem; i++) {
        size_t k = task_node(t, tasks[i].id);
        if (k != SIZE_MAX) {
            t->nodes[k].labelled = true;
            t->nodes[k].src = &tasks[i];
        }
    }
    for (size_t i = 0; i < n && !t->nomem; i++) {
        const struct snap_task *ts = &tasks[i];
        size_t child = task_node(t, ts->id);
        for (size_t a = 0; ts->awaited_by != NULL && a < ts->n_awaited_by && !t->nomem; a++) {
            const struct snap_task_awaiter *aw = &ts->awaited_by[a];
            if (aw->task == 0) {
                continue;
            }
            size_t parent = task_node(t, aw->task);
            if (parent == SIZE_MAX || child == SIZE_MAX) {
                break;
            }
            t->nodes[parent].awaiting = true;
            size_t cur = hang_frames(t, parent, aw->frames, aw->n_frames, &label, false);
            if (cur == SIZE_MAX) {
                t->nomem = true;
                break;
            }
            uint64_t h = mix(cur) ^ mix(child + 1);
            if (map_find(&t->kids, h, kid_match, t, &child) == SIZE_MAX) {
                if (!map_add(&t->kids, h, child) || !add_kid(t, cur, child)) {
                    t->nomem = true;
                }
            }
        }
    }
    /* A task that awaits no task shows its own stack, once: nothing hangs below it but that,
     * so its frames need no lookup. */
    size_t n_nodes = t->n;
    for (size_t i = 0; i < n_nodes && !t->nomem; i++) {
        if (t->nodes[i].task && t->nodes[i].labelled && !t->nodes[i].awaiting) {
            const struct snap_task *src = t->nodes[i].src;
            if (hang_frames(t, i, src->frames, src->n_frames, &label, true) == SIZE_MAX) {
                t->nomem = true;
            }
        }
    }
    strbuf_free(&label);
}

static void put_text(struct strbuf *sb, struct snap_str s)
{
    if (s.ptr == NULL) {
        strbuf_puts(sb, "?");
    } else {
        strbuf_text(sb, s.ptr, s.len);
    }
}

static void put_task_name(struct strbuf *sb, const struct node *n)
{
    struct snap_str coro;
    if (n->labelled && snapshot_task_coro_label(n->src, &coro)) {
        strbuf_puts(sb, SNAPSHOT_TASK_CORO_OPEN);
        put_text(sb, coro);
        strbuf_puts(sb, SNAPSHOT_TASK_CORO_CLOSE);
    } else if (n->labelled) {
        put_text(sb, n->src->name);
    } else {
        strbuf_printf(sb, "0x%" PRIx64, n->id);
    }
}

/* For each task node, the tasks it awaits (through its coroutine nodes), as offsets into one
 * array: TKIDS[OFF[v] .. OFF[v + 1]). */
static bool task_edges(const struct tasktree *t, size_t **off_out, size_t **tkids_out)
{
    size_t *off = calloc(t->n + 1, sizeof *off);
    size_t *tkids = malloc((t->n ? t->n * 2 : 1) * sizeof *tkids);
    size_t *walk = malloc((t->n ? t->n : 1) * sizeof *walk);
    size_t cap = t->n ? t->n * 2 : 1;
    size_t m = 0;
    bool ok = off != NULL && tkids != NULL && walk != NULL;
    for (size_t v = 0; ok && v < t->n; v++) {
        off[v] = m;
        if (!t->nodes[v].task) {
            continue;
        }
        size_t nw = 0;
        walk[nw++] = v;
        while (ok && nw > 0) {
            const struct node *x = &t->nodes[walk[--nw]];
            for (size_t k = x->n_kids; k-- > 0;) {
                size_t kid = kids_of(x)[k];
                if (!t->nodes[kid].task) {
                    walk[nw++] = kid; /* each coroutine node hangs under one parent */
                    continue;
                }
                if (m == cap) {
                    size_t *nk = realloc(tkids, cap * 2 * sizeof *nk);
                    ok = nk != NULL;
                    tkids = ok ? nk : tkids;
                    cap *= 2;
                }
                if (ok) {
                    tkids[m++] = kid;
                }
            }
        }
    }
    if (ok) {
        off[t->n] = m;
    }
    free(walk);
    if (!ok) {
        free(off);
        free(tkids);
        return false;
    }
    *off_out = off;
    *tkids_out = tkids;
    return true;
}

/* The task graph's cycles, found as pstree's _find_cycles() does (depth first, back edges);
 * returns how many were written, or -1 out of memory. */
static long write_cycles(struct strbuf *sb, const struct tasktree *t)
{
    size_t *off = NULL;
    size_t *tkids = NULL;
    uint8_t *color = calloc(t->n ? t->n : 1, 1); /* 0 white, 1 grey, 2 black */
    size_t *path = malloc((t->n ? t->n : 1) * sizeof *path);
    size_t *iter = calloc(t->n ? t->n : 1, sizeof *iter);
    long found = 0;
    if (color == NULL || path == NULL || iter == NULL || !task_edges(t, &off, &tkids)) {
        found = -1;
        goto out;
    }
    for (size_t root = 0; root < t->n && found < MAX_CYCLES_SHOWN; root++) {
        if (!t->nodes[root].task || color[root] != 0) {
            continue;
        }
        size_t depth = 0;
        path[depth++] = root;
        color[root] = 1;
        while (depth > 0 && found < MAX_CYCLES_SHOWN) {
            size_t v = path[depth - 1];
            if (off[v] + iter[v] >= off[v + 1]) {
                color[v] = 2;
                depth--;
                continue;
            }
            size_t w = tkids[off[v] + iter[v]++];
            if (color[w] == 0) {
                color[w] = 1;
                path[depth++] = w;
            } else if (color[w] == 1) {
                size_t start = depth;
                while (start > 0 && path[start - 1] != w) {
                    start--;
                }
                if (found == 0) {
                    strbuf_puts(sb, "ERROR: await-graph contains cycles - cannot print a "
                                    "tree!\n\n");
                }
                strbuf_puts(sb, "cycle: ");
                for (size_t p = start > 0 ? start - 1 : 0; p < depth; p++) {
                    put_task_name(sb, &t->nodes[path[p]]);
                    strbuf_puts(sb, " \xe2\x86\x92 ");
                }
                put_task_name(sb, &t->nodes[w]);
                strbuf_puts(sb, "\n");
                found++;
            }
        }
    }
out:
    free(off);
    free(tkids);
    free(color);
    free(path);
    free(iter);
    return found;
}

/* One root's tree, depth first, with pstree's connectors. */
static bool render(struct strbuf *sb, const struct tasktree *t, size_t root, size_t *lines)
{
    struct entry {
        size_t node;
        size_t depth;
        bool last;
    };
    struct entry *stack = malloc(64 * sizeof *stack);
    size_t *prefix_at = malloc(64 * sizeof *prefix_at); /* prefix length at each depth */
    size_t cap = 64;
    size_t pcap = 64;
    size_t n = 0;
    struct strbuf prefix = {0};
    bool ok = stack != NULL && prefix_at != NULL;
    if (ok) {
        stack[n++] = (struct entry){root, 0, true};
        prefix_at[0] = 0;
    }
    while (ok && n > 0) {
        struct entry e = stack[--n];
        const struct node *nd = &t->nodes[e.node];
        if (*lines >= LIMIT_TREE_LINES) {
            strbuf_printf(sb, "... (tree cut at %d lines)\n", LIMIT_TREE_LINES);
            (*lines)++;
            break;
        }
        prefix.len = prefix_at[e.depth];
        strbuf_append(sb, prefix.data != NULL ? prefix.data : "", prefix.len);
        strbuf_puts(sb, e.last ? "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 "
                               : "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 ");
        if (nd->task) {
            strbuf_puts(sb, "(T) ");
            put_task_name(sb, nd);
        } else {
            strbuf_puts(sb, " ");
            strbuf_text(sb, t->pool + nd->label_off, nd->label_len);
        }
        strbuf_puts(sb, "\n");
        (*lines)++;
        if (nd->n_kids == 0) {
            continue;
        }
        strbuf_puts(&prefix, e.last ? "    " : "\xe2\x94\x82   ");
        if (e.depth + 1 >= pcap) {
            size_t *np = realloc(prefix_at, pcap * 2 * sizeof *np);
            ok = np != NULL;
            prefix_at = ok ? np : prefix_at;
            pcap *= ok ? 2 : 1;
        }
        if (n + nd->n_kids > cap) {
            size_t ncap = (n + nd->n_kids) * 2;
            struct entry *ns = realloc(stack, ncap * sizeof *ns);
            ok = ok && ns != NULL;
            stack = ns != NULL ? ns : stack;
            cap = ns != NULL ? ncap : cap;
        }
        if (!ok || prefix.failed) {
            ok = false;
            break;
        }
        prefix_at[e.depth + 1] = prefix.len;
        for (size_t k = nd->n_kids; k-- > 0;) {
            stack[n++] = (struct entry){kids_of(nd)[k], e.depth + 1, k == nd->n_kids - 1};
        }
    }
    free(stack);
    free(prefix_at);
    strbuf_free(&prefix);
    return ok;
}

static void tree_free(struct tasktree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->nodes[i].kids);
    }
    free(t->nodes);
    free(t->pool);
    map_free(&t->ids);
    map_free(&t->coros);
    map_free(&t->kids);
    map_free(&t->labels);
}

static bool is_root(const struct node *n)
{
    return n->task && n->labelled && !n->child;
}

int tasktree_write(struct strbuf *sb, const struct snap_task *tasks, size_t n,
                   const struct tasktree_drain *drain, struct pt_error *err)
{
    struct tasktree t = {0};
    int rc = 0;
    build(&t, tasks, n);
    if (t.nomem) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory drawing the task tree");
        goto out;
    }
    long cycles = write_cycles(sb, &t);
    if (cycles < 0) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory drawing the task tree");
        goto out;
    }
    size_t lines = 0;
    for (size_t i = 0; cycles == 0 && i < t.n && lines <= LIMIT_TREE_LINES; i++) {
        if (is_root(&t.nodes[i]) && !render(sb, &t, i, &lines)) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory drawing the task tree");
            break;
        }
        if (drain != NULL && is_root(&t.nodes[i])) {
            drain->fn(drain->ctx, sb);
        }
    }
out:
    tree_free(&t);
    return rc;
}

struct tasktree *tasktree_new(const struct snap_task *tasks, size_t n, struct pt_error *err)
{
    struct tasktree *t = calloc(1, sizeof *t);
    if (t != NULL) {
        build(t, tasks, n);
    }
    if (t == NULL || t->nomem) {
        tasktree_free(t);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory building the task tree");
        return NULL;
    }
    return t;
}

void tasktree_free(struct tasktree *t)
{
    if (t != NULL) {
        tree_free(t);
        free(t);
    }
}

size_t tasktree_size(const struct tasktree *t)
{
    return t->n;
}

void tasktree_node(const struct tasktree *t, size_t i, struct tasktree_node *out)
{
    const struct node *n = &t->nodes[i];
    *out = (struct tasktree_node){
        .is_task = n->task,
        .root = is_root(n),
        .id = n->task ? n->id : 0,
        .task = n->task && n->labelled ? n->src : NULL,
        .frame = n->task ? NULL : n->frame,
        .label = {n->task ? NULL : t->pool + n->label_off, n->task ? 0 : n->label_len},
        .kids = kids_of(n),
        .n_kids = n->n_kids,
    };
}

long tasktree_write_cycles(struct strbuf *sb, const struct tasktree *t, struct pt_error *err)
{
    long found = write_cycles(sb, t);
    if (found < 0) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory looking for cycles in the task tree");
    }
    return found;
}
