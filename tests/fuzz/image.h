/* image: the memory images the walker fuzzer reads (fuzz_walk.c, made by capture.c).
 *
 * Little-endian, in this order:
 *   header   "pytopim2"; u64 hexversion, runtime_addr, code_type_addr, none_addr, runtime_size,
 *            asyncio_debug_addr; u32 flags (IMAGE_DEBUG_BUILD), pid, n_threads, n_regions
 *            ("pytopim1": the same without asyncio_debug_addr; "pytopim3" then adds
 *            u32 n_symbols and n_symbols x (u64 addr, 32-byte NUL-padded name): the globals a
 *            version before 3.8 keeps runtime fields in, as runtime_locate() found them)
 *   threads  n_threads x (u32 tid, u32 state: the kernel's letter, 'S', 'R', ...)
 *   regions  n_regions x (u64 addr, u32 len | IMAGE_ZEROS, then LEN bytes unless IMAGE_ZEROS)
 * The header names what runtime_locate() learns from the binary and the layout needs (the
 * version when there are no debug offsets, the addresses of _PyRuntime, PyCode_Type, None and
 * _asyncio's debug offsets, 0 when unknown);
 * the regions are the target memory a snapshot read. A region cut short by the end of the
 * input ends there; counts past the IMAGE_MAX_* limits are cut to them. */
#ifndef PYTOP_FUZZ_IMAGE_H
#define PYTOP_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/target/runtime.h"

enum {
    IMAGE_DEBUG_BUILD = 1,
    IMAGE_ZEROS = 1u << 31,
    IMAGE_MAX_THREADS = 4096,
    IMAGE_MAX_REGIONS = 1 << 16,
    IMAGE_MAX_SYMBOLS = RUNTIME_SYMBOLS_MAX,
};

struct image_header {
    uint64_t hexversion;
    uint64_t runtime_addr;
    uint64_t code_type_addr;
    uint64_t none_addr;
    uint64_t runtime_size;
    uint64_t asyncio_debug_addr;
    uint32_t flags;
    uint32_t pid;
    struct runtime_symbol symbols[IMAGE_MAX_SYMBOLS];
    uint32_t n_symbols;
};

struct image_thread {
    uint32_t tid;
    char state;
};

/* LEN bytes at ADDR: DATA, or zeros when DATA is NULL. */
struct image_region {
    uint64_t addr;
    size_t len;
    const uint8_t *data;
};

struct image {
    struct image_header h;
    struct image_thread *threads;
    size_t n_threads;
    struct image_region *regions; /* by address */
    size_t n_regions;
};

/* Parses BUF (which must outlive OUT) into OUT; the caller releases it with image_release().
 * Returns -1 when BUF is no image (no magic, short header) or memory runs out. */
int image_parse(const uint8_t *buf, size_t len, struct image *out);
void image_release(struct image *im);

/* Writes IM to F; runs of zeros inside a region are written as IMAGE_ZEROS regions. 0 or -1. */
int image_write(FILE *f, const struct image *im);

#endif
