/* runtime: find the Python interpreter inside a target process and learn its layout. */
#ifndef PYTOP_CORE_RUNTIME_H
#define PYTOP_CORE_RUNTIME_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/layout/layout.h"

struct elf;
struct proc;
struct pt_error;

/* The most globals a collector is read from, and the most symbols looked up beyond the API. */
enum { RUNTIME_GC_PIECES_MAX = 8, RUNTIME_SYMBOLS_MAX = 16, RUNTIME_SYMBOL_NAME = 32 };
/* The most globals of a GIL that is no struct looked up (gen_wait.h's gil_globals). */
enum { RUNTIME_GIL_GLOBALS_MAX = 4 };

/* A symbol runtime_locate() looked up by name for the version's globals (layout_globals(),
 * layout_gc_globals()): its address in the target, 0 when the binary does not name it. */
struct runtime_symbol {
    char name[RUNTIME_SYMBOL_NAME];
    uint64_t addr;
};

struct runtime {
    uint64_t runtime_addr;    /* _PyRuntime in the target */
    uint64_t code_type_addr;  /* PyCode_Type; 0 when the binary does not export it */
    uint64_t none_addr;       /* _Py_NoneStruct; 0 when unknown */
    uint64_t next_version_addr;  /* LAYOUT_NEXT_VERSION_SYMBOL, where the binary names it; 0 */
    uint64_t asyncio_debug_addr; /* _asyncio's .AsyncioDebug section (3.14+) when known already:
                                  * in the runtime's own binary (_asyncio built in), or a tool
                                  * knew it (runtime_adopt()); 0: asyncdebug.c looks for it in
                                  * the mapped files */
    uint64_t asyncio_debug_size; /* that section's size when found in the binary; 0 unknown */
    bool binary_asyncio_known;   /* the binary was looked at for that section (so asyncdebug.c
                                  * need not map it again) */
    /* A collector kept in globals (before 3.7, layout_gc_globals()): where each is, read
     * into one buffer its GC layout describes; n_gc_pieces 0 otherwise. */
    struct runtime_gc_piece {
        uint64_t addr;
        uint32_t size;
        uint32_t at;
    } gc_pieces[RUNTIME_GC_PIECES_MAX];
    size_t n_gc_pieces;
    /* Where runtime_addr pointed before the globals widened the runtime: _PyRuntime, or
     * before 3.7 interp_head; and the globals' symbols as found. */
    uint64_t anchor_addr;
    struct runtime_symbol symbols[RUNTIME_SYMBOLS_MAX];
    size_t n_symbols;
    struct py_layout layout;
    char version[32];         /* "3.15.2" */
    bool debug_build;
    char binary[PATH_MAX];    /* the mapped file that holds the runtime, as the target sees it */
};

/* Finds the interpreter: looks through the target's mapped ELF files (its executable first, then
 * anything named like python or libpython) for the .PyRuntime section or the _PyRuntime symbol,
 * reads _Py_DebugOffsets there (3.13+) or takes the generated table of the binary's version
 * (3.8-3.12), and checks the layout against the target. Errors: PT_E_NOTPY (no interpreter
 * found), PT_E_UNSUPPORTED (names the version), PT_E_BADLAYOUT (the layout does not fit),
 * PT_E_PERM, PT_E_GONE. For tests, PYTOP_TEST_FORCE_VERSION=3.N in the environment makes it
 * take that version's layout (runtime_locate_as()), wherever pytop locates an interpreter. */
int runtime_locate(struct proc *p, struct runtime *rt, struct pt_error *err);

/* As runtime_locate(), but takes the layout of FORCED_VERSION (a PY_VERSION_HEX; 0: what the
 * target says) whatever the target claims, for testing that a wrong layout is refused. */
int runtime_locate_as(struct proc *p, uint64_t forced_version, struct runtime *rt,
                      struct pt_error *err);

/* Opens the ELF image of PATH as the target sees it (through its root); NULL with ERR when it
 * cannot be opened or parsed. The caller closes it with elf_close(). */
struct elf *runtime_open_elf(struct proc *p, const char *path, struct pt_error *err);

/* For a tool that knows what runtime_locate() learns from the binary (a memory image taken by
 * tests/fuzz/capture.c, where there is no file to read): RT's runtime_addr (its anchor_addr
 * as runtime_locate() left it), code_type_addr, none_addr, debug_build, binary and symbols
 * are filled; HEXVERSION is the version to take when the target has no debug offsets,
 * RUNTIME_SIZE _PyRuntime's st_size (0: unknown). Reads and checks the layout as
 * runtime_locate() does, and gives its errors. */
int runtime_adopt(struct proc *p, struct runtime *rt, uint64_t hexversion, uint64_t runtime_size,
                  struct pt_error *err);

/* The address in the target of symbol NAME, as runtime_locate() (or the tool that gave
 * runtime_adopt() its symbols) found it among the globals the version is read by: the
 * runtime's, the collector's, the GIL's (before 3.7). 0 when the binary does not name it or it
 * was not looked for. */
uint64_t runtime_symbol_addr(const struct runtime *rt, const char *name);

#endif
