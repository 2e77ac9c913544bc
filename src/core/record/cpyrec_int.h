/* cpyrec_int: what cpyrec.c (opening, tables) and cpyrec_scan.c (the sample stream) share. */
#ifndef PYTOP_CORE_CPYREC_INT_H
#define PYTOP_CORE_CPYREC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "core/model/snapshot.h"
#include "core/record/recsample.h"
#include "core/util/limits.h"

struct pt_error;

/* The layout, as binary_io.h and the format document give it. Fixed-width fields are in the
 * writer's byte order; the magic tells which. */
enum {
    HDR_SIZE = 64,        /* the header; sample data starts here */
    HDR_MAGIC = 0,        /* u32 0x54414348 "TACH" */
    HDR_VERSION = 4,      /* u32 format version */
    HDR_PY = 8,           /* u8 major, minor, micro, reserved */
    HDR_START = 12,       /* u64 start, microseconds of the writer's monotonic clock */
    HDR_INTERVAL = 20,    /* u64 sampling interval, microseconds */
    HDR_SAMPLES = 28,     /* u64 thread-samples written */
    HDR_THREADS = 36,     /* u32 distinct (thread, interpreter) pairs */
    HDR_STRINGS = 40,     /* u64 string table offset */
    HDR_FRAMES = 48,      /* u64 frame table offset */
    HDR_COMPRESSION = 56, /* u32 0 none, 1 zstd */
    HDR_CONFIG = 60,      /* u32: bits 0-2 profiling mode + 1 (0 unknown), bit 3 the capture
                           * features are known, bits 4- the features (binary_collector.py) */
    FTR_SIZE = 32,        /* the footer, the file's last bytes */
    FTR_STRINGS = 0,      /* u32 strings in the string table */
    FTR_FRAMES = 4,       /* u32 entries in the frame table */
    FTR_FILE_SIZE = 8,    /* u64 the file's size */
    STATS_TRAILER = 16,   /* "TACHSTAT", u32 version, u32 size: the statistics' last bytes */
    STATS_MIN = 32,       /* duration and rate (f64), then the trailer */
    STATS_MAX = 4096,
    MAGIC = 0x54414348,
    MAGIC_SWAPPED = 0x48434154,
    FORMAT_VERSION = 1,
    COMPRESSION_NONE = 0,
    COMPRESSION_ZSTD = 1,
    CONFIG_MODE_MASK = 0x7,
    CONFIG_FEATURES_KNOWN = 1 << 3,
    CONFIG_FEATURES_SHIFT = 4,
    FEATURE_GC = 1 << 2,
    STATUS_HAS_GIL = 1 << 0, /* _remote_debugging.THREAD_STATUS_* */
    STATUS_ON_CPU = 1 << 1,
    STATUS_UNKNOWN = 1 << 2,
    STATUS_GIL_REQUESTED = 1 << 3,
    STATUS_HAS_EXCEPTION = 1 << 4,
    STATUS_MAIN_THREAD = 1 << 5,
    STACK_REPEAT = 0,   /* the thread's last stack, COUNT times: (delta, status) pairs */
    STACK_FULL = 1,     /* depth, then depth frame indices, innermost first */
    STACK_SUFFIX = 2,   /* keep SHARED outermost frames, push NEW */
    STACK_POP_PUSH = 3, /* pop POP innermost frames, push PUSH */
    RECORD_FIXED = 13,  /* u64 thread id, u32 interpreter id, u8 encoding */
};

/* Bounds on what a file may declare; the writer's own limits are far below them (it keeps at
 * most 256 frames a stack). Kept here rather than in limits.h because they bound a file, not
 * a target. */
enum {
    CPYREC_TABLE_BYTES = 256 << 20, /* string and frame tables together */
    CPYREC_STRINGS = 1 << 22,
    CPYREC_FRAMES = 1 << 22,
    CPYREC_THREADS = LIMIT_THREADS,
    CPYREC_STACK = LIMIT_FRAMES,
    CPYREC_CHUNK = 64 << 10,         /* bytes read from the file at a time */
    CPYREC_REORDER = 1 << 16,        /* thread-samples held back to deliver in time order */
    CPYREC_REORDER_FRAMES = 1 << 22, /* frames of the stacks they hold */
    CPYREC_GROUP_FRAMES = 1 << 20,   /* frames of one delivered sample, all threads */
    CPYREC_ZSTD_WINDOW_LOG = 24,     /* 16 MiB; the writer's level 5 needs a few MiB */
};

struct cpy_frame {
    uint32_t code; /* index into codes, or UINT32_MAX for a synthetic frame */
    int line;
    enum snap_frame_kind kind;
};

struct cpy_thread {
    uint64_t thread_id;
    uint32_t interp;
    uint64_t prev_us;
    uint32_t *stack; /* frame indices, innermost first */
    size_t depth;
    size_t cap;
    uint32_t snap; /* a snapshot of stack the thread holds a reference to; UINT32_MAX none */
    size_t hpos;   /* its place in the heap of threads by prev_us */
};

/* A thread's stack as it was when samples were read that wait in the reorder buffer. */
struct cpy_snap {
    uint32_t *idx;
    uint32_t depth;
    uint32_t refs;
    uint32_t next_free;
};

/* A thread-sample read but not yet delivered. */
struct cpy_pending {
    uint64_t us;
    uint64_t seq; /* the order it was read in, among samples of one time */
    uint32_t thread;
    uint32_t snap;
    uint8_t status;
};

/* The sample data, plain or decompressed, as a byte stream read through a small buffer. */
struct stream {
    uint64_t in_off; /* next file offset to read */
    uint64_t in_end; /* end of the sample data in the file */
    uint8_t *in;     /* compressed bytes (zstd) */
    ZSTD_inBuffer zin;
    ZSTD_DStream *zs;
    size_t zret; /* ZSTD_decompressStream's last result: 0 at a frame's end */
    uint8_t *buf;
    size_t pos;
    size_t len;
    uint64_t consumed; /* bytes of sample data before buf[pos] */
    bool eof;
    char fault[160]; /* why the stream stopped early, "" when it did not */
};

struct cpyrec {
    int fd; /* -1 for a memory buffer */
    const uint8_t *mem;
    uint64_t size;
    bool swap;
    unsigned version;
    uint8_t py[3];
    uint64_t start_us;
    uint64_t interval_us;
    uint64_t n_samples;
    uint32_t n_threads_declared;
    uint64_t strings_off;
    uint64_t frames_off;
    uint32_t compression;
    uint32_t config;
    bool gc_frames_known;  /* the file says whether <GC> frames were captured */
    double stats_duration; /* < 0 when the file has no statistics */
    double scanned_duration;

    uint8_t *tables; /* string table then frame table */
    struct snap_str *strings;
    uint32_t n_strings;
    struct cpy_frame *frames;
    uint32_t n_frames;
    struct rec_code *codes;
    uint32_t n_codes;

    struct cpy_thread *threads;
    size_t n_threads;
    size_t *theap;               /* thread indices, a min-heap by prev_us */
    struct cpy_pending *pending; /* a min-heap by (us, seq) */
    size_t n_pending;
    size_t cap_pending;
    uint64_t seq;
    struct cpy_snap *snaps;
    size_t n_snaps;
    uint32_t free_snap;
    size_t snap_frames; /* frames held by live snapshots */
    struct rec_frame *scratch;
    size_t scratch_cap;
    struct rec_thread *group;
    size_t group_cap;
    struct stream st;

    char format[32];
    char pyver[16];
    char recorder[64];
    struct rec_header header;
    char damage[256];
};

/* Fixed-width fields in the file's byte order. P has 4 (8) readable bytes. */
uint32_t cpyrec_get_u32(const struct cpyrec *r, const uint8_t *p);
uint64_t cpyrec_get_u64(const struct cpyrec *r, const uint8_t *p);
/* Exactly LEN bytes at OFF of the file, or PT_E_FORMAT past its end / PT_E_IO. */
int cpyrec_read_at(struct cpyrec *r, uint64_t off, void *dst, size_t len, struct pt_error *err);
void cpyrec_stream_free(struct stream *s);
void cpyrec_threads_free(struct cpyrec *r);

/* The reorder buffer (cpyrec_order.c). A thread joins the heap of threads when it is first
 * seen and moves in it when its time advances. */
void cpyrec_order_thread_added(struct cpyrec *r, struct cpy_thread *t);
void cpyrec_order_thread_advanced(struct cpyrec *r, struct cpy_thread *t);
/* T's stack changed: its next sample needs a new snapshot. */
void cpyrec_order_stack_changed(struct cpyrec *r, struct cpy_thread *t);
/* Holds back T's sample at US with STATUS. PT_E_NOMEM. */
int cpyrec_order_add(struct cpyrec *r, struct cpy_thread *t, uint64_t us, uint8_t status,
                     struct pt_error *err);
/* Delivers, grouped by time, the samples no later record can precede (all of them with ALL),
 * and the earliest beyond that while the buffer is over its bounds. Returns 0, FN's non-zero,
 * or -1 (PT_E_NOMEM). */
int cpyrec_order_flush(struct cpyrec *r, bool all, double from, double to, rec_sample_fn fn,
                       void *ctx, struct pt_error *err);
/* Drops what is held back (a new scan, close). */
void cpyrec_order_reset(struct cpyrec *r);

#endif
