/* read-floor: what the reads of pytop's samples cost alone. Takes a few samples of a live
 * target, records the regions one warm sample read, then reads those same regions through the
 * same read layer (batched and merged as a sample's reads are) at RATE a second for SECONDS,
 * doing nothing else, and prints the CPU that took as a share of one core and per round. RATE
 * "max" reads round after round without sleeping. Set beside pytop's own figures (bench/run,
 * sections 1 and 2), it tells what any reader that reads every thread's state and stack each
 * sample pays before it does anything with them. */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/walk/unwind.h"

struct regions {
    struct proc_iov *v;
    size_t n;
    size_t cap;
    size_t bytes;
};

static int keep_region(void *ctx, uint64_t addr, size_t len)
{
    struct regions *r = ctx;
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 1024;
        struct proc_iov *fresh = realloc(r->v, ncap * sizeof *fresh);
        if (fresh == NULL) {
            return 1;
        }
        r->v = fresh;
        r->cap = ncap;
    }
    r->v[r->n++] = (struct proc_iov){addr, NULL, len};
    r->bytes += len;
    return 0;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: read-floor PID RATE SECONDS\n");
        return 2;
    }
    struct pt_error err = {0};
    struct runtime rt;
    bool max = strcmp(argv[2], "max") == 0;
    double rate = max ? 1.0 : atof(argv[2]);
    double seconds = atof(argv[3]);
    if (!(rate > 0 && rate <= 100000) || !(seconds > 0 && seconds <= 3600)) {
        fprintf(stderr, "read-floor: RATE or SECONDS out of range\n");
        return 2;
    }
    struct proc *p = proc_open((pid_t)atoi(argv[1]), &err);
    struct unwind *u = NULL;
    if (p == NULL || runtime_locate(p, &rt, &err) < 0 || (u = unwind_new(p, &rt, &err)) == NULL) {
        fprintf(stderr, "read-floor: %s\n", err.msg);
        return 1;
    }
    /* Warm: the code cache full, the hints and read orders as a running sampler has them. */
    for (int i = 0; i < 20; i++) {
        if (unwind_sample(u, &err) == NULL) {
            fprintf(stderr, "read-floor: %s\n", err.msg);
            return 1;
        }
    }
    struct regions r = {0};
    proc_readahead_begin(p);
    bool ok = unwind_sample(u, &err) != NULL;
    proc_readahead_each(p, keep_region, &r);
    proc_readahead_end(p);
    unwind_free(u);
    if (!ok || r.n == 0) {
        fprintf(stderr, "read-floor: %s\n", ok ? "the sample read nothing" : err.msg);
        return 1;
    }
    uint8_t *buf = malloc(r.bytes);
    if (buf == NULL) {
        fprintf(stderr, "read-floor: out of memory\n");
        return 1;
    }
    size_t at = 0;
    for (size_t i = 0; i < r.n; i++) {
        r.v[i].dst = buf + at;
        at += r.v[i].len;
    }
    struct proc_counters c0 = proc_get_counters(p);
    double cpu0 = cpu_seconds();
    struct timespec tick;
    clock_gettime(CLOCK_MONOTONIC, &tick);
    double end = (double)tick.tv_sec + (double)tick.tv_nsec / 1e9 + seconds;
    long period = (long)(1e9 / rate);
    long rounds = max ? LONG_MAX : (long)(seconds * rate);
    long done = 0;
    long failed = 0;
    for (; done < rounds; done++) {
        for (size_t i = 0; i < r.n; i += PROC_IOV_MAX) {
            size_t m = r.n - i < PROC_IOV_MAX ? r.n - i : PROC_IOV_MAX;
            failed += proc_read_many(p, r.v + i, m, NULL) < 0;
        }
        if (max) {
            /* The clock read every 64 rounds: its cost stays out of the figure. */
            struct timespec now;
            if (done % 64 == 63 && clock_gettime(CLOCK_MONOTONIC, &now) == 0 &&
                (double)now.tv_sec + (double)now.tv_nsec / 1e9 >= end) {
                done++;
                break;
            }
            continue;
        }
        tick.tv_nsec += period;
        while (tick.tv_nsec >= 1000000000L) {
            tick.tv_nsec -= 1000000000L;
            tick.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL);
    }
    double cpu = cpu_seconds() - cpu0;
    struct proc_counters c1 = proc_get_counters(p);
    printf("{\"regions\": %zu, \"bytes\": %zu, \"reads\": %.2f, \"rounds\": %ld, \"failed\": %ld, "
           "\"cpu_percent\": %.2f, \"us_per_round\": %.2f}\n",
           r.n, r.bytes, done ? (double)(c1.syscalls - c0.syscalls) / (double)done : 0.0, done,
           failed, cpu / seconds * 100.0, done ? cpu / (double)done * 1e6 : 0.0);
    free(buf);
    free(r.v);
    proc_close(p);
    return 0;
}
