/* ui_focus: which threads the Functions view counts (the one chosen with t, else the threads
 * the filter names, else all), and what the sampling thread was asked for them. */
#ifndef PYTOP_UI_UI_FOCUS_H
#define PYTOP_UI_UI_FOCUS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/sampler/sampler.h"
#include "app/live.h"

struct snapshot;

struct ui_focus {
    pid_t tid;                                       /* chosen with t; 0 none */
    struct sampler_thread_key key;                   /* the thread TID, as the sampler knows it */
    size_t n_named;                                  /* threads of the picture the filter names */
    struct sampler_thread_key asked[LIVE_FOCUS_MAX]; /* what the sampling thread was last asked */
    size_t n_asked;
};

/* Works out the threads from the picture S and FILTER (the first LIVE_FOCUS_MAX it names), and
 * asks L for their functions when they changed. Returns true when they did. */
bool ui_focus_update(struct ui_focus *fo, const struct snapshot *s, const char *filter,
                     struct live *l);

/* True when F counted the functions of the threads last asked for. */
bool ui_focus_answered(const struct ui_focus *fo, const struct live_frame *f);

/* t: the thread TID of the picture S alone, or (when one was chosen, or TID is not in S) all
 * threads again. Returns the thread chosen; 0 none. */
pid_t ui_focus_toggle(struct ui_focus *fo, const struct snapshot *s, pid_t tid);

#endif
