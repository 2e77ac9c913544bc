/* unwind: walk a target's interpreters, threads and frames into a snapshot. */
#ifndef PYTOP_CORE_UNWIND_H
#define PYTOP_CORE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

struct opcode_table;
struct proc;
struct py_layout;
struct runtime;
struct sample;
struct snapshot;
struct pt_error;

/* What the unwinder has read since it was made (DESIGN.md: the batch documents' "reader"). */
struct unwind_counters {
    uint64_t reads;          /* memory-read system calls */
    uint64_t bytes;          /* bytes read */
    uint64_t failed_reads;   /* batches that failed (and were read again another way) */
    uint64_t code_hits;      /* code objects served by the cache */
    uint64_t code_misses;    /* code objects read and decoded */
    uint64_t code_entries;   /* code objects cached now */
    uint64_t kept_stacks;    /* thread stacks kept, not read: the thread cannot have run */
};

struct unwind;

/* Prepares to walk the target P whose runtime RT was located; both must outlive the unwinder.
 * Errors: PT_E_NOMEM. */
struct unwind *unwind_new(struct proc *p, const struct runtime *rt, struct pt_error *err);
void unwind_free(struct unwind *u);

/* Takes one snapshot of every interpreter, thread and frame. Parts that cannot be read are
 * left unknown with a warning in the snapshot; the call fails only when nothing can be read
 * (PT_E_GONE, PT_E_PERM, PT_E_READ of the runtime itself, PT_E_NOMEM). The caller frees the
 * result with snapshot_free(). */
struct snapshot *unwind_snapshot(struct unwind *u, struct pt_error *err);

/* Fills S's "python" (version, build, binary) from the runtime RT located in the target: what a
 * snapshot says of the interpreter even when its threads could not be read. */
void unwind_name_python(const struct runtime *rt, struct snapshot *s);

/* Takes one compact sample (the hot path, DESIGN.md): every thread's status and frames as code
 * identities, no strings, no GC generations, no tasks, and no per-thread kernel state (on_cpu
 * is unknown). A steady sample allocates nothing and costs about two batched reads: one for
 * the runtime, interpreter and thread states, one for the stacks (and before 3.14 one more
 * that checks the code objects). Fails as unwind_snapshot() does. The result and everything
 * it points at stay valid until the next call on U. */
const struct sample *unwind_sample(struct unwind *u, struct pt_error *err);

struct unwind_counters unwind_get_counters(const struct unwind *u);

/* Whether snapshots also read the asyncio task graph (tasks_read_interp(); where it cannot be
 * read "tasks" stays null, with a warning that says why). Off by default (a snapshot then warns
 * that its tasks were not asked for). Samples never read it. */
void unwind_set_tasks(struct unwind *u, bool on);

/* Whether samples read only the stacks of threads holding the GIL (--active-only, and what
 * --mode gil counts): the others are listed with not_read set and no frames, their status read
 * as always. Threads whose holding cannot be told are read. Snapshots read every thread. Off by
 * default. */
void unwind_set_active_only(struct unwind *u, bool on);

/* Whether samples read only the thread state holding each interpreter's GIL, and its stack
 * (--active-only: CPython's only_active_thread, the cheap way on thousands of threads): the
 * other threads are not listed at all, and none while the GIL is free. Where the version does
 * not say who holds the GIL, the whole list is read as unwind_set_active_only() does.
 * Snapshots read every thread. Off by default. */
void unwind_set_holder_only(struct unwind *u, bool on);

/* Whether snapshots and samples list a frame of kind native ("<native>") where C code called
 * into Python: below each frame an entry shim follows in the chain, the chain going on (3.12+,
 * where the interpreter marks them; as CPython's RemoteUnwinder(native=True) places them), except
 * where a <GC> frame comes next. Off by default. */
void unwind_set_native(struct unwind *u, bool on);

/* Whether snapshots read the instruction each Python frame is at (--opcodes: the frames' op1
 * and op_offset, the snapshot's opcodes table). Off by default. */
void unwind_set_opcodes(struct unwind *u, bool on);

/* Whether snapshots and samples list a frame of kind gc (function "<GC>") above the frame that
 * started a running collection, where the interpreter marks it (3.15+). On by default; off
 * (--no-gc-frames), the thread's in_gc still says it collects. */
void unwind_set_gc_frames(struct unwind *u, bool on);

/* Whether U takes one snapshot and no other (a one-shot dump): then what a snapshot reads is
 * not recorded to be read ahead by the next (memory a one-shot run would only fill, hundreds
 * of kilobytes with a thousand tasks). Off by default. */
void unwind_set_once(struct unwind *u, bool on);

/* The layout of the version U reads (for code_offset_line() over a sample's frames). */
const struct py_layout *unwind_layout(const struct unwind *u);

/* The instruction table of the version U reads; NULL when none was generated for it. */
const struct opcode_table *unwind_opcode_table(const struct unwind *u);

/* Reads the bytecode of the code object at CODE_ADDR, as the interpreter holds it now
 * (specialised forms included), into BUF (CAP bytes): N_UNITS code units from 3.11 on (the
 * code cache's n_units), before as long as its co_code is. Returns the bytes read, or -1:
 * PT_E_READ, PT_E_FORMAT, PT_E_LIMIT (longer than CAP or LIMIT_OPCODE_BYTES). */
long unwind_read_bytecode(struct unwind *u, uint64_t code_addr, uint64_t n_units, uint8_t *buf,
                          size_t cap, struct pt_error *err);

#endif
