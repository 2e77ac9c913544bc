/* snapshot_fixture: the snapshots test_snapshot and test_snapshot_write are built from. */
#ifndef PYTOP_TESTS_UNIT_SNAPSHOT_FIXTURE_H
#define PYTOP_TESTS_UNIT_SNAPSHOT_FIXTURE_H

#include <stddef.h>
#include <sys/types.h>

#include "core/model/snapshot.h"

struct snap_str str(const char *c);
struct snap_frame py_frame(const char *function, const char *file, int line);
/* A thread with no name and no frames, known to be doing nothing. */
struct snap_thread idle_thread(pid_t tid);
/* A snapshot of N_INTERPS interpreters holding N_THREADS idle threads each, no frames (and
 * "tasks" null). */
struct snapshot *bare_snapshot(size_t n_interps, size_t n_threads);
/* Every interpreter of S read with no asyncio tasks (an empty list, not null). */
void no_tasks(struct snapshot *s);
void give_frames(struct snapshot *s, struct snap_thread *t, size_t n);
void give_gc(struct snapshot *s, struct snap_interp *in);
/* The snapshot DESIGN.md shows. */
struct snapshot *design_snapshot(void);

#endif
