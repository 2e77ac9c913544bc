/* threadnames: the threading module's names of a target's threads, read and cached. */
#include "config.h"

#include "core/walk/threadnames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/pyobj/pydict.h"
#include "core/pyobj/pyobj.h"

enum {
    NAMES_MAX = LIMIT_THREADS,     /* names kept over all interpreters */
    NAMES_FIRST = 16,              /* names room is made for at first */
    NAME_MAX_BYTES = 256,          /* bytes kept of one thread name */
    INTERPS_MAX = 64,              /* interpreters whose refresh time is remembered */
};

struct name_entry {
    uint64_t interp;
    uint64_t ident;
    bool unreadable; /* threading has the thread, but its name is no str pytop can read */
    bool absent;     /* threading did not know the thread at the last refresh */
    bool has_tid;    /* the Thread object says which kernel thread it ran on: TID */
    uint64_t tid;
    uint64_t other_tid; /* a kernel thread with this ident, not TID, looked for at the refresh */
    size_t len;
    char name[NAME_MAX_BYTES];
};

struct interp_age {
    uint64_t interp;
    double refreshed;
    double recheck_until; /* threads threading did not know are looked for again until then */
};

/* A thread is in threading._active only once its bootstrap registered it, after Thread.start()
 * returned; one read in between finds it absent. For MAX_AGE after a new thread shows up, a
 * thread found absent is looked for again this often. */
static const double ABSENT_RECHECK_S = 0.2;

struct threadnames {
    struct name_entry *names; /* sorted by (interp, ident) */
    size_t n;
    size_t cap;
    struct interp_age ages[INTERPS_MAX];
    size_t n_ages;
};

struct threadnames *threadnames_new(void)
{
    return calloc(1, sizeof(struct threadnames));
}

/* Whether T has room for one more name (NAMES_MAX at most): the entries grow with the threads
 * named, not NAMES_MAX of them up front. */
static bool room(struct threadnames *t)
{
    if (t->n < t->cap) {
        return true;
    }
    size_t ncap = t->cap ? 2 * t->cap : NAMES_FIRST;
    ncap = ncap > NAMES_MAX ? NAMES_MAX : ncap;
    if (ncap <= t->n) {
        return false;
    }
    struct name_entry *fresh = realloc(t->names, ncap * sizeof *fresh);
    if (fresh == NULL) {
        return false;
    }
    t->names = fresh;
    t->cap = ncap;
    return true;
}

void threadnames_free(struct threadnames *t)
{
    if (t != NULL) {
        free(t->names);
        free(t);
    }
}

static int cmp_entry(const void *a, const void *b)
{
    const struct name_entry *x = a;
    const struct name_entry *y = b;
    if (x->interp != y->interp) {
        return x->interp < y->interp ? -1 : 1;
    }
    return x->ident < y->ident ? -1 : x->ident > y->ident;
}

/* Looked up for every thread of every sample: a binary search, not a scan. */
static const struct name_entry *find_ident(const struct threadnames *t, uint64_t interp,
                                           uint64_t ident)
{
    size_t lo = 0;
    size_t hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct name_entry *e = &t->names[mid];
        if (e->interp == interp && e->ident == ident) {
            return e;
        }
        if (e->interp < interp || (e->interp == interp && e->ident < ident)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* The entry of thread IDENT running as kernel thread TID (0: unknown), or NULL. A thread ident
 * is the address of the thread's pthread structure, which the C library hands to the next
 * thread once one ends: an entry whose Thread ran on another kernel thread is of an earlier
 * thread with the same ident, and its name is not this thread's. */
static const struct name_entry *find(const struct threadnames *t, uint64_t interp,
                                     uint64_t ident, uint64_t tid)
{
    const struct name_entry *e = find_ident(t, interp, ident);
    if (e != NULL && e->has_tid && tid != 0 && e->tid != tid) {
        return NULL;
    }
    return e;
}

const char *threadnames_get(const struct threadnames *t, uint64_t interp, uint64_t ident,
                            uint64_t tid, size_t *len)
{
    const struct name_entry *e = find(t, interp, ident, tid);
    if (e == NULL || e->unreadable || e->absent) {
        return NULL;
    }
    *len = e->len;
    return e->name;
}

bool threadnames_is_unreadable(const struct threadnames *t, uint64_t interp, uint64_t ident,
                               uint64_t tid)
{
    const struct name_entry *e = find(t, interp, ident, tid);
    return e != NULL && e->unreadable;
}

static struct interp_age *age_of(struct threadnames *t, uint64_t interp)
{
    for (size_t i = 0; i < t->n_ages; i++) {
        if (t->ages[i].interp == interp) {
            return &t->ages[i];
        }
    }
    if (t->n_ages == INTERPS_MAX) {
        t->n_ages = 0;
    }
    t->ages[t->n_ages] = (struct interp_age){interp, -1e300, -1e300};
    return &t->ages[t->n_ages++];
}

/* Context of one walk over threading._active. */
struct walk {
    struct threadnames *t;
    struct proc *p;
    const struct py_layout *L;
    uint64_t interp;
};

static int add_thread(void *ctx, uint64_t key, uint64_t value)
{
    struct walk *w = ctx;
    uint64_t ident;
    uint64_t name_obj;
    uint64_t tid_obj = 0;
    if (!room(w->t)) {
        return 1;
    }
    if (pydict_read_uint(w->p, w->L, key, &ident, NULL) < 0 ||
        pydict_instance_attr(w->p, w->L, value, "_name", &name_obj, NULL) != 1) {
        return 0;
    }
    /* Thread._native_id (3.8+; None until the thread ran) pairs the name with its kernel
     * thread. Present but unreadable, the name cannot be told apart from an older thread's. */
    int has = pydict_instance_attr(w->p, w->L, value, "_native_id", &tid_obj, NULL);
    uint64_t tid = 0;
    if (has < 0 || (has == 1 && pydict_read_uint(w->p, w->L, tid_obj, &tid, NULL) < 0)) {
        return 0;
    }
    struct name_entry *e = &w->t->names[w->t->n];
    e->has_tid = has == 1;
    e->tid = tid;
    e->other_tid = 0;
    /* Thread._name is a str; anything else read as one would be a made-up name. */
    long len = pyobj_is_str(w->p, w->L, name_obj)
                   ? pyobj_read_str(w->p, w->L, name_obj, e->name, sizeof e->name, NULL)
                   : -1;
    e->interp = w->interp;
    e->ident = ident;
    e->absent = false; /* the slot may hold an entry of an earlier refresh */
    e->unreadable = len < 0;
    e->len = len < 0 ? 0 : (size_t)len;
    w->t->n++;
    return 0;
}

/* Drops the names of INTERP, keeping the others in order. */
static void forget(struct threadnames *t, uint64_t interp)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->names[i].interp != interp) {
            t->names[k++] = t->names[i];
        }
    }
    t->n = k;
}

int threadnames_update(struct threadnames *t, struct proc *p, const struct py_layout *L,
                       uint64_t interp, uint64_t modules, const uint64_t *idents,
                       const uint64_t *tids, size_t n, double now, double max_age,
                       struct pt_error *err)
{
    struct interp_age *age = age_of(t, interp);
    bool stale = now - age->refreshed > max_age;
    bool recheck = now < age->recheck_until && now - age->refreshed >= ABSENT_RECHECK_S;
    bool new_thread = false;
    for (size_t i = 0; i < n; i++) {
        const struct name_entry *e = find_ident(t, interp, idents[i]);
        bool other = e != NULL && e->has_tid && tids[i] != 0 && e->tid != tids[i];
        bool unseen = e == NULL || (other && e->other_tid != tids[i]);
        new_thread = new_thread || unseen;
        stale = stale || unseen || ((e->absent || other) && recheck);
    }
    if (!stale) {
        return 0;
    }
    if (new_thread) {
        age->recheck_until = now + max_age;
    }
    /* Checked again only after MAX_AGE, even when a thread has no name (not from threading). */
    age->refreshed = now;
    uint64_t threading;
    uint64_t mdict = 0;
    uint64_t active;
    int rc = pydict_get_str(p, L, modules, "threading", &threading, err);
    if (rc <= 0) {
        return rc;
    }
    if (!layout_has(L->module_dict) ||
        proc_read_bytes(p, threading + L->module_dict, &mdict, sizeof mdict, err) < 0) {
        return pt_error_prefix(err, "threading module");
    }
    rc = pydict_get_str(p, L, mdict, "_active", &active, err);
    if (rc <= 0) {
        return rc;
    }
    forget(t, interp);
    struct walk w = {t, p, L, interp};
    rc = pydict_items(p, L, active, add_thread, &w, err);
    /* The threads threading does not know are remembered as such, so that they do not make
     * every call read the names again before MAX_AGE. */
    if (t->n > 1) {
        qsort(t->names, t->n, sizeof *t->names, cmp_entry);
    }
    size_t listed = t->n;
    for (size_t i = 0; i < n && room(t); i++) {
        struct name_entry key = {.interp = interp, .ident = idents[i]};
        if (listed == 0 || bsearch(&key, t->names, listed, sizeof *t->names, cmp_entry) == NULL) {
            struct name_entry *e = &t->names[t->n++];
            memset(e, 0, offsetof(struct name_entry, name));
            e->interp = interp;
            e->ident = idents[i];
            e->absent = true;
        }
    }
    if (t->n > 1) {
        qsort(t->names, t->n, sizeof *t->names, cmp_entry);
    }
    /* A thread whose ident threading gives to a Thread of another kernel thread is, like an
     * absent one, looked for again only as the absent are. */
    for (size_t i = 0; i < n; i++) {
        struct name_entry *e = (struct name_entry *)find_ident(t, interp, idents[i]);
        if (e != NULL && e->has_tid && tids[i] != 0 && e->tid != tids[i]) {
            e->other_tid = tids[i];
        }
    }
    return rc;
}
