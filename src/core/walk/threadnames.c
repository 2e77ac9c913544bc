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
#include "core/pyobj/pyint.h"
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

/* One entry of threading._active: an int key (the ident) and a Thread. */
struct pair {
    uint64_t key;
    uint64_t thread;
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
    struct pair *pairs; /* scratch: threading._active's entries at a refresh */
    size_t n_pairs;
    size_t cap_pairs;
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
        free(t->pairs);
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

static int add_pair(void *ctx, uint64_t key, uint64_t value)
{
    struct threadnames *t = ctx;
    if (t->n_pairs == t->cap_pairs) {
        size_t ncap = t->cap_pairs ? 2 * t->cap_pairs : NAMES_FIRST;
        ncap = ncap > NAMES_MAX ? NAMES_MAX : ncap;
        struct pair *fresh = ncap > t->n_pairs ? realloc(t->pairs, ncap * sizeof *fresh) : NULL;
        if (fresh == NULL) {
            return 1;
        }
        t->pairs = fresh;
        t->cap_pairs = ncap;
    }
    t->pairs[t->n_pairs++] = (struct pair){key, value};
    return 0;
}

enum {
    STR_WINDOW = 128, /* bytes read of a name: the header and a short name's characters */
    TYPES_KEPT = 8,   /* types whose flags one refresh remembers */
};

/* The flags of types read during one refresh (names and native ids are of a few types). */
struct type_flags {
    uint64_t type[TYPES_KEPT];
    uint64_t flags[TYPES_KEPT];
    size_t n;
};

/* Whether TYPE has the type flag FLAG (0: unknown in this layout, so no); read once a refresh. */
static bool type_has(struct proc *p, const struct py_layout *L, struct type_flags *tf,
                     uint64_t type, uint64_t flag)
{
    uint64_t flags = 0;
    for (size_t i = 0; i < tf->n; i++) {
        if (tf->type[i] == type) {
            return (tf->flags[i] & flag) != 0;
        }
    }
    if (flag == 0 || type == 0 || !layout_has(L->type.flags) ||
        proc_read_bytes(p, type + L->type.flags, &flags, sizeof flags, NULL) < 0) {
        return false;
    }
    if (tf->n < TYPES_KEPT) {
        tf->type[tf->n] = type;
        tf->flags[tf->n++] = flags;
    }
    return (flags & flag) != 0;
}

/* The ints at ADDRS[0..N) (0: none) into OUT, RC[i] 0 or -1, and the objects' types into TYPES
 * (0 when unreadable), in one batch (BUF holds N of PYINT_UINT_READ bytes); one at a time
 * when the batch fails. */
static void read_uints(struct proc *p, const struct py_layout *L, const uint64_t *addrs, size_t n,
                       uint8_t *buf, struct proc_iov *iov, uint64_t *out, int *rc,
                       uint64_t *types)
{
    size_t want = pyint_uint_len(L);
    size_t k = 0;
    for (size_t i = 0; i < n && want > 0; i++) {
        if (addrs[i] != 0) {
            iov[k++] = (struct proc_iov){addrs[i], buf + i * PYINT_UINT_READ, want};
        }
    }
    bool batch = want > 0 && proc_read_many(p, iov, k, NULL) == 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        rc[i] = 0;
        types[i] = 0;
        if (addrs[i] == 0) {
            continue;
        }
        if (batch) {
            layout_read_u64(buf + i * PYINT_UINT_READ, want, L->object.ob_type, &types[i]);
            rc[i] = pyint_uint_from_buf(L, buf + i * PYINT_UINT_READ, want, addrs[i], &out[i],
                                        NULL);
        } else {
            proc_read_bytes(p, addrs[i] + L->object.ob_type, &types[i], 8, NULL);
            rc[i] = pyint_read_uint(p, L, addrs[i], &out[i], NULL);
        }
    }
}

/* The names of the Threads in T->pairs (at most PROC_IOV_MAX of them) as entries of INTERP:
 * every Thread's ident, _name and _native_id in a few batched reads for all. */
static void read_entries(struct threadnames *t, struct proc *p, const struct py_layout *L,
                         uint64_t interp, const struct pair *pairs, size_t n)
{
    /* Thread's name is _name from 3.0 on; 2.7 names it __name, mangled to _Thread__name. */
    static const char *const attrs[] = {"_name", "_native_id", "_Thread__name"};
    enum { N_ATTRS = sizeof attrs / sizeof attrs[0] };
    uint64_t *objs = malloc(n * sizeof *objs);
    uint64_t *vals = malloc(n * N_ATTRS * sizeof *vals);
    int *rcs = malloc(n * sizeof *rcs);
    uint64_t *idents = malloc(n * sizeof *idents);
    int *ident_rc = malloc(n * sizeof *ident_rc);
    uint64_t *tid_objs = malloc(n * sizeof *tid_objs);
    uint64_t *tids = malloc(n * sizeof *tids);
    uint64_t *types = malloc(n * sizeof *types);
    int *tid_rc = malloc(n * sizeof *tid_rc);
    size_t per = (size_t)PYINT_UINT_READ > (size_t)STR_WINDOW ? (size_t)PYINT_UINT_READ
                                                                : (size_t)STR_WINDOW;
    uint8_t *buf = malloc(n * per);
    struct proc_iov *iov = malloc(n * sizeof *iov);
    if (objs == NULL || vals == NULL || rcs == NULL || idents == NULL || ident_rc == NULL ||
        tid_objs == NULL || tids == NULL || tid_rc == NULL || types == NULL || buf == NULL ||
        iov == NULL) {
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        objs[i] = pairs[i].key;
    }
    struct type_flags tf = {.n = 0};
    read_uints(p, L, objs, n, buf, iov, idents, ident_rc, types);
    for (size_t i = 0; i < n; i++) {
        objs[i] = pairs[i].thread;
    }
    if (pydict_instances_attrs(p, L, objs, n, attrs, N_ATTRS, vals, rcs, NULL) < 0) {
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (vals[N_ATTRS * i] == 0) {
            vals[N_ATTRS * i] = vals[N_ATTRS * i + 2];
        }
    }
    /* Thread._native_id (3.8+; None until the thread ran, or for a thread threading was told
     * of by hand) pairs the name with its kernel thread. An int that cannot be read leaves the
     * name unpaired: it cannot be told apart from an older thread's, and is not given. */
    for (size_t i = 0; i < n; i++) {
        tid_objs[i] = rcs[i] >= 0 ? vals[N_ATTRS * i + 1] : 0;
    }
    read_uints(p, L, tid_objs, n, buf, iov, tids, tid_rc, types);
    for (size_t i = 0; i < n; i++) {
        if (tid_objs[i] != 0 && types[i] != 0 && L->flag_long_subclass != 0 &&
            !type_has(p, L, &tf, types[i], L->flag_long_subclass)) {
            tid_objs[i] = 0; /* None: no claim either way */
            tid_rc[i] = 0;
        }
    }
    /* The names: header and characters of short ones in one batch. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (rcs[i] >= 0 && vals[N_ATTRS * i] != 0) {
            iov[k++] = (struct proc_iov){vals[N_ATTRS * i], buf + i * STR_WINDOW, STR_WINDOW};
        }
    }
    bool batch = proc_read_many(p, iov, k, NULL) == 0;
    for (size_t i = 0; i < n && room(t); i++) {
        uint64_t name_obj = vals[N_ATTRS * i];
        if (ident_rc[i] < 0 || rcs[i] < 0 || name_obj == 0 || tid_rc[i] < 0) {
            continue;
        }
        struct name_entry *e = &t->names[t->n];
        const uint8_t *sb = buf + i * STR_WINDOW;
        /* Thread._name is a str; anything else read as one would be a made-up name. */
        long len = -1;
        if (!batch) {
            len = pyobj_is_str(p, L, name_obj)
                      ? pyobj_read_str(p, L, name_obj, e->name, sizeof e->name, NULL)
                      : -1;
        } else if (layout_read_u64(sb, STR_WINDOW, L->object.ob_type, &types[i]) &&
                   type_has(p, L, &tf, types[i], L->flag_str_subclass)) {
            len = pyobj_str_from_buf(L, sb, STR_WINDOW, e->name, sizeof e->name, NULL);
            if (len == PYOBJ_STR_MORE) {
                len = pyobj_read_str(p, L, name_obj, e->name, sizeof e->name, NULL);
            }
        }
        e->interp = interp;
        e->ident = idents[i];
        e->has_tid = tid_objs[i] != 0;
        e->tid = tids[i];
        e->other_tid = 0;
        e->absent = false; /* the slot may hold an entry of an earlier refresh */
        e->unreadable = len < 0;
        e->len = len < 0 ? 0 : (size_t)len;
        t->n++;
    }
out:
    free(objs);
    free(vals);
    free(rcs);
    free(idents);
    free(ident_rc);
    free(tid_objs);
    free(tids);
    free(types);
    free(tid_rc);
    free(buf);
    free(iov);
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
    t->n_pairs = 0;
    rc = pydict_items(p, L, active, add_pair, t, err);
    for (size_t first = 0; first < t->n_pairs; first += PROC_IOV_MAX) {
        size_t m = t->n_pairs - first < PROC_IOV_MAX ? t->n_pairs - first : PROC_IOV_MAX;
        read_entries(t, p, L, interp, t->pairs + first, m);
    }
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
