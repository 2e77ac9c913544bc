/* recsample: a recording read back, one sample at a time: what every reader of a recording
 * (pytop's own .pyrec, CPython's profiling.sampling binary files) hands its consumers (the
 * exporters, --replay's views and dumps). Everything points into the reader and stays valid
 * only during the callback that receives it. */
#ifndef PYTOP_CORE_RECSAMPLE_H
#define PYTOP_CORE_RECSAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/snapshot.h"

/* A function as the recording names it: one per code object pytop saw (or per (function,
 * file) in a file that does not tell code objects apart). */
struct rec_code {
    uint32_t id;               /* unique within the recording; what identity comparisons use */
    struct snap_str function;  /* qualified name (co_qualname), else co_name; ptr NULL unknown */
    struct snap_str name;      /* co_name; ptr NULL unknown */
    struct snap_str file;      /* co_filename; ptr NULL unknown */
    int first_line;            /* co_firstlineno; -1 unknown */
};

struct rec_frame {
    const struct rec_code *code; /* NULL: a synthetic (KIND) or unreadable frame */
    int line;                    /* -1 unknown */
    uint32_t offset;             /* bytes into the bytecode; UINT32_MAX unknown */
    enum snap_frame_kind kind;
    enum snap_unreadable unreadable; /* with kind SNAP_FRAME_UNREADABLE */
};

struct rec_thread {
    int64_t interp_id;
    pid_t tid;                 /* kernel thread id; 0 unknown */
    uint64_t thread_id;        /* threading.get_ident(); 0 unknown */
    struct snap_str name;      /* threading name; ptr NULL unknown */
    bool main;
    enum snap_bool gil;
    enum snap_bool gil_requested;
    enum snap_bool on_cpu;
    enum snap_bool has_exception;
    enum snap_bool in_gc;
    const struct rec_frame *frames; /* innermost first */
    size_t n_frames;
    bool frames_truncated;
    bool frames_torn;
    bool not_read;             /* its stack was not read (--active-only); no frames */
    size_t kept;               /* its outermost frames that are those it had in the sample
                                * numbered SEQ - 1 (at the same position), unchanged; 0 when
                                * not known */
};

struct rec_sample {
    double t;                  /* seconds since the recording started */
    bool failed;               /* the sample could not be taken: ERROR says why */
    struct snap_str error;
    const struct rec_thread *threads;
    size_t n_threads;
    uint64_t seq;              /* the reader's count of samples decoded (a sample with SEQ one
                                * more follows this one at once); 0 when not counted */
};

/* What a recording says of itself. Strings point into the reader. */
struct rec_header {
    struct snap_str format;     /* "pytop 1" or "cpython N" */
    pid_t pid;                  /* 0 unknown */
    struct snap_str *cmdline;   /* NULL unknown */
    size_t n_cmdline;
    struct snap_str python_version; /* "3.15.2"; ptr NULL unknown */
    uint64_t hexversion;        /* 0 unknown */
    bool free_threaded;
    enum snap_bool debug_build;
    struct snap_str binary;
    struct snap_str recorder;   /* "pytop 0.1.0", ... */
    double rate_hz;             /* requested; 0: as fast as possible or unknown */
    double interval_s;          /* how often full snapshots were taken; 0 none */
    double start_wall;          /* seconds since the epoch when it started; < 0 unknown */
    double started;             /* when the target started (epoch seconds); < 0 unknown */
};

/* Receives one sample; returning non-zero stops the scan (and is returned by it). */
typedef int (*rec_sample_fn)(void *ctx, const struct rec_sample *s);

#endif
