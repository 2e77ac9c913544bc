/* snapshot-cost: what one full snapshot of a live target costs pytop's core, cold and warm
 * (with --tasks: the asyncio task graph too, as the live view reads it once per refresh). */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"
#include "core/walk/unwind.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t count_frames(const struct snapshot *s, size_t *threads)
{
    size_t frames = 0;
    *threads = 0;
    for (size_t i = 0; i < s->n_interps; i++) {
        *threads += s->interps[i].n_threads;
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            frames += s->interps[i].threads[j].n_frames;
        }
    }
    return frames;
}

int main(int argc, char **argv)
{
    struct pt_error err = {0};
    struct runtime rt;
    memory_keep_freed(); /* as pytop does */
    bool tasks = argc > 1 && strcmp(argv[1], "--tasks") == 0;
    argv += tasks;
    argc -= tasks;
    if (argc < 2) {
        fprintf(stderr, "usage: snapshot-cost [--tasks] PID [WARM_SNAPSHOTS]\n");
        return 2;
    }
    int warm = argc > 2 ? atoi(argv[2]) : 1000;
    struct proc *p = proc_open((pid_t)atoi(argv[1]), &err);
    struct unwind *u = NULL;
    if (p == NULL || runtime_locate(p, &rt, &err) < 0 || (u = unwind_new(p, &rt, &err)) == NULL) {
        fprintf(stderr, "snapshot-cost: %s\n", err.msg);
        return 1;
    }
    unwind_set_tasks(u, tasks);
    struct proc_counters c0 = proc_get_counters(p);
    double t0 = now();
    struct snapshot *s = unwind_snapshot(u, &err);
    double t1 = now();
    struct proc_counters c1 = proc_get_counters(p);
    if (s == NULL) {
        fprintf(stderr, "snapshot-cost: %s\n", err.msg);
        return 1;
    }
    size_t threads;
    size_t frames = count_frames(s, &threads);
    snapshot_free(s);
    for (int i = 0; i < warm; i++) {
        s = unwind_snapshot(u, &err);
        if (s == NULL) {
            fprintf(stderr, "snapshot-cost: %s\n", err.msg);
            return 1;
        }
        snapshot_free(s);
    }
    double t2 = now();
    struct proc_counters c2 = proc_get_counters(p);
    printf("{\"python\": \"%s\", \"threads\": %zu, \"frames\": %zu, "
           "\"cold\": {\"reads\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"ms\": %.3f}, "
           "\"warm\": {\"reads\": %.2f, \"bytes\": %.0f, \"us\": %.1f}}\n",
           rt.version, threads, frames, c1.syscalls - c0.syscalls, c1.bytes - c0.bytes,
           (t1 - t0) * 1e3, (double)(c2.syscalls - c1.syscalls) / warm,
           (double)(c2.bytes - c1.bytes) / warm, (t2 - t1) * 1e6 / warm);
    unwind_free(u);
    proc_close(p);
    return 0;
}
