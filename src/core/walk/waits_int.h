/* waits_int.h: what waits.c, waits_lock.c and waits_sys.c share: the state kept from one
 * snapshot to the next, its limits, and small helpers. Not for use outside src/core/walk/waits*. */
#ifndef PYTOP_CORE_WAITS_INT_H
#define PYTOP_CORE_WAITS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/util/error.h"
#include "core/walk/waits.h"

struct proc_syscall;

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

static inline struct snap_str waits_text(struct snapshot *s, const char *t)
{
    return snapshot_strdup(s, t, strlen(t));
}

static inline uint64_t waits_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static inline uint64_t waits_mix_str(uint64_t h, struct snap_str str)
{
    for (size_t i = 0; str.ptr != NULL && i < str.len; i++) {
        h = waits_mix(h, (unsigned char)str.ptr[i]);
    }
    return h;
}

static inline bool waits_read_word(struct proc *p, uint64_t addr, uint64_t *v)
{
    struct pt_error e = {0};
    return addr != 0 && proc_read_bytes(p, addr, v, sizeof *v, &e) == 0;
}

/* waits_lock.c: the lock a thread asleep on futex word FUTEX waits for (which object, through
 * which variable, owned by whom) into T's wait; its identity goes into PD's key. */
void waits_set_lock(struct waits *w, struct proc *p, struct snapshot *s,
                    const struct waits_thread *t, uint64_t futex, struct pending *pd);

/* waits_sys.c: what the system call SC (no futex) waits on: a sleep, a descriptor or several, a
 * child. Fills OUT; what tells this wait from another goes into *KEY. */
void waits_read_syscall(struct waits *w, struct proc *p, struct snapshot *s,
                        const struct proc_syscall *sc, struct snap_wait *out, uint64_t *key);

#endif
