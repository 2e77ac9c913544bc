/* limits: every bound pytop puts on sizes and counts that come from the target. */
#ifndef PYTOP_CORE_LIMITS_H
#define PYTOP_CORE_LIMITS_H

enum {
    LIMIT_INTERPRETERS = 256,        /* interpreters walked per snapshot */
    LIMIT_THREADS = 4096,            /* thread states walked per interpreter */
    LIMIT_FRAMES = 8192,             /* frames walked per thread; deeper is truncated */
    LIMIT_STRING = 4096,             /* bytes kept of one target string (names, file names) */
    LIMIT_LINETABLE = 1 << 20,       /* bytes of one code object's line table */
    LIMIT_CODE_CACHE = 1 << 16,      /* code objects kept in the cache */
    LIMIT_CHUNK_READ = 1 << 20,      /* bytes of one data-stack chunk read at once */
    LIMIT_CHUNKS = 16,               /* data-stack chunks copied per thread */
    LIMIT_MAPS = 1 << 16,            /* lines of /proc/PID/maps */
    LIMIT_MAPS_BYTES = 16 << 20,     /* bytes of /proc/PID/maps */
    LIMIT_TASKS = 1 << 16,           /* entries of /proc/PID/task */
    LIMIT_ELF_SECTIONS = 1 << 16,    /* section headers in one ELF file */
    LIMIT_ELF_SYMBOLS = 1 << 22,     /* symbols scanned in one symbol table */
    LIMIT_ELF_FILE = 1 << 30,        /* bytes of an ELF file pytop maps */
    LIMIT_DEBUG_OFFSETS = 4096,      /* bytes of _Py_DebugOffsets read */
    LIMIT_RUNTIME_SPAN = 64 << 20,   /* bytes between one binary's runtime globals (2.7, 3.6) */
    LIMIT_OPCODE_FRAMES = 1 << 20,   /* frames of one snapshot whose instruction is read */
    LIMIT_OPCODE_BYTES = 32 << 20,   /* bytecode read to find them (3.11, 3.12) */
    LIMIT_OBJECT_READ = 1 << 16,     /* bytes of one fixed-size struct read (thread, code) */
    LIMIT_DICT_ENTRIES = 1 << 16,    /* entries scanned in one target dict */
    LIMIT_ASYNCIO_TASKS = 1 << 17,   /* asyncio tasks read per interpreter; more are cut off */
    LIMIT_SET_SLOTS = 1 << 16,       /* slots of one target set (a task's awaiters) read */
    LIMIT_CORO_DEPTH = 1024,         /* coroutines followed down one await chain */
    LIMIT_TREE_LINES = 1 << 20,      /* lines of one drawn task tree; a DAG may repeat nodes */
    LIMIT_TASK_REGISTRY_SLOTS = 1 << 20, /* slots of asyncio's task registry set read (3.6-3.13) */
    LIMIT_TYPE_BASES = 64,           /* tp_base links followed up from one type */
    LIMIT_TASK_CALLBACKS = 1024,     /* done callbacks looked at per task */
    LIMIT_FRAME_STACK = 1 << 20,     /* value-stack slots of a suspended frame */
    LIMIT_TASK_EDGES = 1 << 20,      /* awaited-by edges derived per interpreter (3.6-3.13) */
    LIMIT_PY_TASKS = 1 << 14,        /* pure-Python asyncio tasks read per interpreter */
    LIMIT_CORO_LEVELS = 1 << 21,     /* coroutines followed per snapshot, all chains together */
    LIMIT_CMDLINE = 1 << 15,         /* bytes of the command line read (/proc/PID/cmdline) */
    LIMIT_NET_SOCKETS = 1 << 16,     /* entries kept of one socket table (/proc/PID/net/tcp...) */
};

#endif
