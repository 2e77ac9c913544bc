/* pthreadtid: kernel thread ids of threads whose thread states hold none (before 3.11). */
#include "config.h"

#include "core/target/pthreadtid.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"

enum {
    PTHREAD_SCAN = 2048, /* bytes of the main thread's struct pthread searched for its tid */
};

/* A thread's ident (its pthread_t) and the kernel id found in its struct pthread. */
struct tid_pair {
    uint64_t ident;
    pid_t tid;
};

struct pthreadtid {
    uint64_t tid_at;        /* where struct pthread keeps the tid; 0: not found yet */
    bool failed;            /* the search found no single candidate: give up */
    struct tid_pair *pairs; /* LIMIT_THREADS; what the last call confirmed, by ident */
    size_t n_pairs;
    pid_t *listed; /* LIMIT_THREADS; the process's threads, when listed */
    uint32_t raw[PROC_IOV_MAX];
};

struct pthreadtid *pthreadtid_new(void)
{
    struct pthreadtid *t = calloc(1, sizeof *t);
    if (t != NULL) {
        t->pairs = malloc((size_t)LIMIT_THREADS * sizeof *t->pairs);
        t->listed = malloc((size_t)LIMIT_THREADS * sizeof *t->listed);
    }
    if (t == NULL || t->pairs == NULL || t->listed == NULL) {
        pthreadtid_free(t);
        return NULL;
    }
    return t;
}

void pthreadtid_free(struct pthreadtid *t)
{
    if (t != NULL) {
        free(t->pairs);
        free(t->listed);
        free(t);
    }
}

/* The main thread's pthread_t points at its struct pthread, and its tid is the pid: the
 * offset must hold the pid exactly once in the searched span, or the guess is refused. */
static void find_tid_offset(struct pthreadtid *t, struct proc *p, uint64_t main_ident)
{
    uint8_t buf[PTHREAD_SCAN];
    uint32_t pid = (uint32_t)proc_pid(p);
    uint64_t found = 0;
    int hits = 0;
    /* Not known yet (before 3.7 the main thread's ident is set as the interpreter starts):
     * looked for again at the next call. */
    if (main_ident == 0) {
        return;
    }
    t->failed = true;
    if (proc_read_bytes(p, main_ident, buf, sizeof buf, NULL) < 0) {
        return;
    }
    for (uint64_t off = 0; off + 4 <= sizeof buf; off += 4) {
        uint64_t v;
        layout_read_uint(buf, sizeof buf, off, 4, &v);
        if (v == pid) {
            found = off;
            hits++;
        }
    }
    if (hits == 1) {
        t->tid_at = found;
        t->failed = false;
    }
}

static int cmp_pair(const void *a, const void *b)
{
    const struct tid_pair *x = a;
    const struct tid_pair *y = b;
    return x->ident < y->ident ? -1 : x->ident > y->ident;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a;
    pid_t y = *(const pid_t *)b;
    return x < y ? -1 : x > y;
}

static bool confirmed(const struct pthreadtid *t, uint64_t ident, uint32_t tid)
{
    struct tid_pair key = {ident, (pid_t)tid};
    const struct tid_pair *hit =
        t->n_pairs ? bsearch(&key, t->pairs, t->n_pairs, sizeof *t->pairs, cmp_pair) : NULL;
    return hit != NULL && (uint32_t)hit->tid == tid;
}

uint64_t pthreadtid_offset(const struct pthreadtid *t)
{
    return t != NULL && !t->failed ? t->tid_at : 0;
}

void pthreadtid_fill(struct pthreadtid *t, struct proc *p, uint64_t main_ident,
                     const uint64_t *idents, const uint32_t *pre, pid_t *tids, size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    size_t n_listed = 0;
    bool listed = false;
    for (size_t i = 0; i < n; i++) {
        tids[i] = 0;
    }
    if (t == NULL || n == 0) {
        return;
    }
    if (t->tid_at == 0 && !t->failed) {
        find_tid_offset(t, p, main_ident);
    }
    if (t->failed) {
        return;
    }
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t k = n - base < PROC_IOV_MAX ? n - base : PROC_IOV_MAX;
        size_t m = 0;
        for (size_t j = 0; j < k; j++) {
            t->raw[j] = pre != NULL ? pre[base + j] : 0;
            if (t->raw[j] == 0) {
                iov[m++] = (struct proc_iov){idents[base + j] + t->tid_at, &t->raw[j], 4};
            }
        }
        if (m > 0 && proc_read_many(p, iov, m, NULL) < 0) {
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            uint32_t tid = t->raw[j];
            if (tid == 0) {
                continue;
            }
            if (confirmed(t, idents[base + j], tid)) {
                tids[base + j] = (pid_t)tid;
                continue;
            }
            if (!listed) {
                listed = true;
                if (proc_tasks(p, t->listed, LIMIT_THREADS, &n_listed, NULL) < 0) {
                    n_listed = 0;
                }
            }
            pid_t want = (pid_t)tid;
            if (n_listed > 0 &&
                bsearch(&want, t->listed, n_listed, sizeof *t->listed, cmp_pid) != NULL) {
                tids[base + j] = want;
            }
        }
    }
    /* What this call confirmed is what the next one trusts. */
    t->n_pairs = 0;
    for (size_t i = 0; i < n && t->n_pairs < LIMIT_THREADS; i++) {
        if (tids[i] != 0) {
            t->pairs[t->n_pairs++] = (struct tid_pair){idents[i], tids[i]};
        }
    }
    qsort(t->pairs, t->n_pairs, sizeof *t->pairs, cmp_pair);
}
