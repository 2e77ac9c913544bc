/* threadnames: the threading module's names of a target's threads, read and cached. */
#include "config.h"

#include "core/threadnames.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"
#include "core/pydict.h"
#include "core/pyobj.h"

enum {
    NAMES_MAX = LIMIT_THREADS,     /* names kept over all interpreters */
    NAME_MAX_BYTES = 256,          /* bytes kept of one thread name */
    INTERPS_MAX = 64,              /* interpreters whose refresh time is remembered */
};

struct name_entry {
    uint64_t interp;
    uint64_t ident;
    bool unreadable; /* threading has the thread, but its name is no str pytop can read */
    size_t len;
    char name[NAME_MAX_BYTES];
};

struct interp_age {
    uint64_t interp;
    double refreshed;
};

struct threadnames {
    struct name_entry *names;
    size_t n;
    struct interp_age ages[INTERPS_MAX];
    size_t n_ages;
};

struct threadnames *threadnames_new(void)
{
    struct threadnames *t = calloc(1, sizeof *t);
    if (t != NULL) {
        t->names = calloc(NAMES_MAX, sizeof *t->names);
        if (t->names == NULL) {
            free(t);
            return NULL;
        }
    }
    return t;
}

void threadnames_free(struct threadnames *t)
{
    if (t != NULL) {
        free(t->names);
        free(t);
    }
}

static const struct name_entry *find(const struct threadnames *t, uint64_t interp,
                                     uint64_t ident)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->names[i].interp == interp && t->names[i].ident == ident) {
            return &t->names[i];
        }
    }
    return NULL;
}

const char *threadnames_get(const struct threadnames *t, uint64_t interp, uint64_t ident,
                            size_t *len)
{
    const struct name_entry *e = find(t, interp, ident);
    if (e == NULL || e->unreadable) {
        return NULL;
    }
    *len = e->len;
    return e->name;
}

bool threadnames_is_unreadable(const struct threadnames *t, uint64_t interp, uint64_t ident)
{
    const struct name_entry *e = find(t, interp, ident);
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
    t->ages[t->n_ages] = (struct interp_age){interp, -1e300};
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
    if (w->t->n == NAMES_MAX) {
        return 1;
    }
    if (pydict_read_uint(w->p, w->L, key, &ident, NULL) < 0 ||
        pydict_instance_attr(w->p, w->L, value, "_name", &name_obj, NULL) != 1) {
        return 0;
    }
    struct name_entry *e = &w->t->names[w->t->n];
    /* Thread._name is a str; anything else read as one would be a made-up name. */
    long len = pyobj_is_str(w->p, w->L, name_obj)
                   ? pyobj_read_str(w->p, w->L, name_obj, e->name, sizeof e->name, NULL)
                   : -1;
    e->interp = w->interp;
    e->ident = ident;
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
                       uint64_t interp, uint64_t modules, const uint64_t *idents, size_t n,
                       double now, double max_age, struct pt_error *err)
{
    struct interp_age *age = age_of(t, interp);
    bool stale = now - age->refreshed > max_age;
    for (size_t i = 0; i < n && !stale; i++) {
        stale = find(t, interp, idents[i]) == NULL;
    }
    if (!stale) {
        return 0;
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
    return pydict_items(p, L, active, add_thread, &w, err);
}
