/* snapcopy: deep copies of a snapshot, in an arena of their own. */
#include "config.h"

#include "snapcopy.h"

#include <stdbool.h>
#include <string.h>

#include "core/error.h"
#include "core/snapshot.h"

/* Copies STR into D's arena; an unknown string stays unknown. False on out of memory. */
static bool copy_str(struct snapshot *d, struct snap_str *out, struct snap_str str)
{
    *out = str.ptr == NULL ? str : snapshot_strdup(d, str.ptr, str.len);
    return str.ptr == NULL || out->ptr != NULL;
}

static bool copy_thread(struct snapshot *d, struct snap_thread *out, const struct snap_thread *t)
{
    *out = *t;
    out->frames = NULL;
    if (!copy_str(d, &out->name, t->name)) {
        return false;
    }
    if (t->n_frames == 0) {
        return true;
    }
    out->frames = snapshot_alloc_array(d, t->n_frames, sizeof *out->frames);
    if (out->frames == NULL) {
        return false;
    }
    for (size_t i = 0; i < t->n_frames; i++) {
        const struct snap_frame *f = &t->frames[i];
        struct snap_frame *g = &out->frames[i];
        *g = *f;
        if (!copy_str(d, &g->function, f->function) || !copy_str(d, &g->name, f->name) ||
            !copy_str(d, &g->file, f->file)) {
            return false;
        }
    }
    return true;
}

static bool copy_interp(struct snapshot *d, struct snap_interp *out, const struct snap_interp *in)
{
    *out = *in;
    out->threads = NULL;
    out->gc.generations = NULL;
    /* TODO(#5): copy the task graph too; until then a copy says nothing of tasks. */
    out->tasks_present = false;
    out->tasks = NULL;
    out->n_tasks = 0;
    if (in->n_threads > 0) {
        out->threads = snapshot_alloc_array(d, in->n_threads, sizeof *out->threads);
        if (out->threads == NULL) {
            return false;
        }
        for (size_t i = 0; i < in->n_threads; i++) {
            if (!copy_thread(d, &out->threads[i], &in->threads[i])) {
                return false;
            }
        }
    }
    if (in->gc.n_generations > 0) {
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
    return true;
}

/* A new snapshot with S's process-wide fields (pid, time, python) and nothing else. */
static struct snapshot *copy_head(const struct snapshot *s, struct pt_error *err)
{
    struct snapshot *d = snapshot_new(err);
    if (d == NULL) {
        return NULL;
    }
    d->pid = s->pid;
    d->time = s->time;
    d->python = s->python;
    if (!copy_str(d, &d->python.version, s->python.version) ||
        !copy_str(d, &d->python.binary, s->python.binary)) {
        snapshot_free(d);
        pt_error_set(err, PT_E_NOMEM, 0, "copying a snapshot");
        return NULL;
    }
    return d;
}

struct snapshot *snapcopy_all(const struct snapshot *s, struct pt_error *err)
{
    struct snapshot *d = copy_head(s, err);
    if (d == NULL) {
        return NULL;
    }
    bool ok = true;
    if (s->n_interps > 0) {
        d->interps = snapshot_alloc_array(d, s->n_interps, sizeof *d->interps);
        ok = d->interps != NULL;
        d->n_interps = ok ? s->n_interps : 0;
        for (size_t i = 0; ok && i < s->n_interps; i++) {
            ok = copy_interp(d, &d->interps[i], &s->interps[i]);
        }
    }
    if (ok && s->n_warnings > 0) {
        d->warnings = snapshot_alloc_array(d, s->n_warnings, sizeof *d->warnings);
        ok = d->warnings != NULL;
        d->n_warnings = ok ? s->n_warnings : 0;
        for (size_t i = 0; ok && i < s->n_warnings; i++) {
            ok = copy_str(d, &d->warnings[i], s->warnings[i]);
        }
    }
    if (!ok) {
        snapshot_free(d);
        pt_error_set(err, PT_E_NOMEM, 0, "copying a snapshot");
        return NULL;
    }
    return d;
}
