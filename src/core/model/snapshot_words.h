/* snapshot_words: the words a snapshot's states and special frames are shown with, the same in every
 * writer and view. */
#ifndef PYTOP_CORE_SNAPSHOT_WORDS_H
#define PYTOP_CORE_SNAPSHOT_WORDS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model/snapshot.h"

/* "<native>", "<GC>", "<shim>" or "<unreadable frame>": how a frame the interpreter itself
 * marks, or one pytop could not read, is shown. */
const char *snapshot_frame_label(enum snap_frame_kind kind);
/* Why a frame could not be read, in words ("stack changed while read"). */
const char *snapshot_unreadable_reason(enum snap_unreadable why);
/* "<unreadable frame: stack changed while read>": the function an unreadable frame is counted
 * and shown as. */
const char *snapshot_unreadable_label(enum snap_unreadable why);
/* How a frame that is not Python code is shown: snapshot_frame_label() of its kind, or for an
 * unreadable frame snapshot_unreadable_label() of its reason. */
const char *snapshot_frame_title(const struct snap_frame *f);
/* Whether such a frame's function says more than its title (the <GC> frame's does not). */
bool snapshot_frame_named(const struct snap_frame *f);

/* The words for a thread's state: the one list the text dump, the stack titles and the Threads
 * view's STATE column all say it with. */
enum snap_state {
    SNAP_STATE_MAIN,      /* "main thread" (no brief word: the view has a row per thread) */
    SNAP_STATE_GIL,       /* "has GIL" / "GIL" */
    SNAP_STATE_WAIT_GIL,  /* "waiting for GIL" / "wait GIL": known to want it (3.15+) */
    SNAP_STATE_ON_CPU,    /* "on CPU" / "CPU" */
    SNAP_STATE_IDLE,      /* "idle": off CPU, no GIL, and known not to want it (3.15+) */
    SNAP_STATE_NO_GIL,    /* "no GIL": off CPU and no GIL, but whether it waits for the GIL
                           * is not known (before 3.15): idle or a thread between turns */
    SNAP_STATE_IN_GC,     /* "in GC" / "GC" */
    SNAP_STATE_EXCEPTION, /* "has exception" / "exc" */
    SNAP_STATE_COUNT,
};

/* The states T is known to be in, in the order above, into OUT; returns how many. A flag that
 * is unknown gives no word: "idle" only when each of the GIL, the wish for it and the CPU is
 * known, "no GIL" where only the wish is not. */
size_t snapshot_thread_states(const struct snap_thread *t, enum snap_state out[SNAP_STATE_COUNT]);

/* The word for STATE: as CPython's tools word it ("has GIL", "waiting for GIL"), or BRIEF for a
 * table column ("GIL", "wait GIL"); NULL where there is none (SNAP_STATE_MAIN's brief). */
const char *snapshot_state_word(enum snap_state state, bool brief);

/* The long words of T's states joined by ", " ("main thread, has GIL, on CPU"), or the brief
 * ones joined by " " ("GIL CPU"), into BUF (NUL-terminated, truncated to SIZE); may be empty. */
void snapshot_thread_state_text(const struct snap_thread *t, bool brief, char *buf, size_t size);

/* snapshot_thread_state_text(T, false, ...): the words of the text dump's thread header. */
void snapshot_thread_state_words(const struct snap_thread *t, char *buf, size_t size);

/* "lock", "gil", "io", "sleep", "running", "unknown": the JSON word for a wait's kind; NULL for
 * SNAP_WAIT_NONE. */
const char *snapshot_wait_kind_name(enum snap_wait_kind kind);

/* What thread T of S waits for, in words, into BUF (NUL-terminated, truncated to SIZE; empty
 * when not read): "RLock 0x7f3a2c1b40 (other) held by rl-b (4242), for 12.3 s", "GIL held by
 * busy-1 (4250) for 3.0 s" (how long the holder has held it, when known), "recvfrom fd 7:
 * socket TCP 127.0.0.1:5000->127.0.0.1:43122", "sleep, 0.8 s left". BRIEF leaves out lock
 * addresses, descriptor numbers and tids (the Threads view's WAIT column). Target strings are
 * copied as bytes: the caller escapes. */
void snapshot_wait_text(const struct snapshot *s, const struct snap_thread *t, bool brief,
                        char *buf, size_t size);

/* The thread of S whose kernel tid is TID; NULL when none. */
const struct snap_thread *snapshot_find_thread(const struct snapshot *s, pid_t tid);

/* The word for a task's state, as asyncio says it: "pending", "cancelled", "finished"; NULL
 * when unknown. */
const char *snapshot_task_state_name(enum snap_task_state state);

/* A task with no name (asyncio gave tasks none before 3.8; or its name could not be read) is
 * shown by its coroutine's function, the outermost frame of its coroutine stack, the way
 * asyncio's repr of a task names it: "coro=FUNCTION()", SNAPSHOT_TASK_CORO_OPEN, the function,
 * SNAPSHOT_TASK_CORO_CLOSE. True with *FUNCTION set when T has no name and such a frame; false
 * when T has a name (shown as it is) or nothing to show it by ("?"). JSON keeps the name null. */
bool snapshot_task_coro_label(const struct snap_task *t, struct snap_str *function);
extern const char SNAPSHOT_TASK_CORO_OPEN[];
extern const char SNAPSHOT_TASK_CORO_CLOSE[];

#endif
