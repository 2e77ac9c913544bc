/* recformat: the bytes of a .pyrec recording (doc/recording.md), shared by its writer and its
 * reader. */
#ifndef PYTOP_CORE_RECFORMAT_H
#define PYTOP_CORE_RECFORMAT_H

#include <stddef.h>
#include <stdint.h>

#define RECFORMAT_MAGIC "PYTOPREC"
enum {
    RECFORMAT_MAGIC_LEN = 8,
    RECFORMAT_VERSION = 1,
    RECFORMAT_HEADER_MAX = 1 << 20,  /* bytes of the file's header record */
    RECFORMAT_CHUNK_HEAD = 40,       /* bytes of a chunk's fixed header */
    RECFORMAT_CHUNK_MAX = 64 << 20,  /* bytes of one chunk, compressed or not */
    RECFORMAT_CHUNK_FLUSH = 1 << 20, /* a chunk is closed once it holds this many bytes, */
    RECFORMAT_CHUNKS_MAX = 1 << 24,  /* chunks one file may index */
    RECFORMAT_TABLE_MAX = 1 << 20,   /* codes, frames or threads one chunk defines */
};
/* ... or once it spans this long: a seek decodes at most this much. */
#define RECFORMAT_CHUNK_SECONDS 5.0
/* Records' times count ticks of this many seconds (10 µs): finer than any sampling period,
 * coarse enough that a time step is mostly one byte. */
#define RECFORMAT_TICK 1e-5
#define RECFORMAT_CHUNK_MAGIC "PRCK"

/* What a chunk holds, in its header's flags: the replay's timeline marks them. */
enum {
    RECFORMAT_HAS_SNAPSHOT = 1u << 0,
    RECFORMAT_HAS_ERROR = 1u << 1,
    RECFORMAT_HAS_EXEC = 1u << 2,
    RECFORMAT_HAS_GC = 1u << 3,  /* some thread-sample was in a collection */
    RECFORMAT_HAS_END = 1u << 4, /* the recording's last chunk, written at a clean end */
    RECFORMAT_STORED = 1u << 5,  /* the payload is the records as they are (zstd did not
                                  * shrink them) */
};

/* Records of a chunk's (decompressed) bytes; each starts with its type. */
enum rec_record {
    RECORD_CODE = 1,     /* defines the chunk's next code: id, function, name, file, first line */
    RECORD_FRAME = 2,    /* the next frame: code index + 1 (0: none), line, offset + 1, kind,
                          * reason */
    RECORD_THREAD = 3,   /* the next thread: interpreter, tid, thread id, name, main */
    RECORD_SAMPLE = 4,   /* time step (µs), thread-samples, each a delta to that thread's last */
    RECORD_ERROR = 5,    /* time step, why a sample failed */
    RECORD_SNAPSHOT = 6, /* time step, length, a snapshot (snapcodec) */
    RECORD_EXEC = 7,     /* time step, the program the target exec()ed */
    RECORD_END = 8,      /* time step: the recording ended cleanly here */
    RECORD_SAMPLE_SAME = 9, /* time step, a sample of the last one's threads in its order: the
                             * thread-samples that changed, each its position and delta */
};

/* A thread-sample's flags: each tri-state in two bits (0 no, 1 yes, 2 unknown), then bits. */
enum {
    RECFLAG_GIL = 0,
    RECFLAG_GIL_REQUESTED = 2,
    RECFLAG_ON_CPU = 4,
    RECFLAG_HAS_EXCEPTION = 6,
    RECFLAG_IN_GC = 8,
    RECFLAG_TRUNCATED = 1u << 10,
    RECFLAG_TORN = 1u << 11,
    RECFLAG_NOT_READ = 1u << 12,
    RECFLAG_ALL = (1u << 13) - 1,
};

static inline void recformat_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline uint32_t recformat_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
