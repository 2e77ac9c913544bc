/* waits: what each thread waits for. The kernel says where a thread sleeps
 * (/proc/PID/task/TID/syscall: the call and its arguments); the target's memory says what that
 * is. A futex word inside the GIL's state is the GIL. A threading lock's waiter sleeps on a
 * semaphore: before 3.13 the lock's own (the futex word is the semaphore the lock object points
 * to), from 3.13 its own parking-lot entry's, which names the mutex it waits for. Where the
 * mutex lies inside the lock object (3.14+, and 3.13's Lock) the object follows from it;
 * otherwise, and to name the variable, the lock is looked for among the waiting frames' local
 * variables and the innermost frame's module globals. Where threading's RLock is a Python class
 * (2.7), its waiters sleep on the plain lock it holds, which stands for it. Offsets of the lock
 * objects and the parking-lot entry: tools/gen-wait-layout. */
#include "config.h"

#include "core/walk/waits.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/layout/gen_wait.h"
#include "core/layout/layout.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/pyobj/pydict.h"
#include "core/pyobj/pyobj.h"
#include "core/target/proc.h"
#include "core/target/proc_wait.h"
#include "core/target/runtime.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/walk/frames.h"

enum {
    WAIT_FRAMES = 8,      /* frames whose variables are searched for the lock */
    WAIT_LOCALS = 64,     /* variables read per frame */
    WAIT_GLOBALS = 1024,  /* module globals looked at */
    WAIT_TYPES = 64,      /* types remembered as lock types or not */
    WAIT_TYPE_NAME = 32,  /* bytes of a type's name read: longer ones are no lock type */
    WAIT_FDS = 8,         /* descriptors described per poll/select/epoll */
    WAIT_TEXT = 512,      /* bytes of one description */
    WAIT_THREADS = 1 << 16, /* threads whose wait is remembered */
    WAIT_GILS = 16,       /* GILs whose holder is remembered */
};

/* A thread's wait as the last snapshot saw it. */
struct seen {
    pid_t tid;
    uint64_t key;
    double since; /* clock_now() when first seen so */
};

/* What a snapshot learnt of one thread, for waits_finish(). */
struct pending {
    struct snap_thread *t;
    uint64_t owner_ident; /* an RLock's owner (threading.get_ident()); 0 none */
    uint64_t key;
};

/* A GIL as the last snapshot saw it: its holder, its switch count, since when so. */
struct gil_seen {
    uint64_t gil;
    pid_t holder;
    uint64_t switches;
    double since;
};

struct type_memo {
    uint64_t type;
    int form; /* index in the version's forms, -1: not a lock type */
};

/* A global of a GIL that is no struct (gen's gil_globals), where the target has it. */
struct gil_global {
    uint64_t addr;
    uint64_t size;
    bool indirect; /* ADDR holds a pointer to the semaphore */
};

struct waits {
    const struct py_layout *L;
    const struct layout_wait_gen *gen; /* NULL: locks are not told apart */
    struct gil_global gil[RUNTIME_GIL_GLOBALS_MAX];
    size_t n_gil;
    struct proc_net *net;
    struct seen *seen, *next;
    size_t n_seen, n_next, cap_seen;
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct type_memo types[WAIT_TYPES];
    size_t n_types;
    struct gil_seen gils[WAIT_GILS];
    size_t n_gils;
};

struct waits *waits_new(const struct py_layout *L, const struct runtime *rt)
{
    struct waits *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return NULL;
    }
    w->L = L;
    w->gen = layout_wait_gen(LAYOUT_VERSION_KEY(L->hexversion));
    for (size_t i = 0; rt != NULL && w->gen != NULL && i < w->gen->n_gil_globals &&
                       w->n_gil < RUNTIME_GIL_GLOBALS_MAX;
         i++) {
        const struct layout_gil_global *g = &w->gen->gil_globals[i];
        uint64_t addr = runtime_symbol_addr(rt, g->symbol);
        if (addr != 0 && g->size > 0) {
            w->gil[w->n_gil++] = (struct gil_global){addr, (uint64_t)g->size, g->indirect != 0};
        }
    }
    w->net = proc_net_new();
    if (w->net == NULL) {
        free(w);
        return NULL;
    }
    return w;
}

void waits_free(struct waits *w)
{
    if (w == NULL) {
        return;
    }
    proc_net_free(w->net);
    free(w->seen);
    free(w->next);
    free(w->pending);
    free(w);
}

static struct snap_str text(struct snapshot *s, const char *t)
{
    return snapshot_strdup(s, t, strlen(t));
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t mix_str(uint64_t h, struct snap_str str)
{
    for (size_t i = 0; str.ptr != NULL && i < str.len; i++) {
        h = mix(h, (unsigned char)str.ptr[i]);
    }
    return h;
}

static bool read_word(struct proc *p, uint64_t addr, uint64_t *v)
{
    struct pt_error e = {0};
    return addr != 0 && proc_read_bytes(p, addr, v, sizeof *v, &e) == 0;
}

/* ---- lock objects ---- */

/* The name (tp_name, cut to WAIT_TYPE_NAME - 1 bytes) and tp_basicsize of the type at TYPE. */
static bool read_type(const struct waits *w, struct proc *p, uint64_t type,
                      char name[WAIT_TYPE_NAME], uint64_t *size)
{
    const struct py_layout *L = w->L;
    uint64_t name_ptr = 0;
    struct pt_error e = {0};
    if (!layout_has(L->type.name) || !layout_has(L->type.basicsize) ||
        !read_word(p, type + L->type.name, &name_ptr) ||
        !read_word(p, type + L->type.basicsize, size) || name_ptr == 0 ||
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
        !read_word(p, obj + w->L->object.ob_type, &type) || type == 0 || type % 8 != 0) {
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
    return read_word(p, obj + (uint64_t)f->mutex, key) && *key != 0;
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
        !read_word(q->p, fr->code_addr + L->wait.code_names, &names) || names == 0 ||
        !layout_has(L->wait.tuple_size) || !layout_has(L->wait.tuple_items) ||
        !read_word(q->p, names + L->wait.tuple_size, &n)) {
        return false;
    }
    n = n < WAIT_LOCALS ? n : WAIT_LOCALS;
    uint64_t values[WAIT_LOCALS];
    struct pt_error e = {0};
    if (n == 0 || proc_read_bytes(q->p, fr->addr + L->wait.frame_locals, values, n * 8, &e) < 0) {
        return false;
    }
    *first = values[0] & ~L->frame.executable_tag_mask;
    read_word(q->p, names + L->wait.tuple_items, first_name);
    long i = search_values(q, values, n);
    if (i < 0) {
        return false;
    }
    read_word(q->p, names + L->wait.tuple_items + (uint64_t)i * 8, &q->name);
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
        read_word(q->p, t->frames[0].addr + q->w->L->wait.frame_globals, &dict)) {
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
        !layout_has(L->object.ob_type) || !read_word(p, q->holder_obj + L->object.ob_type, &type) ||
        !read_type(w, p, type, name, &size) || strcmp(name, r->type_name) != 0) {
        return false;
    }
    /* Held while its count is above 0 (the owner is set before the count, and cleared after
     * it); the owner is then an int, of the count's type. */
    bool held = pydict_instance_attr(p, L, q->holder_obj, r->count, &count_obj, &e) == 1 &&
                pydict_instance_attr(p, L, q->holder_obj, r->owner, &owner_obj, &e) == 1 &&
                count_obj != 0 && owner_obj != 0 &&
                read_word(p, count_obj + L->object.ob_type, &count_type) &&
                read_word(p, owner_obj + L->object.ob_type, &owner_type) &&
                count_type == owner_type && pydict_read_uint(p, L, count_obj, &count, &e) == 0 &&
                count > 0;
    if (!held || pydict_read_uint(p, L, owner_obj, owner, &e) < 0) {
        *owner = 0;
    }
    return true;
}

static void set_lock(struct waits *w, struct proc *p, struct snapshot *s,
                     const struct waits_thread *t, uint64_t futex, struct pending *pd)
{
    struct snap_wait *out = &t->out->wait;
    out->kind = SNAP_WAIT_LOCK;
    out->via = wait_via(t->out);
    pd->key = mix(pd->key, futex);
    if (w->gen == NULL) {
        out->reason = text(s, "locks are not told apart on this version");
        return;
    }
    struct search q = {.w = w, .p = p, .sem = futex, .form = -1};
    /* A waiter for a PyMutex (3.13+) sleeps on its parking-lot entry's semaphore, and the
     * entry names the mutex; a waiter for a lock with a semaphore of its own, on that. */
    if (w->gen->entry_addr >= 0 &&
        !read_word(p, futex - (uint64_t)w->gen->entry_sema + (uint64_t)w->gen->entry_addr,
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
        out->reason = text(s, "a lock not found among the frames' variables");
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
        text(s, py_rlock || strcmp(f->type_name, "_thread.RLock") == 0 ? "threading.RLock"
                                                                       : "threading.Lock");
    pd->key = mix(pd->key, q.obj);
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
    if (f->owner >= 0 && read_word(p, q.obj + (uint64_t)f->owner, &owner) && owner != 0 &&
        (f->count < 0 || (read_word(p, q.obj + (uint64_t)f->count, &count) && count > 0))) {
        pd->owner_ident = owner;
    }
}

/* ---- descriptors ---- */

static void describe_fd(struct waits *w, struct proc *p, int fd, char *out, size_t cap)
{
    struct pt_error e = {0};
    if (proc_fd_describe(p, w->net, fd, out, cap, &e) < 0) {
        snprintf(out, cap, "fd %d (%s)", fd, e.msg[0] != '\0' ? e.msg : "unreadable");
    }
}

/* Appends "fd N WHAT" for each of the N descriptors FDS to BUF. */
static void describe_fds(struct waits *w, struct proc *p, const int *fds, size_t n, bool more,
                         char *buf, size_t cap)
{
    size_t len = strlen(buf);
    for (size_t i = 0; i < n && len + 1 < cap; i++) {
        char one[WAIT_TEXT];
        describe_fd(w, p, fds[i], one, sizeof one);
        int k = snprintf(buf + len, cap - len, "%sfd %d %s", i > 0 ? ", " : "", fds[i], one);
        len = k < 0 ? len : len + (size_t)k < cap ? len + (size_t)k : cap - 1;
    }
    if (more && len + 1 < cap) {
        snprintf(buf + len, cap - len, ", ...");
    }
}

static void poll_fds(struct waits *w, struct proc *p, const struct proc_syscall *sc, char *buf,
                     size_t cap, size_t *n_out)
{
    uint64_t nfds = sc->args[1];
    struct {
        int32_t fd;
        int16_t events, revents;
    } pfd[WAIT_FDS];
    size_t n = nfds < WAIT_FDS ? (size_t)nfds : WAIT_FDS;
    struct pt_error e = {0};
    *n_out = (size_t)nfds;
    if (n == 0 || proc_read_bytes(p, sc->args[0], pfd, n * sizeof pfd[0], &e) < 0) {
        return;
    }
    int fds[WAIT_FDS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (pfd[i].fd >= 0) {
            fds[k++] = pfd[i].fd;
        }
    }
    describe_fds(w, p, fds, k, nfds > n, buf, cap);
}

static void select_fds(struct waits *w, struct proc *p, const struct proc_syscall *sc,
                       char *buf, size_t cap, size_t *n_out)
{
    uint64_t nfds = sc->args[0] < 1024 ? sc->args[0] : 1024;
    int fds[WAIT_FDS];
    size_t k = 0;
    bool more = false;
    *n_out = 0;
    for (int set = 1; set <= 3; set++) {
        uint8_t bits[128];
        struct pt_error e = {0};
        size_t len = (size_t)(nfds + 7) / 8;
        if (sc->args[set] == 0 || len == 0 ||
            proc_read_bytes(p, sc->args[set], bits, len, &e) < 0) {
            continue;
        }
        for (uint64_t fd = 0; fd < nfds; fd++) {
            if (!(bits[fd / 8] & (1u << (fd % 8)))) {
                continue;
            }
            (*n_out)++;
            bool dup = false;
            for (size_t i = 0; i < k; i++) {
                dup |= fds[i] == (int)fd;
            }
            if (dup) {
                continue;
            }
            if (k < WAIT_FDS) {
                fds[k++] = (int)fd;
            } else {
                more = true;
            }
        }
    }
    describe_fds(w, p, fds, k, more, buf, cap);
}

static double timespec_at(struct proc *p, uint64_t addr, bool timeval)
{
    int64_t ts[2];
    struct pt_error e = {0};
    if (addr == 0 || proc_read_bytes(p, addr, ts, sizeof ts, &e) < 0 || ts[0] < 0 || ts[1] < 0 ||
        ts[1] >= (timeval ? 1000000 : 1000000000)) {
        return -1;
    }
    return (double)ts[0] + (double)ts[1] / (timeval ? 1e6 : 1e9);
}

/* A sleep; its deadline (an absolute one is a new sleep when it moves) goes into *KEY. */
static void set_sleep(struct proc *p, const struct proc_syscall *sc, long nr,
                      struct snap_wait *out, uint64_t *key)
{
    out->kind = SNAP_WAIT_SLEEP;
    const char *name = proc_syscall_name(nr);
    if (name != NULL && strcmp(name, "clock_nanosleep") == 0) {
        double at = timespec_at(p, sc->args[2], false);
        if (at >= 0 && (sc->args[1] & 1)) { /* TIMER_ABSTIME */
            *key = mix(*key, at < 1e12 ? (uint64_t)(at * 1e6) : UINT64_MAX);
            struct timespec now;
            clockid_t clock = (clockid_t)sc->args[0];
            if ((clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME ||
                 clock == CLOCK_BOOTTIME) && clock_gettime(clock, &now) == 0) {
                double left = at - ((double)now.tv_sec + (double)now.tv_nsec / 1e9);
                out->left = left > 0 ? left : 0;
            }
        } else {
            out->requested = at;
        }
    } else if (name != NULL && strcmp(name, "nanosleep") == 0) {
        out->requested = timespec_at(p, sc->args[0], false);
    } else if (name != NULL && strcmp(name, "select") == 0) {
        out->requested = timespec_at(p, sc->args[4], true);
    } else if (name != NULL && strcmp(name, "pselect6") == 0) {
        out->requested = timespec_at(p, sc->args[4], false);
    } else if (name != NULL && (strcmp(name, "poll") == 0 || strcmp(name, "ppoll") == 0)) {
        out->requested = strcmp(name, "poll") == 0
                             ? ((int)sc->args[2] >= 0 ? (int)sc->args[2] / 1e3 : -1)
                             : timespec_at(p, sc->args[2], false);
    }
}

/* ---- one thread ---- */

/* Whether futex word F is the GIL's: inside the GIL state whose last_holder is at GIL, or
 * (before 3.7) inside one of its globals, or the semaphore one of them points to. */
static bool gil_futex(struct waits *w, struct proc *p, uint64_t gil, uint64_t f)
{
    uint64_t at = w->L->wait.gil_holder_at;
    if (gil != 0 && layout_has(at) && layout_has(w->L->wait.gil_size) && f >= gil - at &&
        f < gil - at + w->L->wait.gil_size) {
        return true;
    }
    for (size_t i = 0; i < w->n_gil; i++) {
        uint64_t sem = 0;
        if (w->gil[i].indirect ? read_word(p, w->gil[i].addr, &sem) && sem != 0 && f == sem
                               : f >= w->gil[i].addr && f - w->gil[i].addr < w->gil[i].size) {
            return true;
        }
    }
    return false;
}

static void read_one(struct waits *w, struct proc *p, struct snapshot *s, uint64_t gil,
                     const struct waits_thread *t, struct pending *pd)
{
    struct snap_wait *out = &t->out->wait;
    *out = (struct snap_wait){
        .fd = -1, .since = -1, .left = -1, .requested = -1, .owner_held = -1};
    struct proc_syscall sc;
    struct pt_error e = {0};
    if (t->out->tid <= 0) {
        out->kind = SNAP_WAIT_UNKNOWN;
        out->reason = text(s, "its kernel thread is not known");
        return;
    }
    if (proc_task_syscall(p, t->out->tid, &sc, &e) < 0) {
        out->kind = SNAP_WAIT_UNKNOWN;
        char why[320];
        snprintf(why, sizeof why, "/proc/%d/task/%d/syscall: %s", (int)proc_pid(p),
                 (int)t->out->tid, e.msg);
        out->reason = text(s, why);
        return;
    }
    if (sc.running) {
        out->kind = SNAP_WAIT_RUNNING;
        return;
    }
    if (sc.nr < 0) {
        struct proc_task_stat st;
        out->kind = SNAP_WAIT_UNKNOWN;
        char state = proc_task_stat(p, t->out->tid, &st, &e) == 0 ? st.state : '?';
        char why[96];
        if (state == 't') {
            snprintf(why, sizeof why, "stopped by a tracer (such as --blocking) outside a system "
                                      "call: it was running");
        } else if (state == 'T') {
            snprintf(why, sizeof why, "stopped (a stop signal) outside a system call");
        } else {
            snprintf(why, sizeof why, "not in a system call (state %c)", state);
        }
        out->reason = text(s, why);
        return;
    }
    const char *name = proc_syscall_name(sc.nr);
    char buf[WAIT_TEXT];
    buf[0] = '\0';
    if (name != NULL) {
        out->syscall = text(s, name);
    } else {
        snprintf(buf, sizeof buf, "syscall %ld", sc.nr);
        out->syscall = text(s, buf);
        buf[0] = '\0';
    }
    pd->key = mix(pd->key, (uint64_t)sc.nr);
    size_t n_fds = 0;
    switch (proc_syscall_class(sc.nr)) {
    case PROC_SYS_FUTEX: {
        uint64_t f = sc.args[0];
        if (gil_futex(w, p, gil, f)) {
            out->kind = SNAP_WAIT_GIL;
            return;
        }
        set_lock(w, p, s, t, f, pd);
        return;
    }
    case PROC_SYS_SLEEP:
    case PROC_SYS_PAUSE:
        set_sleep(p, &sc, sc.nr, out, &pd->key);
        return;
    case PROC_SYS_FD:
        out->kind = SNAP_WAIT_IO;
        out->fd = (int)sc.args[0];
        pd->key = mix(pd->key, sc.args[0]);
        describe_fd(w, p, out->fd, buf, sizeof buf);
        break;
    case PROC_SYS_POLL:
        poll_fds(w, p, &sc, buf, sizeof buf, &n_fds);
        if (n_fds == 0) {
            set_sleep(p, &sc, sc.nr, out, &pd->key);
            return;
        }
        out->kind = SNAP_WAIT_IO;
        break;
    case PROC_SYS_SELECT:
        select_fds(w, p, &sc, buf, sizeof buf, &n_fds);
        if (n_fds == 0) {
            set_sleep(p, &sc, sc.nr, out, &pd->key);
            return;
        }
        out->kind = SNAP_WAIT_IO;
        break;
    case PROC_SYS_EPOLL: {
        int fds[WAIT_FDS];
        size_t n = 0;
        out->kind = SNAP_WAIT_IO;
        out->fd = (int)sc.args[0];
        int rc = proc_epoll_fds(p, out->fd, fds, WAIT_FDS, &n, &e);
        if (rc == 0 || e.code == PT_E_LIMIT) {
            describe_fds(w, p, fds, n, rc < 0, buf, sizeof buf);
        }
        break;
    }
    case PROC_SYS_CHILD:
        out->kind = SNAP_WAIT_IO;
        if ((int64_t)sc.args[0] > 0) {
            snprintf(buf, sizeof buf, "child %lld", (long long)sc.args[0]);
        } else {
            snprintf(buf, sizeof buf, "a child");
        }
        break;
    default:
        out->kind = SNAP_WAIT_UNKNOWN;
        out->reason = text(s, "a system call pytop does not interpret");
        return;
    }
    if (buf[0] != '\0') {
        out->object = text(s, buf);
        pd->key = mix_str(pd->key, out->object);
    }
}

static struct pending *add_pending(struct waits *w)
{
    if (!memory_grow((void **)&w->pending, &w->cap_pending, w->n_pending + 1, sizeof *w->pending,
                     64)) {
        return NULL;
    }
    return &w->pending[w->n_pending++];
}

/* How long the holder of the GIL at GIL (its last_holder field), thread HOLDER, has held it
 * with no other thread taking it: since the first snapshot that saw the same holder and switch
 * count (switch_number counts the takes by another thread than the last holder). < 0 unknown. */
static double gil_held(struct waits *w, struct proc *p, uint64_t gil, pid_t holder, double now)
{
    uint64_t switches = 0;
    if (gil == 0 || holder <= 0 || !layout_has(w->L->gil_switch_from_holder) ||
        !read_word(p, gil + w->L->gil_switch_from_holder, &switches)) {
        return -1;
    }
    struct gil_seen *g = NULL;
    for (size_t i = 0; i < w->n_gils && g == NULL; i++) {
        g = w->gils[i].gil == gil ? &w->gils[i] : NULL;
    }
    if (g == NULL && w->n_gils < WAIT_GILS) {
        g = &w->gils[w->n_gils++];
        *g = (struct gil_seen){.gil = gil};
    }
    if (g == NULL) {
        return -1;
    }
    if (g->holder == holder && g->switches == switches) {
        return now - g->since;
    }
    *g = (struct gil_seen){gil, holder, switches, now};
    return -1;
}

void waits_read_interp(struct waits *w, struct proc *p, struct snapshot *s, uint64_t gil,
                       const struct waits_thread *ts, size_t n)
{
    pid_t holder = 0;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].out->gil == SNAP_YES) {
            holder = holder == 0 ? ts[i].out->tid : -1;
        }
    }
    double held = gil_held(w, p, gil, holder, clock_now());
    for (size_t i = 0; i < n; i++) {
        /* Out of memory, the wait is still read, but not aged nor followed to its owner. */
        struct pending scratch;
        struct pending *pd = add_pending(w);
        pd = pd != NULL ? pd : &scratch;
        *pd = (struct pending){.t = ts[i].out, .key = 0xcbf29ce484222325ull};
        read_one(w, p, s, gil, &ts[i], pd);
        if (pd->t->wait.kind == SNAP_WAIT_GIL && holder > 0 && holder != pd->t->tid) {
            pd->t->wait.owner_tid = holder;
            pd->t->wait.owner_held = held;
        }
    }
}

/* ---- across interpreters ---- */

static int seen_cmp(const void *a, const void *b)
{
    pid_t x = ((const struct seen *)a)->tid, y = ((const struct seen *)b)->tid;
    return (x > y) - (x < y);
}

static void owners_and_ages(struct waits *w, struct snapshot *s, double now)
{
    if (w->cap_seen < w->n_pending) {
        struct seen *a = realloc(w->seen, w->n_pending * sizeof *a);
        struct seen *b = a == NULL ? NULL : realloc(w->next, w->n_pending * sizeof *b);
        if (a != NULL) {
            w->seen = a;
        }
        if (b == NULL) {
            w->n_seen = 0;
            return;
        }
        w->next = b;
        w->cap_seen = w->n_pending;
    }
    w->n_next = 0;
    for (size_t i = 0; i < w->n_pending; i++) {
        struct pending *pd = &w->pending[i];
        struct snap_wait *wt = &pd->t->wait;
        /* The owner, by ident, among the snapshot's threads. */
        for (size_t k = 0; pd->owner_ident != 0 && k < s->n_interps; k++) {
            for (size_t j = 0; j < s->interps[k].n_threads; j++) {
                const struct snap_thread *o = &s->interps[k].threads[j];
                if (o->thread_id == pd->owner_ident && o->tid > 0) {
                    wt->owner_tid = o->tid;
                }
            }
        }
        /* The same wait with the same stack as last time: waited since then. */
        uint64_t key = mix(pd->key, (uint64_t)wt->kind);
        for (size_t f = 0; f < pd->t->n_frames; f++) {
            key = mix_str(mix(key, (uint64_t)pd->t->frames[f].line), pd->t->frames[f].function);
        }
        struct seen probe = {.tid = pd->t->tid};
        struct seen *old = pd->t->tid > 0 && w->n_seen > 0
                               ? bsearch(&probe, w->seen, w->n_seen, sizeof *w->seen, seen_cmp)
                               : NULL;
        double since = now;
        if (old != NULL && old->key == key) {
            since = old->since;
            wt->since = now - since;
        }
        if (pd->t->tid > 0 && w->n_next < WAIT_THREADS) {
            w->next[w->n_next++] = (struct seen){pd->t->tid, key, since};
        }
    }
    if (w->n_next > 1) {
        qsort(w->next, w->n_next, sizeof *w->next, seen_cmp);
    }
    struct seen *t = w->seen;
    w->seen = w->next;
    w->next = t;
    w->n_seen = w->n_next;
}

struct by_tid {
    pid_t tid;
    size_t at; /* in w->pending */
};

static int by_tid_cmp(const void *a, const void *b)
{
    pid_t x = ((const struct by_tid *)a)->tid, y = ((const struct by_tid *)b)->tid;
    return (x > y) - (x < y);
}

/* Adds the cycle through pending thread FIRST (LEN threads, NEXT[] leading round it) to S's
 * deadlocks, starting at its smallest tid. */
static void add_cycle(struct waits *w, struct snapshot *s, const long *next, size_t first,
                      size_t len)
{
    size_t start = first;
    for (size_t k = 0, at = first; k < len; k++, at = (size_t)next[at]) {
        start = w->pending[at].t->tid < w->pending[start].t->tid ? at : start;
    }
    struct snap_deadlock *grown =
        snapshot_alloc_array(s, s->n_deadlocks + 1, sizeof *s->deadlocks);
    if (grown == NULL) {
        return;
    }
    if (s->n_deadlocks > 0) {
        memcpy(grown, s->deadlocks, s->n_deadlocks * sizeof *grown);
    }
    s->deadlocks = grown;
    struct snap_deadlock *d = &s->deadlocks[s->n_deadlocks];
    d->threads = snapshot_alloc_array(s, len, sizeof *d->threads);
    d->locks = snapshot_alloc_array(s, len, sizeof *d->locks);
    if (d->threads == NULL || d->locks == NULL) {
        return;
    }
    for (size_t k = 0, at = start; k < len; k++, at = (size_t)next[at]) {
        d->threads[k] = w->pending[at].t->tid;
        d->locks[k] = w->pending[at].t->wait.lock;
    }
    d->n = len;
    s->n_deadlocks++;
}

/* Cycles of threads each waiting for a lock the next owns. Each thread waits for one lock, so
 * the owners form a graph of out-degree one: one pass with colours finds every cycle, in
 * O(n log n) for the owners' lookup however the target chains its locks. */
static void find_deadlocks(struct waits *w, struct snapshot *s)
{
    size_t n = w->n_pending;
    struct by_tid *idx = n > 1 ? malloc(n * sizeof *idx) : NULL;
    long *next = idx != NULL ? malloc(n * sizeof *next) : NULL;
    unsigned char *colour = next != NULL ? calloc(n, 1) : NULL; /* 0 new, 1 on path, 2 done */
    if (colour == NULL) {
        free(idx);
        free(next);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = (struct by_tid){w->pending[i].t->tid, i};
    }
    qsort(idx, n, sizeof *idx, by_tid_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct snap_wait *wt = &w->pending[i].t->wait;
        struct by_tid key = {wt->owner_tid, 0};
        const struct by_tid *o = wt->kind == SNAP_WAIT_LOCK && wt->owner_tid > 0
                                     ? bsearch(&key, idx, n, sizeof *idx, by_tid_cmp)
                                     : NULL;
        next[i] = o != NULL ? (long)o->at : -1;
    }
    for (size_t i = 0; i < n; i++) {
        long at = (long)i;
        while (at >= 0 && colour[at] == 0) {
            colour[at] = 1;
            at = next[at];
        }
        if (at >= 0 && colour[at] == 1) {
            /* The walk came back onto its own path: AT is on a cycle. */
            size_t len = 1;
            for (long k = next[at]; k != at; k = next[k]) {
                len++;
            }
            add_cycle(w, s, next, (size_t)at, len);
        }
        for (long k = (long)i; k >= 0 && colour[k] == 1; k = next[k]) {
            colour[k] = 2;
        }
    }
    free(idx);
    free(next);
    free(colour);
}

void waits_finish(struct waits *w, struct snapshot *s)
{
    s->waits_present = true;
    owners_and_ages(w, s, clock_now());
    find_deadlocks(w, s);
    w->n_pending = 0;
    proc_net_reset(w->net);
}
