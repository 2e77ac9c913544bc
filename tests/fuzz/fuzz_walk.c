/* fuzz_walk: the whole walk (runtime checks, interpreters, threads, frames, stack chunks, code
 * objects, GC, tasks) and the snapshot writers over a memory image (image.h) behind the proc
 * interface: seeds under tests/fuzz/walk/ were taken from real Pythons by capture.c. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"
#include "core/walk/unwind.h"
#include "core/write/snapshot_write.h"
#include "image.h"
#include "proc_image.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the snapshots are written: nowhere, or stdout with PYTOP_FUZZ_WALK_PRINT=1 (to see
 * what a seed replays to: `fuzz_walk walk/3.12.img`). */
static FILE *out;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *print = getenv("PYTOP_FUZZ_WALK_PRINT");
    out = print != NULL && strcmp(print, "1") == 0 ? stdout : fopen("/dev/null", "w");
    return 0;
}

/* What pytop --dump --opcodes and a live view do: one snapshot with tasks and instructions,
 * written both ways, then
 * samples (the first fills the code cache, the second is served by it). */
static void walk(struct proc *p, const struct runtime *rt)
{
    struct pt_error err = {0};
    struct unwind *u = unwind_new(p, rt, &err);
    if (u == NULL) {
        return;
    }
    unwind_set_tasks(u, true);
    unwind_set_opcodes(u, true); /* --opcodes: each frame's code unit, read from the image */
    struct snapshot *s = unwind_snapshot(u, &err);
    if (s != NULL && out != NULL) {
        snapshot_write_json(s, out, true, &err);
        snapshot_write_text(s, out, NULL, &err);
    }
    snapshot_free(s);
    unwind_sample(u, &err);
    unwind_sample(u, &err);
    unwind_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pt_error err = {0};
    const struct image_header *h;
    struct proc *p = proc_image_open(data, size, &h, &err);
    if (p == NULL) {
        return 0;
    }
    struct runtime rt;
    memset(&rt, 0, sizeof rt);
    rt.runtime_addr = h->runtime_addr;
    rt.code_type_addr = h->code_type_addr;
    rt.none_addr = h->none_addr;
    rt.asyncio_debug_addr = h->asyncio_debug_addr;
    rt.debug_build = (h->flags & IMAGE_DEBUG_BUILD) != 0;
    rt.n_symbols = h->n_symbols < RUNTIME_SYMBOLS_MAX ? h->n_symbols : RUNTIME_SYMBOLS_MAX;
    memcpy(rt.symbols, h->symbols, rt.n_symbols * sizeof rt.symbols[0]);
    snprintf(rt.binary, sizeof rt.binary, "/image/python");
    if (runtime_adopt(p, &rt, h->hexversion, h->runtime_size, &err) == 0) {
        walk(p, &rt);
    }
    proc_close(p);
    return 0;
}
