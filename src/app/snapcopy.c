/* snapcopy: deep copies of a snapshot, in an arena of their own. */
#include "config.h"

#include "app/snapcopy.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"

/* The copies made so far, by the address and length of what they copy, so that what the
 * source shares (a coroutine stack many tasks await through, the strings of one code object)
 * is shared in the copy too, and copied once. */
struct seen {
    const void *from;
    size_t n;
    bool frames; /* an array of frames, else a string */
    const void *to;
};

struct copier {
    struct snapshot *d;
    struct seen *slots; /* open addressing; FROM NULL: empty */
    size_t cap;
    size_t used;
};

static size_t slot_of(const struct copier *c, const void *from, size_t n, bool frames)
{
    uint64_t h = ((uint64_t)(uintptr_t)from ^ ((uint64_t)n << 40)) * 0x9e3779b97f4a7c15ULL;
    size_t i = (size_t)(h >> 20) & (c->cap - 1);
    while (c->slots[i].from != NULL &&
           (c->slots[i].from != from || c->slots[i].n != n || c->slots[i].frames != frames)) {
        i = (i + 1) & (c->cap - 1);
    }
    return i;
}

static const void *seen_find(const struct copier *c, const void *from, size_t n, bool frames)
{
    return c->cap > 0 ? c->slots[slot_of(c, from, n, frames)].to : NULL;
}

/* Remembers that FROM (N) was copied to TO. Out of memory only costs sharing. */
static void seen_add(struct copier *c, const void *from, size_t n, bool frames, const void *to)
{
    if ((c->used + 1) * 2 > c->cap) {
        size_t cap = c->cap > 0 ? c->cap * 2 : 256;
        struct seen *slots = calloc(cap, sizeof *slots);
        if (slots == NULL) {
            return;
        }
        struct copier bigger = {c->d, slots, cap, c->used};
        for (size_t i = 0; i < c->cap; i++) {
            if (c->slots[i].from != NULL) {
                const struct seen *e = &c->slots[i];
                slots[slot_of(&bigger, e->from, e->n, e->frames)] = *e;
            }
        }
        free(c->slots);
        *c = bigger;
    }
    c->slots[slot_of(c, from, n, frames)] = (struct seen){from, n, frames, to};
    c->used++;
}

/* Copies STR into the copy's arena; an unknown string stays unknown. False on out of memory. */
static bool copy_str(struct copier *c, struct snap_str *out, struct snap_str str)
{
    if (str.ptr == NULL) {
        *out = str;
        return true;
    }
    const char *to = seen_find(c, str.ptr, str.len, false);
    if (to != NULL) {
        *out = (struct snap_str){to, str.len};
        return true;
    }
    *out = snapshot_strdup(c->d, str.ptr, str.len);
    if (out->ptr == NULL) {
        return false;
    }
    seen_add(c, str.ptr, str.len, false, out->ptr);
    return true;
}

/* A copy of FRAMES[0..N) (NULL stays NULL), made once however often it is shared. */
static struct snap_frame *copy_frames(struct copier *c, const struct snap_frame *frames, size_t n,
                                      bool *ok)
{
    if (frames == NULL) {
        return NULL;
    }
    struct snap_frame *out = (struct snap_frame *)seen_find(c, frames, n, true);
    if (out != NULL) {
        return out;
    }
    out = snapshot_alloc_array(c->d, n > 0 ? n : 1, sizeof *out);
    if (out == NULL) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct snap_frame *f = &frames[i];
        out[i] = *f;
        if (!copy_str(c, &out[i].function, f->function) || !copy_str(c, &out[i].name, f->name) ||
            !copy_str(c, &out[i].file, f->file)) {
            *ok = false;
            return NULL;
        }
    }
    seen_add(c, frames, n, true, out);
    return out;
}

static bool copy_thread(struct copier *c, struct snap_thread *out, const struct snap_thread *t)
{
    bool ok = true;
    *out = *t;
    out->frames = t->n_frames > 0 ? copy_frames(c, t->frames, t->n_frames, &ok) : NULL;
    const struct snap_wait *w = &t->wait;
    return ok && copy_str(c, &out->name, t->name) && copy_str(c, &out->wait.syscall, w->syscall) &&
           copy_str(c, &out->wait.object, w->object) &&
           copy_str(c, &out->wait.variable, w->variable) && copy_str(c, &out->wait.via, w->via) &&
           copy_str(c, &out->wait.reason, w->reason);
}

static bool copy_deadlocks(struct snapshot *d, const struct snapshot *s)
{
    d->deadlocks = snapshot_alloc_array(d, s->n_deadlocks, sizeof *d->deadlocks);
    if (d->deadlocks == NULL) {
        return false;
    }
    for (size_t i = 0; i < s->n_deadlocks; i++) {
        const struct snap_deadlock *from = &s->deadlocks[i];
        struct snap_deadlock *to = &d->deadlocks[i];
        to->threads = snapshot_alloc_array(d, from->n, sizeof *to->threads);
        to->locks = snapshot_alloc_array(d, from->n, sizeof *to->locks);
        if (to->threads == NULL || to->locks == NULL) {
            return false;
        }
        memcpy(to->threads, from->threads, from->n * sizeof *to->threads);
        memcpy(to->locks, from->locks, from->n * sizeof *to->locks);
        to->n = from->n;
        d->n_deadlocks = i + 1;
    }
    return true;
}

static bool copy_task(struct copier *c, struct snap_task *out, const struct snap_task *t)
{
    bool ok = true;
    *out = *t;
    out->frames = copy_frames(c, t->frames, t->n_frames, &ok);
    out->awaited_by = NULL;
    if (!ok || !copy_str(c, &out->name, t->name)) {
        return false;
    }
    if (t->awaited_by == NULL) {
        return true;
    }
    size_t n = t->n_awaited_by;
    out->awaited_by = snapshot_alloc_array(c->d, n > 0 ? n : 1, sizeof *out->awaited_by);
    if (out->awaited_by == NULL) {
        return false;
    }
    for (size_t i = 0; ok && i < n; i++) {
        const struct snap_task_awaiter *a = &t->awaited_by[i];
        out->awaited_by[i] = *a;
        out->awaited_by[i].frames = copy_frames(c, a->frames, a->n_frames, &ok);
    }
    return ok;
}

static bool copy_interp(struct copier *c, struct snap_interp *out, const struct snap_interp *in)
{
    struct snapshot *d = c->d;
    *out = *in;
    out->threads = NULL;
    out->gc.generations = NULL;
    out->tasks = NULL;
    if (in->threads != NULL && in->n_threads > 0) {
        out->threads = snapshot_alloc_array(d, in->n_threads, sizeof *out->threads);
        if (out->threads == NULL) {
            return false;
        }
        for (size_t i = 0; i < in->n_threads; i++) {
            if (!copy_thread(c, &out->threads[i], &in->threads[i])) {
                return false;
            }
        }
    }
    if (in->gc.generations != NULL && in->gc.n_generations > 0) {
        size_t n = in->gc.n_generations;
        out->gc.generations = snapshot_alloc_array(d, n, sizeof *out->gc.generations);
        if (out->gc.generations == NULL) {
            return false;
        }
        memcpy(out->gc.generations, in->gc.generations, n * sizeof *in->gc.generations);
    }
    out->gc.recent = NULL;
    if (in->gc.recent != NULL && in->gc.n_recent > 0) {
        size_t n = in->gc.n_recent;
        out->gc.recent = snapshot_alloc_array(d, n, sizeof *out->gc.recent);
        if (out->gc.recent == NULL) {
            return false;
        }
        memcpy(out->gc.recent, in->gc.recent, n * sizeof *in->gc.recent);
    }
    if (in->tasks != NULL && in->n_tasks > 0) {
        out->tasks = snapshot_alloc_array(d, in->n_tasks, sizeof *out->tasks);
        if (out->tasks == NULL) {
            return false;
        }
        for (size_t i = 0; i < in->n_tasks; i++) {
            if (!copy_task(c, &out->tasks[i], &in->tasks[i])) {
                return false;
            }
        }
    }
    return true;
}

struct snapshot *snapcopy_all(const struct snapshot *s, struct pt_error *err)
{
    struct copier c = {snapshot_new(err), NULL, 0, 0};
    struct snapshot *d = c.d;
    if (d == NULL) {
        return NULL;
    }
    d->pid = s->pid;
    d->started = s->started;
    d->cmdline_cut = s->cmdline_cut;
    d->time = s->time;
    d->python = s->python;
    bool ok = copy_str(&c, &d->python.version, s->python.version) &&
              copy_str(&c, &d->python.binary, s->python.binary);
    if (ok && s->cmdline != NULL) {
        d->cmdline =
            snapshot_alloc_array(d, s->n_cmdline > 0 ? s->n_cmdline : 1, sizeof *d->cmdline);
        ok = d->cmdline != NULL;
        d->n_cmdline = ok ? s->n_cmdline : 0;
        for (size_t i = 0; ok && i < s->n_cmdline; i++) {
            ok = copy_str(&c, &d->cmdline[i], s->cmdline[i]);
        }
    }
    if (ok && s->interps != NULL && s->n_interps > 0) {
        d->interps = snapshot_alloc_array(d, s->n_interps, sizeof *d->interps);
        ok = d->interps != NULL;
        d->n_interps = ok ? s->n_interps : 0;
        for (size_t i = 0; ok && i < s->n_interps; i++) {
            ok = copy_interp(&c, &d->interps[i], &s->interps[i]);
        }
    }
    d->waits_present = s->waits_present;
    if (ok && s->n_deadlocks > 0) {
        ok = copy_deadlocks(d, s);
    }
    if (ok && s->warnings != NULL && s->n_warnings > 0) {
        d->warnings = snapshot_alloc_array(d, s->n_warnings, sizeof *d->warnings);
        ok = d->warnings != NULL;
        d->n_warnings = ok ? s->n_warnings : 0;
        for (size_t i = 0; ok && i < s->n_warnings; i++) {
            ok = copy_str(&c, &d->warnings[i], s->warnings[i]);
        }
    }
    free(c.slots);
    if (!ok) {
        snapshot_free(d);
        pt_error_set(err, PT_E_NOMEM, 0, "copying a snapshot");
        return NULL;
    }
    return d;
}
