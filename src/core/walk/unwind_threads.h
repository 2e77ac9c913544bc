/* unwind_threads: the start of a walk, for unwind.c only: the runtime, interpreter and
 * thread states, read in as few batched calls as the last walk allows, and the hints that
 * carry one walk's one-by-one reads over to the next. */
#ifndef PYTOP_CORE_UNWIND_THREADS_H
#define PYTOP_CORE_UNWIND_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/pyobj/codemark.h"
#include "core/walk/frames.h"
#include "core/walk/gc.h"
#include "core/walk/gcwatch.h"
#include "core/util/limits.h"
#include "core/walk/sample.h"
#include "core/model/snapshot.h"

struct code_cache;
struct gc_reader;
struct proc;
struct pthreadtid;
struct py_layout;
struct pt_error;
struct runtime;
struct tasks;
struct threadnames;

/* What one thread state says, and where its frames are. */
struct thread_ctx {
    uint64_t addr;
    uint64_t next;
    uint64_t interp; /* the interpreter the thread state names: its own, unless freed */
    uint64_t thread_id;
    uint64_t native_id;
    uint64_t cframe; /* the current _PyCFrame (3.11, 3.12); 0 otherwise */
    /* Kept from walk to walk, like FR: the _PyCFrame the last walk read, and its newest frame
     * as the head batch read it again (when CFRAME_PRE). */
    uint64_t last_cframe;
    uint64_t cframe_guess;
    bool cframe_pre;
    /* Before 3.11, the same for the kernel tid in the thread's struct pthread. */
    uint64_t last_ident;
    uint32_t tid_guess;
    bool tid_pre;
    bool stack_pre;          /* frames_guess() was asked for its stack in the head batch */
    /* An idle thread keeps its stack (see "Idle threads" in unwind_threads.c): the walk that
     * last read or kept FR's frames cleanly (its serial, 0 none), the thread state's frame
     * field then, and whether this walk keeps them. */
    uint64_t kept_walk;
    uint64_t kept_frame_input;
    uint64_t guessed_walk; /* the walk whose head batch read its stack ahead (FR cleared) */
    bool idle;
    bool not_read; /* its stack is not read this sample (unwind_set_active_only(), no GIL) */
    /* The walk that last settled FR's frames (unwind_code_settle()), and the code cache's
     * changes then: a kept stack settled by the walk before, with no entry freed since,
     * settles to what it did. */
    uint64_t settled_walk;
    uint64_t settled_changes;
    enum snap_bool gil;
    enum snap_bool gil_requested;
    enum snap_bool has_exception;
    /* Where the handled-exception chain goes on when its top is not the thread's own item
     * (a generator runs): resolved after the frame walk (unwind_threads_exc_chains()); 0
     * when HAS_EXCEPTION is already the answer. OWN_EXC: the thread's own item's exception
     * (0 for none). */
    uint64_t exc_item;
    uint64_t own_exc;
    /* A snapshot's later copy of the stack (unwind_verify.c): the thread is still to be
     * settled, the copy differs from what the walk read, the thread state belongs to another
     * thread now; the newest frame its _PyCFrame names in that copy (3.11, 3.12). */
    bool copy_open;
    bool copy_differs;
    bool copy_gone;
    uint64_t copy_cframe_frame;
    struct frames_thread fr; /* its buffers are kept for the next walk */
};

/* The interpreter-state fields the walk needs, read in one batch. */
struct interp_fields {
    uint64_t id;
    uint64_t next;
    uint64_t threads_head;
    uint64_t threads_main;
    uint64_t gil_locked;
    uint64_t gil_holder;
    uint64_t code_marker; /* L->code_marker's value, when CODE_MARKER_READ */
    bool code_marker_read;
    uint64_t gc_collecting;
    uint64_t gc_frame; /* the frame that started the collection (3.15+); 0 none */
    uint64_t gc_collector; /* the thread state known to run it (gcwatch; main interp.); 0 */
    uint64_t modules;
    uint64_t main_thread_ident; /* from the runtime; 0 unknown */
    uint64_t gc_addr;           /* the GC state this interpreter uses; 0 unknown */
    uint8_t *gc_state;          /* its bytes, when the snapshot reads the GC (u->gc) */
    size_t gc_len;
    bool records; /* the GC's records were read ahead with the fields */
};

/* The runtime-wide fields, read once per snapshot. */
struct runtime_fields {
    uint64_t interpreters_head;
    uint64_t main_thread;
    uint64_t gil_locked;
    uint64_t gil_holder;
    uint64_t gc_collecting;
    uint64_t next_version; /* CODE_MARKER_GLOBAL_NEXT_VERSION's global, when NEXT_VERSION_READ */
    bool next_version_read;
};

/* The frames one thread's walk had to read one by one, remembered for the next walk. ADDRS
 * holds CAP (at most FRAMES_HINT_MAX) and is kept. */
/* A hint's place in u->hints, by its thread state (unwind_hints.c's index). */
struct hint_key {
    uint64_t tstate;
    uint32_t at;
};

struct chain_hint {
    uint64_t tstate;
    uint64_t *addrs;
    size_t n;
    size_t cap;
};

/* The thread states the main interpreter had at the last walk, read again in one batch. */
struct known_threads {
    uint64_t interp;
    size_t n;
    size_t prefetched; /* how many of ADDRS the head batch read into ts_buf */
    uint64_t *addrs;   /* LIMIT_THREADS, N of them set (not zeroed: untouched pages cost
                        * nothing) */
};

/* The compact sample being built, its arrays kept from one sample to the next. */
struct sample_buf {
    struct sample out;
    struct sample_thread *threads;
    size_t n_threads;
    size_t cap_threads;
    struct sample_frame *frames;
    size_t n_frames;
    size_t cap_frames;
    char warning[256];
};

/* A code object a walk could not read, and why: what its frames are counted as. */
struct code_failure {
    uint64_t addr;
    enum snap_unreadable why;
};

struct unwind {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct code_cache *codes;
    struct threadnames *names;
    struct pthreadtid *tids;
    uint8_t *code_buf; /* raw code structs of one batch */
    uint8_t *ts_buf;   /* CAP_TS thread states (unwind_threads_reserve()) */
    uint64_t ts_lo;    /* the part of a thread state the walk reads: from TS_LO, */
    size_t ts_len;     /* TS_LEN bytes (thread_span()) */
    struct known_threads known;
    struct thread_ctx *ts; /* one interpreter's threads; kept, with their frame buffers */
    size_t cap_ts;         /* room in TS, TS_BUF and the per-thread scratch */
    uint64_t *code_addrs; /* scratch of load_codes() */
    /* What the target's code marker vouches for (codemark.c), the generation this walk took
     * from it, and the marker's epoch the code cache was last told of. */
    struct codemark mark;
    uint64_t generation;
    uint64_t mark_epoch;
    uint64_t walks;
    bool auditing; /* this walk trusts nothing (one in UNWIND_AUDIT_EVERY) */
    /* Without a marker that vouches, every code object of a walk is checked again: the head
     * batch reads the main interpreter's last ones (sorted) ahead. */
    uint64_t *code_guess;
    uint64_t *code_guess_next; /* this walk's, to become the next one's */
    size_t n_code_guess;
    uint8_t *code_pre; /* their structs, UNWIND_CODE_GUESS of them */
    bool code_pre_ok;
    size_t cap_code_addrs;
    struct code_failure *code_fails; /* one interpreter's, sorted by address once loaded */
    size_t n_code_fails;
    size_t cap_code_fails;
    uint64_t *idents;               /* CAP_TS scratch */
    uint64_t *name_tids;            /* CAP_TS scratch: the kernel threads of IDENTS */
    struct frames_thread **fr_ptrs; /* CAP_TS scratch: the threads' chains to walk */
    pid_t *tid_out;                 /* CAP_TS scratch */
    uint32_t *tid_pre;              /* CAP_TS scratch: tids read ahead, 0 none */
    uint64_t *id_seen;              /* 4 * CAP_TS scratch: unwind_threads_unshare()'s set */
    /* Hints of the last walk (in its order of threads) and those of the one being taken;
     * at most LIMIT_THREADS each. */
    struct chain_hint *hints;
    size_t n_hints;
    size_t cap_hints;
    struct chain_hint *next_hints;
    size_t n_next_hints;
    size_t cap_next_hints;
    bool hint_indexed;    /* HINT_INDEX holds this walk's hints by thread state */
    struct hint_key *hint_index;
    size_t cap_hint_index;
    struct tasks *tasks;  /* NULL: tasks are not read */
    struct waits *waits;  /* NULL: the threads' waits are not read (out of memory) */
    bool tasks_wanted;    /* unwind_set_tasks(on): NULL tasks then means out of memory */
    bool once;            /* unwind_set_once(): no read-ahead record for a next snapshot */
    bool active_only;     /* unwind_set_active_only(): samples read the GIL holders' stacks */
    bool holder_only;     /* unwind_set_holder_only(): samples read the GIL holders alone */
    uint64_t holder_guess; /* the main interpreter's last GIL holder: its thread state is read */
    bool holder_pre;       /* ahead by the head batch into ts_buf's first slot (HOLDER_PRE) */
    bool no_gc_frames;    /* unwind_set_gc_frames(off) */
    bool opcodes;         /* unwind_set_opcodes(): snapshots read each frame's instruction */
    bool native;          /* unwind_set_native(): <native> frames where C called Python */
    struct unwind_instr *instr; /* the frames of the snapshot being taken whose instruction is
                                 * to be read (unwind_instr.c) */
    size_t n_instr;
    size_t cap_instr;
    struct gc_reader *gc; /* NULL: the GC's generations are not read (in_gc still is) */
    uint8_t *gc_buf;      /* GC_STATE_MAX bytes */
    /* Who collects, before 3.15 (gcwatch.c): its state, and where the head batch reads the
     * main interpreter's GIL switch count and GC collection counts for it. */
    struct gcwatch watch;
    bool watch_asked;        /* this head batch reads them */
    size_t watch_counts_len; /* the counts' bytes it reads; 0 none */
    uint64_t watch_switches;
    uint8_t watch_counts[GC_COUNTS_MAX];
    uint8_t *verify_buf; /* the later copies of a snapshot's frame headers (unwind_verify.c) */
    size_t verify_cap;
    uint64_t link_lo; /* the part of a frame header it compares (frames_link_span()) */
    size_t link_len;
    /* The walk in hand: a snapshot (SNAP set) or a compact sample (SNAP NULL). */
    struct snapshot *snap;
    uint64_t snap_serial;          /* which snapshot the entries of SNAP_STRS belong to */
    struct unwind_code_strs *snap_strs; /* UNWIND_SNAP_STRS of them; NULL until needed */
    struct sample_buf sample;
    uint64_t trusted_hits;  /* code entries served on the generation's word */
    unsigned guess_backoff; /* walks left before stacks are read ahead again */
    bool names_read;        /* thread names have been read once */
    /* Idle threads (unwind_threads.c): this walk's serial; the main interpreter's GIL switch
     * count and holder as the last walk read them (when IDLE_KNOWN), and as this one does;
     * whether they are unchanged (IDLE_NOW), and were at the last walk (IDLE_PREDICT: the
     * head batch then leaves idle threads' stacks out). */
    uint64_t walk_serial;
    bool idle_known;
    uint64_t idle_switches;
    uint64_t idle_holder;
    bool idle_next_known;
    uint64_t idle_next_switches;
    uint64_t idle_next_holder;
    bool idle_now;
    bool idle_predict;
    uint64_t idle_threads; /* thread-walks kept so (counters) */
    uint64_t failed_reads;
};

/* A code object's strings as one snapshot holds them: its frames share them instead of a copy
 * each (a fresh page costs a one-shot more than the bytes written to it). */
struct unwind_code_strs {
    uint64_t serial; /* the snapshot's (u->snap_serial); 0 free */
    uint64_t code_addr;
    const struct code_info *ci;
    struct snap_str function, name, file;
};

enum {
    UNWIND_SNAP_STRS = 128,   /* code objects whose strings a snapshot shares (a power of 2) */
    UNWIND_CODE_GUESS = 256,  /* code objects read ahead by the head batch, at most */
    UNWIND_THREADS_FIRST = 16 /* threads room is made for at first */
};

/* Room for N threads (at most LIMIT_THREADS) in u->ts, u->ts_buf and the per-thread scratch;
 * what is new is zeroed. False when memory runs out. */
bool unwind_threads_reserve(struct unwind *u, size_t n);
enum { UNWIND_AUDIT_EVERY = 64 }; /* walks per audit of what the code marker vouches for */

/* Notes a part that could not be read: in the snapshot in hand, or counted in the sample. */
void unwind_warn(struct unwind *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The start of a walk in one system call: the runtime-wide fields and, when the last walk
 * found the main interpreter at a known address, that interpreter's fields and the thread
 * states it had (guesses: *IN0_OK says whether the interpreter is still where it was, and
 * unwind_threads_collect() keeps only the thread states the links confirm). */
int unwind_threads_read_head(struct unwind *u, struct runtime_fields *rf, struct interp_fields *in0,
                             bool *in0_ok, struct pt_error *err);

/* Reads the scattered interpreter fields in one system call. Fields the version lacks are 0. */
int unwind_threads_read_interp(struct unwind *u, uint64_t addr, const struct runtime_fields *rf,
                               struct interp_fields *f, struct pt_error *err);

/* Idle threads (unwind_threads.c): a walk starts with unwind_threads_idle_begin() and, when it
 * succeeds, ends with unwind_threads_idle_end(), which makes its GIL reading the next walk's
 * reference. */
void unwind_threads_idle_begin(struct unwind *u);
void unwind_threads_idle_end(struct unwind *u);

/* Reads the thread-state list of one interpreter into u->ts (capped, so a cycle ends at the
 * cap). Only the main interpreter's list is remembered for the next walk. */
size_t unwind_threads_collect(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                              bool main_interp);

/* Where the thread state TS (L->thread.size bytes) says T's chain starts: T->cframe (3.11,
 * 3.12) or T->fr.current_frame, and T->fr's chunk and base frame. */
void unwind_threads_frame_inputs(const struct py_layout *L, const uint8_t *ts,
                                 struct thread_ctx *t);

/* Where 3.11 and 3.12 threads' chains start: each thread's current _PyCFrame, all read in one
 * batch per PROC_IOV_MAX threads. */
void unwind_threads_read_cframes(struct unwind *u, struct thread_ctx *ts, size_t n);

/* Answers has_exception for the threads whose handled-exception chain starts in a running
 * generator, as sys.exc_info() does: the newest item of the chain holding an exception. The
 * generators' items come with their frames (3.11+, frames_prefix()); a snapshot reads those
 * it lacks (one read an item, LIMIT_FRAMES items at most, a loop ends it), a sample leaves
 * such a thread's has_exception unknown instead. Call after frames_walk(). */
void unwind_threads_exc_chains(struct unwind *u, struct thread_ctx *ts, size_t n);

/* Before 3.11 thread states hold no kernel thread id; pthreadtid finds it. */
void unwind_threads_read_tids(struct unwind *u, struct thread_ctx *ts, size_t n,
                              const struct interp_fields *in);

/* A thread state that shares its ident or its kernel thread id with an older one of the same
 * interpreter has not been taken over by its thread yet: before 3.12 the starting thread makes
 * it with its own ident (and, 3.11, tid), which the new thread then overwrites one field at a
 * time. Such a state's shared ident and tid are cleared (unknown), the older state keeps them. */
void unwind_threads_unshare(struct unwind *u, struct thread_ctx *ts, size_t n);

/* The hints the last walk left for the thread state at TSTATE, or NULL (unwind_hints.c). AT:
 * the place the thread had among the last walk's threads, if known (a guess). */
const struct chain_hint *unwind_threads_hint(struct unwind *u, uint64_t tstate, size_t at);

/* Hands each thread the frames its walk read one by one last time. */
void unwind_threads_give_hints(struct unwind *u, struct thread_ctx *ts, size_t n);

/* Keeps this walk's one-by-one reads as the next walk's hints (copied into kept buffers). */
void unwind_threads_keep_hints(struct unwind *u, const struct thread_ctx *ts, size_t n);

/* The hints this walk gathered become the next one's (the arrays swap; buffers stay). */
void unwind_threads_commit_hints(struct unwind *u);

void unwind_threads_free_hints(struct chain_hint *h, size_t cap);

/* The part of a thread state the walk uses: from its first field to the end of its last. The
 * rest of the struct (hundreds of bytes on 3.13+) is never read. */
void unwind_threads_span(const struct py_layout *L, uint64_t *lo, size_t *len);

/* unwind_exc.c. Whether the thread state TS (at ADDR) has an exception being raised or handled:
 * the newest item of its exception-info chain holding one; a chain that starts in a running
 * generator's item is left to unwind_threads_exc_chains() through T->exc_item. */
enum snap_bool unwind_threads_exception(const struct unwind *u, const uint8_t *ts, uint64_t addr,
                                        struct thread_ctx *t);

/* unwind_code.c. Brings every code object the frames of threads TS[0..N) name into the code
 * cache: their structs are read in batches of one system call, strings and tables only for
 * objects not cached yet; TRUST_CACHE when the target's marker vouches for what is cached. */
void unwind_code_load(struct unwind *u, struct thread_ctx *ts, size_t n, bool main_interp,
                      bool trust_cache);
/* Gives each of T's frames its cache entry and instruction offset, drops frames that have not
 * started, and marks T's stack torn when a frame runs no code object or stands outside its
 * code. */
void unwind_code_settle(struct unwind *u, struct thread_ctx *t);
/* The cache entry of raw frame F's code object (unwind_code_settle() found it), or NULL with
 * *WHY saying why there is none. */
struct code_info *unwind_code_of(const struct unwind *u, const struct frames_raw *f,
                                 enum snap_unreadable *why);

/* unwind_instr.c (--opcodes): queues snapshot frame F, of code CI at INSTR_PTR, to have its
 * instruction read; unwind_instr_read() reads every queued one into its frame (op1,
 * op_offset), with a warning in S for those it could not. */
void unwind_instr_add(struct unwind *u, struct snap_frame *f, const struct code_info *ci,
                      uint64_t instr_ptr);
void unwind_instr_read(struct unwind *u, struct snapshot *s);

#endif
