/* code: code objects read from the target, cached by address, and their source positions. */
#ifndef PYTOP_CORE_CODE_H
#define PYTOP_CORE_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/pyobj/linetable.h"

struct proc;
struct py_layout;
struct pt_error;

enum code_key {
    CODE_KEY_TYPE,
    CODE_KEY_FILENAME,
    CODE_KEY_NAME,
    CODE_KEY_QUALNAME,
    CODE_KEY_LINETABLE,
    CODE_KEY_FIRSTLINENO,
    CODE_KEY_FIRSTTRACEABLE,
    CODE_KEY_VERSION, /* co_version (3.12+): tells apart two code objects alike in the rest */
    CODE_KEY_N,
};

/* A generation that vouches for nothing (code_cache_set_generation()). */
#define CODE_GENERATION_NONE UINT64_MAX

/* What pytop keeps of one code object. Strings are UTF-8 (possibly with invalid bytes from
 * lone surrogates), not NUL-terminated. */
struct code_info {
    uint64_t addr;
    char *filename;
    size_t filename_len;
    char *name;
    size_t name_len;
    char *qualname;        /* co_qualname, or co_name where the version has no qualname */
    size_t qualname_len;
    uint8_t *linetable;
    size_t linetable_len;
    int firstlineno;
    int firsttraceable; /* code units before the first traceable one; -1: unknown */
    uint64_t n_units; /* code units of its bytecode (3.11+); 0 when unknown */
    /* The last position looked up, so a frame parked at one instruction is decoded once. */
    uint64_t memo_instr;
    struct linetable_loc memo_loc;
    bool memo_valid;
    /* The fields the entry was built from; a code object whose fields differ is a new one
     * at a reused address. */
    uint64_t key[CODE_KEY_N];
    /* Names this entry and no other for the cache's life (never 0): what samples carry, so
     * statistics can count by code identity and tell a reused address apart. */
    uint64_t serial;
    /* A recording's stand-in for a code object (recconv_compact()): no line table, and the
     * offsets of its frames are their lines. */
    bool offsets_are_lines;
    uint64_t used_in; /* the last round (code_cache_begin()) that looked the entry up */
    uint64_t checked_in;    /* the last round that checked it (read it, or trusted it) */
    uint64_t checked_gen;   /* the generation it was last read under, */
    uint64_t checked_epoch; /* and the cache's epoch then (code_cache_distrust()) */
};

struct code_cache;

/* Errors: PT_E_NOMEM. */
struct code_cache *code_cache_new(struct pt_error *err);
void code_cache_free(struct code_cache *c);

/* Starts a round of lookups (one sample or snapshot): when the cache is full, entries that no
 * lookup of the current round has touched make room, so the entries a round's frames point at
 * stay valid until the next round begins. */
void code_cache_begin(struct code_cache *c);

/* Sets the round's generation: the target's code marker as read before any code object of the
 * round (codemark_take()), or CODE_GENERATION_NONE. With VERSION_BELOW not 0 (a counter of
 * co_versions: codemark_version_below()) it vouches only for entries of a co_version neither 0
 * nor VERSION_BELOW or more. Entries read under another generation stay, but are no longer
 * trusted: code_cache_get() checks them against their object's fields again. */
void code_cache_set_generation(struct code_cache *c, uint64_t generation, uint64_t version_below);

/* No entry read so far is trusted again, whatever the generation (the marker now read is
 * another interpreter's). */
void code_cache_distrust(struct code_cache *c);

/* The entry for ADDR when the current generation vouches for it: it was read under this
 * generation (and epoch), within its co_version bound. It then counts as checked and used in
 * this round. NULL otherwise; no reads. Valid until the next code_cache_begin(). */
struct code_info *code_cache_trust(struct code_cache *c, uint64_t addr);

/* Returns the code object at ADDR, whose raw struct bytes (L->code.size of them) the caller has
 * already read into RAW: served from the cache when those bytes name the same strings and
 * tables, else read and decoded. CODE_TYPE is the target's PyCode_Type address (0 to skip the
 * type check). The result stays valid until the next code_cache_begin(). Errors: PT_E_READ,
 * PT_E_FORMAT, PT_E_BADLAYOUT (not a code object), PT_E_NOMEM, PT_E_LIMIT (every entry is in
 * use by the current round). */
struct code_info *code_cache_get(struct code_cache *c, struct proc *p,
                                 const struct py_layout *L, uint64_t code_type, uint64_t addr,
                                 const uint8_t *raw, struct pt_error *err);

/* Reads ahead, in one batch, the file names, names and line tables of those code objects
 * ADDRS[0..N) (their structs at RAWS, L->code.size bytes apart) that code_cache_get() will not
 * find cached: the code_cache_get() calls that follow, until code_cache_prefetch_end(), take
 * them from that copy (those too long for it are read as usual). Best effort: nothing is read
 * ahead when the batch fails. The copy is of this moment: end it before the next walk. */
void code_cache_prefetch(struct code_cache *c, struct proc *p, const struct py_layout *L,
                         uint64_t code_type, const uint64_t *addrs, const uint8_t *raws, size_t n);
void code_cache_prefetch_end(struct code_cache *c);

/* The entry for ADDR if this round has checked it (code_cache_get() or code_cache_trust()), or
 * NULL: an entry whose object failed its check is not served. No reads. It counts as used in
 * the current round. Valid until the next code_cache_begin(). */
struct code_info *code_cache_find(const struct code_cache *c, uint64_t addr);

/* How many entries the cache has freed or replaced so far: while it stays the same, every
 * entry handed out since is still allocated (and still describes the object it was made
 * for). */
uint64_t code_cache_changes(const struct code_cache *c);

/* For CI, an entry handed out while code_cache_changes() had its current value: whether this
 * round has checked it, as code_cache_find() would say (and if so it counts as used). */
bool code_cache_renew(const struct code_cache *c, struct code_info *ci);

/* The byte offset into CI's bytecode of a frame's current instruction INSTR: from an
 * instruction pointer (3.11+), or from f_lasti (frame objects: bytes until 3.9, code units in
 * 3.10). False for a frame that has not started (its position is its first line), or an
 * instruction pointer before the code. */
bool code_instr_offset(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                       uint64_t *offset);

/* Whether a frame of CI at instruction INSTR has not started, by CPython's own rule
 * (_PyFrame_IsIncomplete, Include/internal/pycore_frame.h): a frame not owned by a generator
 * whose instruction pointer lies before the code's first traceable instruction. Python's own
 * views of a stack (sys._current_frames(), tracebacks, f_back) skip such frames; so does pytop.
 * The interpreter's __init__ cleanup shim (3.13+: _Py_InitCleanup, run after a class's Python
 * __init__) is one for as long as it stands in a stack. False where the version has no rule. */
bool code_frame_incomplete(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                           bool generator);
/* Whether INSTR (as for code_instr_offset()) can be the instruction a frame of CI is at: inside
 * its bytecode, or just before it (not started). True when the size is not known. A frame
 * whose instruction is elsewhere was read while it changed (or is not a frame of CI). */
bool code_instr_inside(const struct code_info *ci, const struct py_layout *L, uint64_t instr);

/* The source position of a frame's current instruction in code object CI: INSTR is the frame's
 * instruction pointer (3.11+) or its f_lasti (frame objects). A frame that has not started
 * is at the function's first line. Errors: PT_E_FORMAT (bad table, pointer outside the code). */
int code_location(struct code_info *ci, const struct py_layout *L, uint64_t instr,
                  struct linetable_loc *out, struct pt_error *err);

/* The line of the instruction OFFSET bytes into CI's bytecode, as its line table says; -1 when
 * the table gives none there or cannot be decoded (no error: statistics count it unknown). */
int code_offset_line(const struct code_info *ci, const struct py_layout *L, uint64_t offset);

/* What the cache has done since it was made, for the reader's counters. */
struct code_cache_counters {
    uint64_t hits;    /* lookups served without decoding (validated or trusted) */
    uint64_t misses;  /* code objects read and decoded */
    uint64_t entries; /* entries held now */
    uint64_t contradicted; /* entries the generation vouched for that code_cache_get() found
                            * replaced by another code object */
};
struct code_cache_counters code_cache_get_counters(const struct code_cache *c);

#endif
