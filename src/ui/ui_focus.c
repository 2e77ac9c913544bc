/* ui_focus: which threads the Functions view counts (the one chosen with t, else the threads
 * the filter names, else all), and what the sampling thread was asked for them. */
#include "config.h"

#include "ui/ui_focus.h"

#include <string.h>

#include "core/model/snapshot.h"
#include "ui/ui_text.h"

static bool same_key(const struct sampler_thread_key *a, const struct sampler_thread_key *b)
{
    return a->interp_id == b->interp_id && a->tid == b->tid && a->thread_id == b->thread_id;
}

bool ui_focus_answered(const struct ui_focus *fo, const struct live_frame *f)
{
    if (fo->n_asked == 0 || f->n_focus != fo->n_asked) {
        return false;
    }
    for (size_t i = 0; i < fo->n_asked; i++) {
        if (!same_key(&f->focus_keys[i], &fo->asked[i])) {
            return false;
        }
    }
    return true;
}

bool ui_focus_update(struct ui_focus *fo, const struct snapshot *s, const char *filter,
                     struct live *l)
{
    struct sampler_thread_key want[LIVE_FOCUS_MAX];
    size_t n = 0;
    fo->n_named = 0;
    for (size_t i = 0; filter[0] != '\0' && s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            const struct snap_thread *t = &s->interps[i].threads[j];
            if (t->name.ptr == NULL || !ui_text_match(filter, t->name)) {
                continue;
            }
            if (fo->n_named++ < LIVE_FOCUS_MAX && fo->tid == 0) {
                want[n++] = (struct sampler_thread_key){s->interps[i].id, t->tid, t->thread_id};
            }
        }
    }
    if (fo->tid != 0) {
        want[0] = fo->key;
        n = 1;
    }
    bool same = n == fo->n_asked;
    for (size_t i = 0; same && i < n; i++) {
        same = same_key(&want[i], &fo->asked[i]);
    }
    if (same) {
        return false;
    }
    memcpy(fo->asked, want, n * sizeof *want);
    fo->n_asked = n;
    live_focus(l, want, n);
    return true;
}

pid_t ui_focus_toggle(struct ui_focus *fo, const struct snapshot *s, pid_t tid)
{
    for (size_t i = 0; fo->tid == 0 && tid != 0 && s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            const struct snap_thread *t = &s->interps[i].threads[j];
            if (t->tid == tid) {
                fo->key = (struct sampler_thread_key){s->interps[i].id, t->tid, t->thread_id};
                fo->tid = tid;
                return tid;
            }
        }
    }
    fo->tid = 0;
    return 0;
}
