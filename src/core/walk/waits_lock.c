/* waits_lock.c: which lock a thread asleep on a futex waits for. A threading lock's waiter
 * sleeps on a semaphore: before 3.13 the lock's own (the futex word is the semaphore the lock
 * object points to), from 3.13 its own parking-lot entry's, which names the mutex it waits for.
 * Where the mutex lies inside the lock object (3.14+, and 3.13's Lock) the object follows from
 * it; otherwise, and to name the variable, the lock is looked for among the waiting frames'
 * local variables, their first variables' attributes (self.lock) and the innermost frame's
 * module globals. Where threading's RLock is a Python class (2.7), its waiters sleep on the
 * plain lock it holds, which stands for it. Offsets of the lock objects and the parking-lot
 * entry: tools/gen-wait-layout. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/gen_wait.h"
#include "core/layout/layout.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/pyobj/pydict.h"
#include "core/pyobj/pyint.h"
#include "core/pyobj/pyobj.h"
#include "core/target/proc.h"
#include "core/util/error.h"
#include "core/walk/frames.h"
#include "core/walk/waits_int.h"

/* The name (tp_name, cut to WAIT_TYPE_NAME - 1 bytes) and tp_basicsize of the type at TYPE. */
static bool read_type(const struct waits *w, struct proc *p, uint64_t type,
                      char name[WAIT_TYPE_NAME], uint64_t *size)
{
    const struct py_layout *L = w->L;
    uint64_t name_ptr = 0;
    struct pt_error e = {0};
    if (!layout_has(L->type.name) || !layout_has(L->type.basicsize) ||
        !waits_read_word(p, type + L->type.name, &name_ptr) ||
        !waits_read_word(p, type + L->type.basicsize, size) || name_ptr == 0 ||
        proc_read_bytes(p, name_ptr, name, WAIT_TYPE_NAME, &e) < 0) {
        return false;
    }
    name[WAIT_TYPE_NAME - 1] = '\0';
    return true;
}

/* Which of the version's lock forms objects of type TYPE have (-1: none). */
static int type_form(struct waits *w, struct proc *p, uint64_t type)
{
    for (size_t i = 0; i < w->n_types; i++) {
        if (w->types[i].type == type) {
            return w->types[i].form;
        }
    }
    int form = -1;
    uint64_t size = 0;
    char name[WAIT_TYPE_NAME];
    if (read_type(w, p, type, name, &size)) {
        for (size_t i = 0; i < w->gen->n_forms; i++) {
            const struct layout_lock_form *f = &w->gen->forms[i];
            if (strcmp(name, f->type_name) == 0 && (int64_t)size == f->basicsize) {
                form = (int)i;
                break;
            }
        }
    } else {
        return -1; /* not remembered: a read that failed may succeed next time */
    }
    if (w->n_types < WAIT_TYPES) {
        w->types[w->n_types++] = (struct type_memo){type, form};
    }
    return form;
}

/* The form of the object at OBJ when it is a lock, else -1. */
static int lock_form(struct waits *w, struct proc *p, uint64_t obj)
{
    uint64_t type = 0;
    if (obj == 0 || obj % 8 != 0 || !layout_has(w->L->object.ob_type) ||
        !waits_read_word(p, obj + w->L->object.ob_type, &type) || type == 0 || type % 8 != 0) {
        return -1;
    }
    return type_form(w, p, type);
}

/* The address a waiter for lock OBJ (of FORM) names: its mutex or semaphore. */
static bool lock_key(struct waits *w, struct proc *p, uint64_t obj, int form, uint64_t *key)
{
    const struct layout_lock_form *f = &w->gen->forms[form];
    if (!f->indirect) {
        *key = obj + (uint64_t)f->mutex;
        return true;
    }
    return waits_read_word(p, obj + (uint64_t)f->mutex, key) && *key != 0;
}

/* What a lock search is after: the lock a waiter on futex word SEM waits for (a lock holding a
 * pointer to its semaphore points there; one holding a PyMutex is what the parking-lot entry
 * names, PARK, 0 when none), or (OBJ nonzero) the object OBJ. */
struct search {
    struct waits *w;
    struct proc *p;
    uint64_t sem;
    uint64_t park;
    uint64_t obj;  /* found (or known) lock object */
    int form;
    uint64_t name;   /* the str naming the variable; 0 none */
    uint64_t holder; /* with NAME an attribute: the str naming the variable holding the object
                      * whose attribute it is (self); 0 none */
    uint64_t holder_obj; /* with HOLDER: that object */
    size_t holder_frame; /* with HOLDER: the frame whose first variable it is */
};

/* The index of the lock among the N values VALS (object pointers, maybe tagged), or -1. The
 * values' types are read in one batch, and the keys of those that are locks in another. */
static long search_values(struct search *q, uint64_t *vals, size_t n)
{
    const struct py_layout *L = q->w->L;
    uint64_t types[WAIT_GLOBALS];
    struct proc_iov iov[WAIT_GLOBALS];
    size_t k = 0;
    n = n < WAIT_GLOBALS ? n : WAIT_GLOBALS;
    for (size_t i = 0; i < n; i++) {
        vals[i] &= ~L->frame.executable_tag_mask; /* a tagged stack reference (3.14+) */
        if (q->obj != 0 && vals[i] == q->obj) {
            return (long)i;
        }
    }
    if (q->obj != 0 || !layout_has(L->object.ob_type)) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        types[i] = 0;
        if (vals[i] != 0 && vals[i] % 8 == 0) {
            iov[k++] = (struct proc_iov){vals[i] + L->object.ob_type, &types[i], 8};
        }
    }
    struct pt_error e = {0};
    for (size_t at = 0; at < k; at += PROC_IOV_MAX) {
        size_t m = k - at < PROC_IOV_MAX ? k - at : PROC_IOV_MAX;
        if (proc_read_many(q->p, iov + at, m, &e) < 0) {
            return -1; /* a value that is no object: the frame changed, or is not one */
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t key = 0;
        int form = types[i] != 0 && types[i] % 8 == 0 ? type_form(q->w, q->p, types[i]) : -1;
        if (form >= 0 && lock_key(q->w, q->p, vals[i], form, &key) &&
            key == (q->w->gen->forms[form].indirect ? q->sem : q->park)) {
            q->obj = vals[i];
            q->form = form;
            return (long)i;
        }
    }
    return -1;
}

/* Looks for the lock among the variables of the frame FR (its first slots, as many as its code
 * names); *FIRST and *FIRST_NAME receive its first variable (self, in a method) and its name. */
static bool search_frame(struct search *q, const struct frames_raw *fr, uint64_t *first,
                         uint64_t *first_name)
{
    const struct py_layout *L = q->w->L;
    uint64_t names = 0, n = 0;
    if (!layout_has(L->wait.code_names) || !layout_has(L->wait.frame_locals) || fr->code_addr == 0 ||
        !waits_read_word(q->p, fr->code_addr + L->wait.code_names, &names) || names == 0 ||
        !layout_has(L->wait.tuple_size) || !layout_has(L->wait.tuple_items) ||
        !waits_read_word(q->p, names + L->wait.tuple_size, &n)) {
        return false;
    }
    n = n < WAIT_LOCALS ? n : WAIT_LOCALS;
    uint64_t values[WAIT_LOCALS];
    struct pt_error e = {0};
    if (n == 0 || proc_read_bytes(q->p, fr->addr + L->wait.frame_locals, values, n * 8, &e) < 0) {
        return false;
    }
    *first = values[0] & ~L->frame.executable_tag_mask;
    waits_read_word(q->p, names + L->wait.tuple_items, first_name);
    long i = search_values(q, values, n);
    if (i < 0) {
        return false;
    }
    waits_read_word(q->p, names + L->wait.tuple_items + (uint64_t)i * 8, &q->name);
    return true;
}

struct globals {
    uint64_t keys[WAIT_GLOBALS];
    uint64_t values[WAIT_GLOBALS];
    size_t n;
};

static int collect_global(void *ctx, uint64_t key, uint64_t value)
{
    struct globals *g = ctx;
    g->keys[g->n] = key;
    g->values[g->n++] = value;
    return g->n == WAIT_GLOBALS;
}

/* Looks for the lock among the attributes of the objects FIRST[0..N) (each frame's first
 * variable: self, whose `with self.lock:` is the commonest way to hold one); NAMES name them. */
static bool search_attributes(struct search *q, const uint64_t *first, const uint64_t *names,
                              size_t n, struct globals *g)
{
    for (size_t i = 0; i < n; i++) {
        bool seen = first[i] == 0;
        for (size_t k = 0; k < i && !seen; k++) {
            seen = first[k] == first[i];
        }
        struct pt_error e = {0};
        g->n = 0;
        if (seen || pydict_instance_items(q->p, q->w->L, first[i], collect_global, g, &e) < 0) {
            continue;
        }
        long at = search_values(q, g->values, g->n);
        if (at >= 0) {
            q->name = g->keys[at];
            q->holder = names[i];
            q->holder_obj = first[i];
            q->holder_frame = i;
            return true;
        }
    }
    return false;
}

/* Looks for the lock through the thread's frames: the variables of the innermost ones, the
 * attributes of their first variables, then the innermost frame's module globals (the first
 * WAIT_GLOBALS of them). */
static void search_lock(struct search *q, const struct waits_thread *t)
{
    size_t n = t->n_frames < WAIT_FRAMES ? t->n_frames : WAIT_FRAMES;
    uint64_t first[WAIT_FRAMES] = {0};
    uint64_t first_name[WAIT_FRAMES] = {0};
    for (size_t i = 0; i < n; i++) {
        if (search_frame(q, &t->frames[i], &first[i], &first_name[i])) {
            return;
        }
    }
    uint64_t dict = 0;
    struct pt_error e = {0};
    struct globals *g = malloc(sizeof *g);
    if (g != NULL && search_attributes(q, first, first_name, n, g)) {
        free(g);
        return;
    }
    if (g != NULL && n > 0 && layout_has(q->w->L->wait.frame_globals) &&
        waits_read_word(q->p, t->frames[0].addr + q->w->L->wait.frame_globals, &dict)) {
        g->n = 0;
        if (pydict_items(q->p, q->w->L, dict, collect_global, g, &e) == 0) {
            long i = search_values(q, g->values, g->n);
            q->name = i >= 0 ? g->keys[i] : 0;
        }
    }
    free(g);
}

/* The threading or queue call the thread waits inside: the outermost of the innermost frames
 * that lie in threading.py or queue.py (2.7's Queue.py) ("Queue.get", "Event.wait"). */
static struct snap_str wait_via(const struct snap_thread *t)
{
    struct snap_str via = {0};
    for (size_t i = 0; i < t->n_frames; i++) {
        const struct snap_frame *f = &t->frames[i];
        if (f->kind != SNAP_FRAME_PYTHON) {
            continue;
        }
        struct snap_str file = f->file;
        bool lib = false;
        static const char *const libs[] = {"/threading.py", "/queue.py", "/Queue.py"};
        for (size_t k = 0; k < sizeof libs / sizeof libs[0] && file.ptr != NULL; k++) {
            size_t m = strlen(libs[k]);
            lib |= file.len >= m && memcmp(file.ptr + file.len - m, libs[k], m) == 0;
        }
        /* Thread.run and the bootstrap under it call the thread's target: not a wait. */
        static const char *const runner[] = {"Thread.run", "Thread._bootstrap", "run",
                                             "_bootstrap"};
        for (size_t k = 0; k < 4 && lib && f->function.ptr != NULL; k++) {
            size_t m = strlen(runner[k]);
            lib &= !(f->function.len >= m && memcmp(f->function.ptr, runner[k], m) == 0 &&
                     (f->function.len == m || f->function.ptr[m] == '_'));
        }
        if (!lib) {
            break;
        }
        via = f->function;
    }
    return via;
}

/* Whether the str at ADDR is NAME. */
static bool str_is(struct proc *p, const struct py_layout *L, uint64_t addr, const char *name)
{
    char buf[64];
    struct pt_error e = {0};
    long len = addr != 0 ? pyobj_read_str(p, L, addr, buf, sizeof buf, &e) : -1;
    return len >= 0 && (size_t)len == strlen(name) && memcmp(buf, name, (size_t)len) == 0;
}

/* Where threading's RLock is a Python class (gen's py_rlock, 2.7), a waiter for one sleeps on
 * the plain lock in its attribute: when Q found the lock as that attribute of an instance of
 * the class, Q becomes the search for the RLock itself (from the frames below the RLock's own
 * method, to name the variable holding it) and *OWNER its owner's ident, when it is held. */
static bool python_rlock(struct waits *w, struct proc *p, struct search *q, uint64_t *owner)
{
    const struct layout_py_rlock *r = w->gen->py_rlock;
    const struct py_layout *L = w->L;
    uint64_t type = 0, size = 0, count_obj = 0, owner_obj = 0, count = 0;
    uint64_t count_type = 0, owner_type = 0;
    char name[WAIT_TYPE_NAME];
    struct pt_error e = {0};
    if (r == NULL || q->holder_obj == 0 || !str_is(p, L, q->name, r->block) ||
        !layout_has(L->object.ob_type) || !waits_read_word(p, q->holder_obj + L->object.ob_type, &type) ||
        !read_type(w, p, type, name, &size) || strcmp(name, r->type_name) != 0) {
        return false;
    }
    /* Held while its count is above 0 (the owner is set before the count, and cleared after
     * it); the owner is then an int, of the count's type. */
    bool held = pydict_instance_attr(p, L, q->holder_obj, r->count, &count_obj, &e) == 1 &&
                pydict_instance_attr(p, L, q->holder_obj, r->owner, &owner_obj, &e) == 1 &&
                count_obj != 0 && owner_obj != 0 &&
                waits_read_word(p, count_obj + L->object.ob_type, &count_type) &&
                waits_read_word(p, owner_obj + L->object.ob_type, &owner_type) &&
                count_type == owner_type && pyint_read_uint(p, L, count_obj, &count, &e) == 0 &&
                count > 0;
    if (!held || pyint_read_uint(p, L, owner_obj, owner, &e) < 0) {
        *owner = 0;
    }
    return true;
}

void waits_set_lock(struct waits *w, struct proc *p, struct snapshot *s,
                    const struct waits_thread *t, uint64_t futex, struct pending *pd)
{
    struct snap_wait *out = &t->out->wait;
    out->kind = SNAP_WAIT_LOCK;
    out->via = wait_via(t->out);
    pd->key = waits_mix(pd->key, futex);
    if (w->gen == NULL) {
        out->reason = waits_text(s, "locks are not told apart on this version");
        return;
    }
    struct search q = {.w = w, .p = p, .sem = futex, .form = -1};
    /* A waiter for a PyMutex (3.13+) sleeps on its parking-lot entry's semaphore, and the
     * entry names the mutex; a waiter for a lock with a semaphore of its own, on that. */
    if (w->gen->entry_addr >= 0 &&
        !waits_read_word(p, futex - (uint64_t)w->gen->entry_sema + (uint64_t)w->gen->entry_addr,
                   &q.park)) {
        q.park = 0;
    }
    /* Where the mutex lies inside the object, the object follows from it. */
    for (size_t i = 0; i < w->gen->n_forms && q.obj == 0 && q.park != 0; i++) {
        const struct layout_lock_form *f = &w->gen->forms[i];
        if (!f->indirect && q.park > (uint64_t)f->mutex &&
            lock_form(w, p, q.park - (uint64_t)f->mutex) == (int)i) {
            q.obj = q.park - (uint64_t)f->mutex;
            q.form = (int)i;
        }
    }
    search_lock(&q, t);
    if (q.obj == 0) {
        out->reason = waits_text(s, "a lock not found among the frames' variables");
        return;
    }
    const struct layout_lock_form *f = &w->gen->forms[q.form];
    uint64_t py_owner = 0;
    bool py_rlock = python_rlock(w, p, &q, &py_owner);
    if (py_rlock) {
        /* The RLock is what the program holds: named from the frames below its method. */
        struct waits_thread below = *t;
        below.frames = t->frames + q.holder_frame + 1;
        below.n_frames = t->n_frames - q.holder_frame - 1;
        q = (struct search){.w = w, .p = p, .obj = q.holder_obj, .form = -1};
        search_lock(&q, &below);
    }
    out->lock = q.obj;
    out->object =
        waits_text(s, py_rlock || strcmp(f->type_name, "_thread.RLock") == 0 ? "threading.RLock"
                                                                       : "threading.Lock");
    pd->key = waits_mix(pd->key, q.obj);
    if (q.name != 0) {
        /* "other", or "self.lock" for an attribute. */
        char name[260];
        struct pt_error e = {0};
        long at = q.holder != 0 ? pyobj_read_str(p, w->L, q.holder, name, 128, &e) : 0;
        if (at > 0) {
            name[at++] = '.';
        }
        long len = at >= 0 ? pyobj_read_str(p, w->L, q.name, name + at, 128, &e) : -1;
        if (len > 0) {
            out->variable = snapshot_strdup(s, name, (size_t)(at + len));
        }
    }
    uint64_t owner = 0, count = 0;
    if (py_rlock) {
        pd->owner_ident = py_owner;
        return;
    }
    /* An owner whose count is 0 has let go (a _PyRecursiveMutex counts only the re-entries,
     * and clears its owner on the last release). */
    if (f->owner >= 0 && waits_read_word(p, q.obj + (uint64_t)f->owner, &owner) && owner != 0 &&
        (f->count < 0 || (waits_read_word(p, q.obj + (uint64_t)f->count, &count) && count > 0))) {
        pd->owner_ident = owner;
    }
}
