/* sample: one moment of the target as the statistics count it: no strings, only identities. */
#ifndef PYTOP_CORE_SAMPLE_H
#define PYTOP_CORE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/snapshot.h"

struct code_info;

enum { SAMPLE_OFFSET_UNKNOWN = UINT32_MAX };

/* One frame: the code object's cache entry and where in its bytecode the frame is. */
struct sample_frame {
    const struct code_info *code; /* NULL: a synthetic or unreadable frame (KIND) */
    uint64_t code_serial;         /* code->serial (never reused); 0 with CODE NULL */
    uint32_t offset;              /* bytes from the bytecode's start; SAMPLE_OFFSET_UNKNOWN */
    enum snap_frame_kind kind;
    enum snap_unreadable unreadable; /* why, with kind SNAP_FRAME_UNREADABLE */
};

struct sample_thread {
    int64_t interp_id;
    pid_t tid;          /* kernel thread id; 0 unknown */
    uint64_t thread_id; /* threading.get_ident(); 0 unknown */
    const char *name;   /* threading name, NULL unknown; not NUL-terminated */
    size_t name_len;
    bool main;
    enum snap_bool gil;
    enum snap_bool gil_requested;
    enum snap_bool on_cpu; /* not read per sample: SNAP_UNKNOWN */
    enum snap_bool has_exception;
    enum snap_bool in_gc;
    const struct sample_frame *frames; /* innermost first */
    size_t n_frames;
    bool frames_truncated;
    bool frames_torn; /* read while it changed: statistics count one unreadable frame */
    bool not_read;    /* its stack was not read (unwind_set_active_only(): no GIL); no frames */
};

/* Everything a sample points at belongs to the unwinder that took it and stays valid until
 * its next call. */
struct sample {
    const struct sample_thread *threads;
    size_t n_threads;
    size_t n_warnings;   /* parts that could not be read */
    const char *warning; /* the first of them, "" when none */
};

#endif
