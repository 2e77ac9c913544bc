/* proc_pause: --blocking on Linux: every thread of the target seized and stopped with ptrace
 * while it is read, and let go afterwards with the signals it was about to take. */
#include "config.h"

#include "core/target/proc.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc_linux.h"

enum {
    PAUSE_ROUNDS = 16,   /* task-list passes before proc_pause() gives up on new threads */
    REAP_PERIOD_MS = 20, /* how long a pause lasts before the reaper looks (pause_state) */
    STOP_WAIT_MS = 1000, /* how long wait_for_stop() waits for a thread to stop */
    STOP_RETRY_MS = 10,  /* how often it interrupts the thread again */
    STOP_SPINS = 1000,   /* how many times it yields the CPU before it naps instead */
};

/* A thread proc_pause() stopped. SIG is the signal it was about to take when it stopped
 * (a signal-delivery-stop); detaching hands it back so the target never loses a signal.
 * TID comes first so that compare_pids() sorts and searches these as well. */
struct seized {
    pid_t tid;
    int sig;
};

struct pause_state {
    pid_t tids[LIMIT_TASKS];           /* the task list of the current pass */
    struct seized seized[LIMIT_TASKS]; /* the threads stopped so far, sorted after each pass */
    size_t nseized;
    /* A thread of pytop's own reaps the seized threads that exit while a pause lasts. A target
     * thread that exec()s kills the others and waits (holding the target's cred_guard_mutex)
     * until each is reaped; one we seized is ours to reap, and ptrace() cannot be interrupted
     * while it waits for that mutex to seize the next thread: without a second thread both
     * would wait for ever (fs/exec.c de_thread(), kernel/ptrace.c ptrace_attach()). */
    pthread_t reaper;
    bool reaper_started;
    pthread_mutex_t lock; /* guards SEIZED, NSEIZED and the members below */
    pthread_cond_t cond;
    uint64_t pause_no; /* counts the pauses; odd while one lasts */
    bool stop;
    /* Seized threads a resume could not detach because they were dying (killed while
     * stopped, as an exec kills them): still ours to reap once they are zombies. */
    pid_t dying[LIMIT_TASKS];
    size_t ndying;
};

/* Interrupts the seized thread TID and waits for its stop (or its end) into *STATUS. Returns
 * TID, -1 (no such child), or 0 when no stop came within STOP_WAIT_MS. An interrupt sent while
 * the thread exec()s can be lost (the seize waited for the exec to end), so it is sent again
 * every STOP_RETRY_MS; the thread gets the CPU first (sched_yield) for the common case. */
static pid_t wait_for_stop(pid_t tid, int *status)
{
    /* If this fails the thread is exiting, and waitpid reports that. */
    ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
    struct timespec start;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long last_ms = 0;
    for (unsigned spin = 0;; spin++) {
        pid_t w = waitpid(tid, status, __WALL | WNOHANG);
        if (w != 0 && !(w < 0 && errno == EINTR)) {
            return w;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (ms >= STOP_WAIT_MS) {
            return 0;
        }
        if (ms - last_ms >= STOP_RETRY_MS) {
            ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
            last_ms = ms;
        }
        if (spin < STOP_SPINS) {
            sched_yield();
        } else {
            struct timespec nap = {0, 200 * 1000};
            nanosleep(&nap, NULL);
        }
    }
}

/* Seizes and stops thread TID. Returns 1 when it is stopped (and recorded), 0 when it exited
 * or is a zombie, -1 on error. A seized thread is waited for before this returns, so every
 * recorded thread is stopped and can be detached. */
static int seize_thread(struct proc *p, pid_t tid, struct pt_error *err)
{
    struct pause_state *ps = p->pause;
    struct proc_task_stat st;
    int status;
    pid_t w;
    if (ps->nseized == LIMIT_TASKS) {
        return pt_error_set(err, PT_E_LIMIT, 0, "process %d has more than %d threads", (int)p->pid,
                            LIMIT_TASKS);
    }
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
        int e = errno;
        bool perm = e == EPERM || e == EACCES;
        /* Seizing a zombie thread (a main thread that exited before the others) gives EPERM. */
        if (e == ESRCH || proc_linux_read_stat(p->pid, tid, &st) < 0 || st.state == 'Z' ||
            st.state == 'X') {
            return 0;
        }
        return pt_error_set(err, perm ? PT_E_PERM : PT_E_IO, e,
                            "cannot pause thread %d of process %d: %s", (int)tid, (int)p->pid,
                            perm ? "not allowed, or already traced" : strerror(e));
    }
    if ((w = wait_for_stop(tid, &status)) == 0) {
        return pt_error_set(err, PT_E_IO, 0, "thread %d of process %d did not stop", (int)tid,
                            (int)p->pid);
    }
    if (w < 0 || !WIFSTOPPED(status)) {
        return 0;
    }
    /* status >> 16 is 0 only in a signal-delivery-stop; then the signal was dequeued. */
    int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
    pthread_mutex_lock(&ps->lock);
    ps->seized[ps->nseized++] = (struct seized){.tid = tid, .sig = sig};
    pthread_mutex_unlock(&ps->lock);
    return 1;
}

/* Reaps TID if it is a zombie we trace (waitid() WEXITED only: a stop is left to the pausing
 * thread). Returns true when it is gone: reaped now, or no child of ours any more. */
static bool reap_if_exited(pid_t tid)
{
    siginfo_t info = {0};
    int rc = waitid(P_PID, (id_t)tid, &info, WEXITED | WNOHANG | __WALL);
    return rc < 0 ? errno == ECHILD : info.si_pid == tid;
}

/* The reaper: each REAP_PERIOD_MS that a pause lasts or a dying thread waits, reaps the
 * seized and dying threads that exited. Idle otherwise. */
static void *reap_exited(void *arg)
{
    struct pause_state *ps = arg;
    pthread_mutex_lock(&ps->lock);
    while (!ps->stop) {
        if (ps->pause_no % 2 == 0 && ps->ndying == 0) {
            pthread_cond_wait(&ps->cond, &ps->lock);
            continue;
        }
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_nsec += REAP_PERIOD_MS * 1000000L;
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        uint64_t now = ps->pause_no;
        pthread_cond_timedwait(&ps->cond, &ps->lock, &at);
        if (ps->stop) {
            break;
        }
        for (size_t i = 0; now % 2 == 1 && ps->pause_no == now && i < ps->nseized; i++) {
            reap_if_exited(ps->seized[i].tid);
        }
        size_t kept = 0;
        for (size_t i = 0; i < ps->ndying; i++) {
            if (!reap_if_exited(ps->dying[i])) {
                ps->dying[kept++] = ps->dying[i];
            }
        }
        ps->ndying = kept;
    }
    pthread_mutex_unlock(&ps->lock);
    return NULL;
}

/* The pause state, with its reaper running (signals blocked there: they are the program's).
 * NULL when memory or a thread is lacking. */
static struct pause_state *pause_state_new(void)
{
    struct pause_state *ps = calloc(1, sizeof *ps);
    pthread_condattr_t ca;
    sigset_t all;
    sigset_t old;
    if (ps == NULL) {
        return NULL;
    }
    pthread_mutex_init(&ps->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ps->cond, &ca);
    pthread_condattr_destroy(&ca);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    ps->reaper_started = pthread_create(&ps->reaper, NULL, reap_exited, ps) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ps;
}

void proc_linux_pause_free(struct pause_state *ps)
{
    if (ps == NULL) {
        return;
    }
    if (ps->reaper_started) {
        pthread_mutex_lock(&ps->lock);
        ps->stop = true;
        pthread_cond_signal(&ps->cond);
        pthread_mutex_unlock(&ps->lock);
        pthread_join(ps->reaper, NULL);
    }
    pthread_cond_destroy(&ps->cond);
    pthread_mutex_destroy(&ps->lock);
    free(ps);
}

/* Marks a pause as begun (odd PAUSE_NO) or over (even), for the reaper. */
static void pause_mark(struct pause_state *ps)
{
    pthread_mutex_lock(&ps->lock);
    ps->pause_no++;
    pthread_cond_signal(&ps->cond);
    pthread_mutex_unlock(&ps->lock);
}

int proc_pause(struct proc *p, struct pt_error *err)
{
    if (p->paused) {
        return 0;
    }
    if (p->pid == getpid()) {
        return pt_error_set(err, PT_E_PERM, 0, "pytop cannot pause itself");
    }
    if (p->pause == NULL && (p->pause = pause_state_new()) == NULL) {
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for a thread list");
    }
    struct pause_state *ps = p->pause;
    p->paused = true;
    pause_mark(ps);
    /* A running thread may start another before it is stopped, so list the threads again
     * until a pass finds none still running; stopped threads cannot start any. */
    for (int round = 0; round < PAUSE_ROUNDS; round++) {
        size_t n;
        size_t sorted = ps->nseized;
        int added = 0;
        if (proc_tasks(p, ps->tids, LIMIT_TASKS, &n, err) < 0) {
            goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            int rc = 0;
            if (bsearch(&ps->tids[i], ps->seized, sorted, sizeof *ps->seized,
                        proc_linux_compare_pids) == NULL) {
                rc = seize_thread(p, ps->tids[i], err);
            }
            if (rc < 0) {
                goto fail;
            }
            added += rc;
        }
        pthread_mutex_lock(&ps->lock);
        qsort(ps->seized, ps->nseized, sizeof *ps->seized, proc_linux_compare_pids);
        pthread_mutex_unlock(&ps->lock);
        if (added == 0) {
            return 0;
        }
    }
    pt_error_set(err, PT_E_LIMIT, 0, "process %d kept starting threads while being paused",
                 (int)p->pid);
fail:
    proc_resume(p);
    return -1;
}

void proc_resume(struct proc *p)
{
    if (p == NULL || !p->paused) {
        return;
    }
    struct pause_state *ps = p->pause;
    pthread_mutex_lock(&ps->lock);
    for (size_t i = 0; i < ps->nseized; i++) {
        uintptr_t sig = (uintptr_t)ps->seized[i].sig;
        pid_t tid = ps->seized[i].tid;
        /* Killed while stopped: its zombie is reported to us, its tracer, to reap, now or
         * (still dying) by the reaper. */
        if (ptrace(PTRACE_DETACH, tid, NULL, (void *)sig) < 0 && errno == ESRCH &&
            !reap_if_exited(tid) && ps->ndying < LIMIT_TASKS) {
            ps->dying[ps->ndying++] = tid;
        }
    }
    ps->nseized = 0;
    pthread_mutex_unlock(&ps->lock);
    pause_mark(ps);
    p->paused = false;
}

