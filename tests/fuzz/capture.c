/* capture: takes a memory image (image.h) of a live Python for the walker fuzzer: the target
 * stands still while pytop locates its runtime, takes a snapshot with tasks and two samples,
 * and every region of memory those read (as the read-ahead recorded it) goes into the image.
 * Usage: capture PID OUT */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/asyncio/asyncdebug.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"
#include "core/walk/unwind.h"
#include "image.h"

struct taken {
    struct proc *p;
    struct image_region *r;
    size_t n;
    size_t cap;
};

/* Reads the region again (the target stands still) and keeps it; one that cannot be read
 * failed in the walk too, and stays out of the image as it was out of reach there. */
static int take(void *ctx, uint64_t addr, size_t len)
{
    struct taken *t = ctx;
    uint8_t *copy = malloc(len);
    if (copy == NULL) {
        return 1;
    }
    if (proc_read_bytes(t->p, addr, copy, len, NULL) < 0) {
        free(copy);
        return 0;
    }
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        struct image_region *fresh = realloc(t->r, ncap * sizeof *fresh);
        if (fresh == NULL) {
            free(copy);
            return 1;
        }
        t->r = fresh;
        t->cap = ncap;
    }
    t->r[t->n++] = (struct image_region){addr, len, copy};
    return 0;
}

/* What the walk since the last proc_readahead_begin() read, read again and kept. */
static void keep_read(struct proc *p, struct taken *t)
{
    proc_readahead_end(p);
    proc_readahead_each(p, take, t);
}

static int cmp_region(const void *a, const void *b)
{
    const struct image_region *x = a;
    const struct image_region *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Joins overlapping regions, so that each byte is in one region only. */
static void join(struct taken *t)
{
    qsort(t->r, t->n, sizeof *t->r, cmp_region);
    size_t m = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct image_region *last = m > 0 ? &t->r[m - 1] : NULL;
        if (last == NULL || t->r[i].addr > last->addr + last->len) {
            t->r[m++] = t->r[i];
            continue;
        }
        uint64_t end = t->r[i].addr + t->r[i].len;
        if (end > last->addr + last->len) {
            size_t len = (size_t)(end - last->addr);
            uint8_t *d = realloc((uint8_t *)last->data, len);
            if (d == NULL) {
                exit(1);
            }
            memcpy(d + (t->r[i].addr - last->addr), t->r[i].data, t->r[i].len);
            last->data = d;
            last->len = len;
        }
        free((uint8_t *)t->r[i].data);
    }
    t->n = m;
}

/* Locates the runtime, takes a snapshot with tasks and two samples, each phase's regions kept
 * in T. *U is the unwinder (NULL when the runtime was not found). NULL with ERR on failure. */
static struct snapshot *walk(struct proc *p, struct runtime *rt, struct taken *t,
                             struct unwind **u, struct pt_error *err)
{
    struct asyncdebug_offsets async;
    proc_readahead_begin(p);
    int rc = runtime_locate(p, rt, err);
    keep_read(p, t);
    *u = rc == 0 ? unwind_new(p, rt, err) : NULL;
    if (*u == NULL) {
        return NULL;
    }
    unwind_set_tasks(*u, true);
    unwind_set_opcodes(*u, true); /* the instructions' code units join the image */
    struct snapshot *s = unwind_snapshot(*u, err);
    keep_read(p, t);
    /* What tasks.c finds through the mapped files, which an image has not. */
    proc_readahead_begin(p);
    if (asyncdebug_locate(p, rt->binary, &async, NULL) == 1) {
        rt->asyncio_debug_addr = async.addr;
    }
    keep_read(p, t);
    proc_readahead_begin(p);
    unwind_sample(*u, NULL);
    unwind_sample(*u, NULL);
    keep_read(p, t);
    return s;
}

/* The target's threads and their states; NULL when out of memory. */
static struct image_thread *threads_of(struct proc *p, size_t *n)
{
    static pid_t tids[LIMIT_THREADS];
    *n = 0;
    proc_tasks(p, tids, LIMIT_THREADS, n, NULL);
    struct image_thread *threads = calloc(*n ? *n : 1, sizeof *threads);
    for (size_t i = 0; threads != NULL && i < *n; i++) {
        struct proc_task_stat st = {.state = 'S'};
        proc_task_stat(p, tids[i], &st, NULL);
        threads[i] = (struct image_thread){(uint32_t)tids[i], st.state};
    }
    return threads;
}

int main(int argc, char **argv)
{
    struct pt_error err = {0};
    struct runtime rt;
    struct taken t = {0};
    if (argc != 3) {
        fprintf(stderr, "usage: capture PID OUT\n");
        return 2;
    }
    struct proc *p = proc_open(atoi(argv[1]), &err);
    if (p == NULL || proc_pause(p, &err) < 0) {
        fprintf(stderr, "capture: %s\n", err.msg);
        return 1;
    }
    t.p = p;
    struct unwind *u = NULL;
    struct snapshot *s = walk(p, &rt, &t, &u, &err);
    size_t n_tids = 0;
    struct image_thread *threads = threads_of(p, &n_tids);
    proc_resume(p);
    if (s == NULL || threads == NULL) {
        fprintf(stderr, "capture: %s\n", err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    join(&t);
    struct image im = {
        /* runtime_size 0: the binary's st_size of _PyRuntime is not kept in RT. */
        .h = {rt.layout.hexversion, rt.anchor_addr, rt.code_type_addr, rt.none_addr, 0,
              rt.asyncio_debug_addr, rt.debug_build ? IMAGE_DEBUG_BUILD : 0, (uint32_t)proc_pid(p),
              .n_symbols = (uint32_t)rt.n_symbols},
        .threads = threads,
        .n_threads = n_tids,
        .regions = t.r,
        .n_regions = t.n,
    };
    memcpy(im.h.symbols, rt.symbols, sizeof im.h.symbols);
    FILE *f = fopen(argv[2], "wb");
    if (f == NULL || image_write(f, &im) < 0 || fclose(f) != 0) {
        fprintf(stderr, "capture: cannot write %s\n", argv[2]);
        return 1;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < t.n; i++) {
        bytes += t.r[i].len;
        free((uint8_t *)t.r[i].data);
    }
    printf("%s: Python %s, %zu threads, %zu regions, %zu bytes of memory\n", argv[2], rt.version,
           n_tids, t.n, bytes);
    free(t.r);
    free(threads);
    snapshot_free(s);
    unwind_free(u);
    proc_close(p);
    return 0;
}
