/* snapshot: what pytop saw in the target at one moment: the data model every reader fills and
 * every view and writer shows. Its memory is an arena (snapshot_arena.h), its words for states
 * and frames are snapshot_words.h, its writers snapshot_write.h. */
#ifndef PYTOP_CORE_SNAPSHOT_H
#define PYTOP_CORE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct pt_error;
struct opcode_table;

enum { SNAPSHOT_MAX_WARNINGS = 256 };

/* A string from the target: bytes plus length, not necessarily UTF-8, never NUL-terminated by
 * contract (writers escape). PTR == NULL means unknown (JSON null, "?" on screen). */
struct snap_str {
    const char *ptr;
    size_t len;
};

/* How snapshot_str_compare() orders strings. */
enum snap_str_order {
    SNAP_STR_BYTES,   /* byte order, the unknown first: the same on every machine */
    SNAP_STR_READING, /* as people read names: ASCII letters of either case together, the
                       * unknown last */
};

/* Orders A and B as ORDER says; a string comes before the longer ones it begins. Returns < 0,
 * 0 or > 0. */
int snapshot_str_compare(struct snap_str a, struct snap_str b, enum snap_str_order order);

enum snap_frame_kind {
    SNAP_FRAME_PYTHON = 0,
    SNAP_FRAME_NATIVE,
    SNAP_FRAME_GC,
    SNAP_FRAME_SHIM,
    SNAP_FRAME_UNREADABLE, /* a frame pytop could not read; SNAP_UNREADABLE_* says why */
};

/* Why a frame could not be read. */
enum snap_unreadable {
    SNAP_UNREADABLE_NONE = 0,
    SNAP_UNREADABLE_STACK, /* it names no code object: the stack changed while it was read
                            * (or is corrupt); the frames beyond it were not taken */
    SNAP_UNREADABLE_CODE,  /* its code object's names or line table could not be read */
    SNAP_UNREADABLE_CACHE, /* more code objects in one walk than the code cache holds */
    SNAP_UNREADABLE_NOMEM, /* out of memory */
};

/* Unknown integers are -1 (JSON null). */
struct snap_frame {
    struct snap_str function;   /* qualified name (co_qualname), else co_name */
    struct snap_str name;       /* co_name */
    struct snap_str file;       /* co_filename */
    int line;
    int end_line;
    int col;
    int end_col;
    int first_line;             /* co_firstlineno: where the function starts; -1 unknown */
    uint32_t op_offset;         /* with OP1: the instruction's offset, bytes from the code's
                                 * start */
    uint16_t op1;               /* the instruction's opcode (the code unit as the interpreter
                                 * holds it, a specialised form's own number) + 1; 0: not read
                                 * (snapshot.opcodes names it) */
    enum snap_frame_kind kind;
    enum snap_unreadable unreadable; /* with kind SNAP_FRAME_UNREADABLE; else NONE */
};

/* A tri-state flag: the target may not say. */
enum snap_bool { SNAP_NO = 0, SNAP_YES = 1, SNAP_UNKNOWN = -1 };

/* What a thread waits for, once per snapshot (src/core/walk/waits.c). */
enum snap_wait_kind {
    SNAP_WAIT_NONE = 0,   /* not read (JSON null) */
    SNAP_WAIT_LOCK,       /* a futex: a threading lock, or another pytop cannot name */
    SNAP_WAIT_GIL,        /* the GIL's condition */
    SNAP_WAIT_IO,         /* a system call on descriptors, or a child */
    SNAP_WAIT_SLEEP,
    SNAP_WAIT_RUNNING,    /* not blocked in the kernel */
    SNAP_WAIT_UNKNOWN,    /* REASON says why */
};

/* Each string ptr NULL, number -1 (fd) or 0 (lock, owner) when unknown or not applicable. */
struct snap_wait {
    enum snap_wait_kind kind;
    struct snap_str syscall;    /* the system call's name */
    int fd;                     /* for a call on one descriptor */
    struct snap_str object;     /* the descriptors described, or the lock's type */
    uint64_t lock;              /* the lock object's address */
    struct snap_str variable;   /* a variable of the thread's frames that holds the lock */
    struct snap_str via;        /* the threading/queue call it waits inside: "Queue.get" */
    pid_t owner_tid;            /* who can release it: an RLock's owner, the GIL's holder */
    double owner_held;          /* seconds the GIL's holder has held it with no other thread
                                 * taking it; < 0 unknown */
    double since;               /* seconds seen in this wait with this stack; < 0 first look */
    double left;                /* seconds of sleep left; < 0 unknown */
    double requested;           /* seconds of sleep asked (a relative sleep); < 0 unknown */
    struct snap_str reason;     /* why it is SNAP_WAIT_UNKNOWN, or why the lock is not named */
};

/* Threads each waiting for a lock the next one owns (the last's owned by the first). */
struct snap_deadlock {
    pid_t *threads;
    uint64_t *locks;            /* LOCKS[i]: what THREADS[i] waits for */
    size_t n;
};

struct snap_thread {
    pid_t tid;                  /* kernel thread id; 0 when unknown */
    uint64_t thread_id;         /* threading.get_ident(); 0 when unknown */
    struct snap_str name;       /* threading name; ptr NULL when unknown */
    bool main;
    enum snap_bool gil;
    enum snap_bool gil_requested;
    enum snap_bool on_cpu;
    enum snap_bool has_exception;
    enum snap_bool in_gc;
    struct snap_frame *frames;  /* innermost first */
    size_t n_frames;
    bool frames_truncated;      /* deeper than LIMIT_FRAMES, or the walk stopped at an error */
    bool frames_torn;           /* the stack changed while read: the frames may be no stack the
                                 * thread had (a warning says why) */    struct snap_wait wait;
};

/* One generation as the target's gc module shows it (get_count, get_threshold, get_stats).
 * Unknown integers are -1, an unknown duration negative. */
struct snap_gc_gen {
    int generation;
    int64_t count;
    int64_t threshold;
    int64_t collections;
    int64_t collected;
    int64_t uncollectable;
    int64_t candidates;         /* objects considered, over all collections (3.15+) */
    double duration;            /* seconds spent, over all collections (3.15+) */
};

/* One collection as the interpreter recorded it (3.15+). The counts are running totals of its
 * generation at the end of that collection, as gc.get_stats() would have shown them then. */
struct snap_gc_record {
    int generation;
    int64_t start_ns;           /* CLOCK_MONOTONIC nanoseconds (PyTime_t) */
    int64_t stop_ns;
    int64_t collections;
    int64_t collected;
    int64_t uncollectable;
    int64_t candidates;
    int64_t heap_size;          /* objects the GC tracked when it started */
    double duration;
};

struct snap_gc {
    bool present;               /* false: the whole GC section is null */
    enum snap_bool enabled;     /* gc.isenabled() */
    enum snap_bool collecting;
    pid_t thread;               /* kernel tid of the thread collecting; 0: none or unknown */
    struct snap_gc_gen *generations;
    size_t n_generations;
    bool recent_present;        /* false: the version keeps no records ("recent" is null) */
    struct snap_gc_record *recent;  /* oldest first */
    size_t n_recent;
    int64_t read_ns;            /* CLOCK_MONOTONIC when it was read, to age the records */
};

enum snap_task_state {
    SNAP_TASK_UNKNOWN = -1,
    SNAP_TASK_PENDING = 0,
    SNAP_TASK_CANCELLED = 1,
    SNAP_TASK_FINISHED = 2,
};

/* One awaiter of a task: another task (its id and coroutine stack) or a plain future. */
struct snap_task_awaiter {
    uint64_t task;              /* the awaiting task's id; 0 for a non-task awaiter (JSON null) */
    const struct snap_frame *frames;  /* its coroutine stack, innermost first; may be shared */
    size_t n_frames;
};

/* One asyncio task. */
struct snap_task {
    uint64_t id;                /* the task object's address, as _remote_debugging reports it */
    struct snap_str name;
    pid_t thread;               /* kernel tid of the thread whose list holds it; 0: the
                                 * interpreter's fallback list */
    enum snap_task_state state;
    const struct snap_frame *frames;  /* coroutine stack, innermost first; may be shared */
    size_t n_frames;
    bool frames_truncated;
    struct snap_task_awaiter *awaited_by;
    size_t n_awaited_by;
    bool awaited_by_truncated;
};

struct snap_interp {
    int64_t id;
    struct snap_thread *threads;
    size_t n_threads;
    struct snap_gc gc;
    bool tasks_present;         /* false: "tasks" is null (a warning says why) */
    struct snap_task *tasks;
    size_t n_tasks;
    bool tasks_truncated;       /* more than LIMIT_ASYNCIO_TASKS, or a list was cut short */
};

struct snap_python {
    struct snap_str version;    /* "3.15.2" */
    uint64_t hexversion;        /* PY_VERSION_HEX; 0 when unknown */
    bool free_threaded;
    enum snap_bool debug_build;
    struct snap_str binary;     /* path of the ELF holding the runtime */
};

struct snapshot {
    pid_t pid;
    struct snap_str *cmdline; /* the process's arguments (argv); NULL when unknown */
    size_t n_cmdline;
    bool cmdline_cut;           /* the command line was longer than pytop reads */
    double started;             /* when the process started, seconds since the epoch; < 0
                                 * unknown */
    double time;                /* seconds since the epoch */
    struct snap_python python;
    const struct opcode_table *opcodes; /* the target's instruction names (frames' op1); NULL
                                         * when instructions were not read */
    struct snap_interp *interps;
    size_t n_interps;
    bool waits_present;         /* false: the threads' waits were not read ("wait" null) */
    struct snap_deadlock *deadlocks;
    size_t n_deadlocks;
    struct snap_str *warnings;  /* each a short reason something is missing */
    size_t n_warnings;
    struct snapshot_arena *arena;
};

/* Creates an empty snapshot with its own arena. Errors: PT_E_NOMEM. */
struct snapshot *snapshot_new(struct pt_error *err);
void snapshot_free(struct snapshot *s);

/* Sets S's command line from the kernel's form of it: LEN bytes of arguments, each
 * NUL-terminated (the last one may lack its NUL, when CUT short). Copied into the arena.
 * Errors: PT_E_NOMEM (the command line stays unknown). */
int snapshot_set_cmdline(struct snapshot *s, const char *args, size_t len, bool cut,
                         struct pt_error *err);

/* Adds a printf-style warning; silently dropped on out of memory. Past SNAPSHOT_MAX_WARNINGS
 * the last one kept says that more were dropped. */
void snapshot_warn(struct snapshot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the I-th of GC's recent records did on its own: its counts less those of the previous
 * record of its generation (the records hold running totals). False when that cannot be told
 * (the oldest record kept of its generation, unless it was the generation's first). */
bool snapshot_gc_record_delta(const struct snap_gc *gc, size_t i, struct snap_gc_record *delta);

/* Whether GC counts its collections per generation (gc.get_stats(), 3.4+): false when no
 * generation of it has a count. */
bool snapshot_gc_counts_kept(const struct snap_gc *gc);

#endif
