/* layout: the offsets and sizes pytop uses to read one Python version, whatever its source. */
#ifndef PYTOP_CORE_LAYOUT_LAYOUT_H
#define PYTOP_CORE_LAYOUT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pt_error;

/* The key a version's tables are found by (gen.h): its major and minor from a PY_VERSION_HEX,
 * 0x030d for 3.13, 0x0207 for 2.7. */
#define LAYOUT_VERSION_KEY(hexversion) ((unsigned)((hexversion) >> 16) & 0xffffu)

/* An offset the target's version does not have. */
#define LAYOUT_NONE UINT64_MAX

/* The most bytes of an interpreter frame's fixed header pytop reads. */
enum { LAYOUT_FRAME_HEADER_MAX = 512 };
/* The most bytes before a frame read with it (a generator's exception state). */
enum { LAYOUT_FRAME_PREFIX_MAX = 64 };

enum layout_linetable {
    LINETABLE_LNOTAB,     /* co_lnotab, up to 3.9 */
    LINETABLE_LNOTAB_UNSIGNED, /* co_lnotab whose line increments are unsigned, up to 3.5 */
    LINETABLE_V310,       /* co_linetable of 3.10 */
    LINETABLE_LOCATIONS,  /* co_linetable with columns, 3.11+ */
};

enum layout_frames {
    FRAMES_INTERPRETER,   /* _PyInterpreterFrame chains in data-stack chunks, 3.11+ */
    FRAMES_OBJECTS,       /* PyFrameObject chains through f_back, up to 3.10 */
};

/* What tells pytop that the code objects it cached are still the ones at their addresses: a
 * value in the target that every change of interest changes. Read before any code object it
 * vouches for (src/core/pyobj/codemark.c checks it before it is believed). */
enum layout_code_marker {
    CODE_MARKER_NONE,                /* nothing: every sample checks its code objects again */
    CODE_MARKER_GENERATION,          /* interp.code_object_generation, bumped whenever a code
                                      * object is freed */
    CODE_MARKER_NEXT_VERSION,        /* interp.func_next_version: the co_version the next code
                                      * object made takes (uint32; stays 0 once it wraps) */
    CODE_MARKER_GLOBAL_NEXT_VERSION, /* the same in a runtime-wide global, the symbol
                                      * LAYOUT_NEXT_VERSION_SYMBOL */
};

/* The global of CODE_MARKER_GLOBAL_NEXT_VERSION, found by symbol (it is not exported). */
#define LAYOUT_NEXT_VERSION_SYMBOL "_Py_next_func_version"

enum layout_gil_source {
    GIL_FROM_HOLDER,      /* the interpreter's GIL says which thread last took it, and if held */
    GIL_FROM_THREAD,      /* each thread state has a holds_gil field */
    GIL_FROM_STATUS_BIT,  /* a bit in the thread state's _status word */
};

/* Everything the walker knows about a target's memory layout. Offsets are relative to the start
 * of the named struct; sizes are whole-struct sizes used to read each struct in one go. */
struct py_layout {
    uint64_t hexversion;
    bool free_threaded;

    struct {
        uint64_t size;
        uint64_t finalizing;
        uint64_t interpreters_head;
        uint64_t main_thread;        /* the main thread's ident; LAYOUT_NONE when unknown */
        uint64_t gil_locked;         /* a runtime-wide GIL (before 3.12); else LAYOUT_NONE */
        uint64_t gil_holder;
        uint64_t gil_switch;         /* its switch_number (layout_validate() derives it) */
        uint64_t gc;                 /* a runtime-wide GC state (3.8); else LAYOUT_NONE */
        uint64_t gc_collecting;      /* a runtime-wide GC (3.8); else LAYOUT_NONE */
        /* The runtime has no struct of its own (before 3.7): its fields are globals of the
         * binary, gathered at locate time (layout_globals()), and the GIL's holder is the
         * thread state the interpreter runs, NULL while no thread holds the GIL
         * (_PyThreadState_Current). */
        bool globals_only;
    } runtime;

    struct {
        uint64_t id;
        uint64_t next;
        uint64_t threads_head;
        uint64_t threads_main;       /* LAYOUT_NONE: the main thread is unknown */
        uint64_t gc;
        uint64_t imports_modules;
        uint64_t gil_locked;         /* within the interpreter state */
        uint64_t gil_holder;         /* within the interpreter state */
        uint64_t gil_switch;         /* its switch_number (layout_validate() derives it) */
        uint64_t code_object_generation;  /* LAYOUT_NONE before 3.14 */
        uint64_t func_next_version; /* uint32 (layout_pick_build()); LAYOUT_NONE when unknown */
        uint64_t size;              /* LAYOUT_NONE when unknown (before 3.13) */
    } interp;
    enum layout_code_marker code_marker;

    struct {
        uint64_t size;
        uint64_t next;
        uint64_t interp;
        uint64_t current_frame;      /* in the thread state, or in its cframe (3.11, 3.12) */
        uint64_t cframe;             /* pointer to the current _PyCFrame; LAYOUT_NONE if none */
        uint64_t base_frame;         /* the chain's sentinel frame; LAYOUT_NONE when unknown */
        uint64_t thread_id;
        uint64_t native_thread_id;
        uint64_t datastack_chunk;
        uint64_t status;
        uint64_t holds_gil;          /* GIL_FROM_THREAD */
        int holds_gil_bit;           /* bit number in the status word; -1: none */
        uint64_t gil_requested;      /* LAYOUT_NONE when the version has none */
        uint64_t current_exception;  /* LAYOUT_NONE when unknown */
        uint64_t exc_state_value;    /* exc_state.exc_value; LAYOUT_NONE when unknown */
        uint64_t exc_info;           /* the top of the handled-exception chain (errstack) */
        uint64_t exc_state;          /* the chain's bottom item, inside the thread state */
    } thread;
    /* One item of that chain (_PyErr_StackItem): the thread's own, or a running generator's
     * gi_exc_state; sys.exc_info() answers from the newest one holding an exception. */
    struct {
        uint64_t size;
        uint64_t value;
        uint64_t previous;
    } errstack;
    enum layout_gil_source gil_source;
    /* Every thread state that runs Python code takes the GIL first, and a take by another
     * thread state than the last holder bumps switch_number (3.13+: PyThreadState_Swap
     * detaches and attaches; before, a thread state swapped in under a held GIL runs without
     * a take). So an unchanged switch_number and holder prove the other threads did not run. */
    bool gil_counts_every_switch;
    /* Where struct _gil_runtime_state keeps switch_number, from its last_holder (gen-layout;
     * LAYOUT_NONE unknown). */
    uint64_t gil_switch_from_holder;

    /* What tells a thread's wait apart (src/core/walk/waits*.c); LAYOUT_NONE where unknown. */
    struct {
        uint64_t gil_holder_at;      /* last_holder's offset in the GIL state */
        uint64_t gil_size;           /* the GIL state's size: a futex word inside is the GIL's */
        uint64_t code_names;         /* co_localsplusnames (3.11+) or co_varnames: the tuple
                                      * naming a frame's first slots */
        uint64_t frame_globals;      /* f_globals in a frame */
        uint64_t frame_locals;       /* where a frame's variables start (localsplus) */
        uint64_t tuple_size;         /* ob_size in a tuple (the names of the variables) */
        uint64_t tuple_items;        /* ob_item */
    } wait;

    enum layout_frames frames;
    struct {
        uint64_t size;               /* bytes of the fixed header read per frame */
        uint64_t previous;
        uint64_t executable;
        uint64_t instr_ptr;          /* instruction pointer, or f_lasti (frame objects) */
        unsigned instr_width;        /* 8 for a pointer, 4 for f_lasti */
        uint64_t owner;
        uint64_t executable_tag_mask;  /* low bits of a tagged stack reference */
        int owner_generator;
        int owner_cstack;            /* -1: no such owner */
        int owner_interpreter;       /* -1: no such owner */
        uint64_t running;            /* a frame object's f_executing / f_state byte (3.8-3.10),
                                      * else LAYOUT_NONE */
        int running_value;           /* its value in a frame that runs */
        int unwinding_value;         /* ... or that looks for an exception handler */
    } frame;

    struct {
        uint64_t size;
        uint64_t filename;
        uint64_t name;
        uint64_t qualname;           /* LAYOUT_NONE before 3.11 */
        uint64_t linetable;
        uint64_t firstlineno;
        uint64_t code_adaptive;      /* start of the bytecode inside the code object */
        uint64_t code;               /* co_code, the bytecode's bytes object (until 3.10); else
                                      * LAYOUT_NONE */
        uint64_t firsttraceable;     /* int: a frame before this code unit has not started
                                      * (_PyFrame_IsIncomplete, 3.11+); LAYOUT_NONE before */
        uint64_t ob_size;            /* its code units (3.11+); else LAYOUT_NONE */
        uint64_t version;            /* co_version, uint32 (3.12+); else LAYOUT_NONE */
    } code;
    enum layout_linetable linetable;

    struct {
        uint64_t ob_type;
    } object;

    struct {
        uint64_t size;
        uint64_t ob_size;
        uint64_t ob_sval;
    } bytes;

    struct {
        uint64_t state;
        uint64_t length;
        uint64_t ascii_size;         /* where a compact ASCII string's characters start */
        uint64_t compact_size;       /* where a compact non-ASCII string's characters start */
        unsigned kind_shift;         /* bit positions inside the 32-bit state word */
        unsigned compact_bit;
        unsigned ascii_bit;
    } unicode;

    /* The GC state's size and the fields the debug offsets name; the rest of it comes from
     * the generated variants of each version (layout_gc_variants(), src/core/walk/gc.c). */
    struct {
        uint64_t size;
        uint64_t collecting;
        uint64_t frame;              /* the frame that started the collection (3.15+) */
        uint64_t generation_stats;   /* pointer to the collection records (3.15+) */
    } gc;

    /* Enough of dicts, instances and ints to read threading's names. */
    uint64_t module_dict;            /* md_dict in a module object */
    struct {
        uint64_t size;
        uint64_t ma_keys;
        uint64_t ma_values;
        uint64_t log2_size;          /* in the keys object: uint8 (3.11+) */
        uint64_t keys_size;          /* dk_size, a Py_ssize_t slot count (before 3.11) */
        uint64_t log2_index_bytes;   /* uint8 */
        uint64_t kind;               /* uint8 */
        uint64_t nentries;           /* Py_ssize_t */
        uint64_t indices;            /* where the index table starts */
        int kind_general;            /* entries carry a hash; other kinds do not */
        uint64_t entry_size;
        uint64_t entry_key;
        uint64_t entry_value;
        uint64_t uentry_size;
        uint64_t uentry_key;
        uint64_t uentry_value;
        uint64_t values_valid;       /* in a values block (inline values), uint8 */
        uint64_t values_values;      /* before 3.11 ma_values is the PyObject *[] itself: 0 */
        /* 2.7: no keys object; the dict points to one open-addressed table of entries
         * (hash, key, value), ma_mask + 1 of them. LAYOUT_NONE from 3.6 on. */
        uint64_t ma_table;
        uint64_t ma_mask;
    } dict;
    struct {
        uint64_t name;               /* tp_name, a C string */
        uint64_t flags;
        uint64_t basicsize;
        uint64_t cached_keys;        /* in a heap type */
        uint64_t flag_inline_values; /* 0: the version has no such flag */
        uint64_t flag_managed_dict;
        int64_t managed_dict_offset; /* from the object's start; may be negative */
        int64_t managed_values_at;   /* 3.11: pointer to the values, before the object */
        int64_t dict_or_values_at;   /* 3.12: a dict pointer, or values pointer | 1 */
        uint64_t dictoffset;         /* tp_dictoffset in a type object */
        uint64_t instance_in_dict;   /* 2.7's old-style instance: its in_dict; else NONE */
        uint64_t instance_size;      /* ... and the size of one (PyInstanceObject) */
        bool has_managed_values;
        bool has_dict_or_values;
    } type;
    struct {
        uint64_t tag;                /* lv_tag (3.12+); LAYOUT_NONE before */
        uint64_t ob_size;            /* signed digit count before 3.12 */
        uint64_t digits;
        unsigned digit_bits;
        unsigned non_size_bits;
        uint64_t int_ival;           /* 2.7's small int (PyIntObject): its C long; else NONE */
    } pylong;
    /* Names are 2.7's byte strings (PyStringObject, read with the bytes layout): no compact
     * unicode layout. */
    bool str_is_bytes;

    /* What the asyncio task walk needs beyond the frames (3.14+ debug offsets; LAYOUT_NONE and
     * -1 elsewhere). */
    struct {
        uint64_t size;
        uint64_t gi_iframe;          /* the generator's embedded interpreter frame */
        uint64_t gi_frame_state;     /* int8 */
        uint64_t exc_state_before_frame; /* gi_exc_state (an errstack item) starts this many
                                          * bytes before the embedded frame (3.11+) */
        int state_yield_from;        /* gi_frame_state byte values; -1: the version has none */
        int state_yield_from_locked;
        int state_cleared;
        unsigned await_slot;         /* a suspended `await` keeps what it awaits this many stack
                                      * slots below the frame's stack pointer; 0: unknown */
    } gen;
    uint64_t frame_stackpointer;     /* in an interpreter frame */
    uint64_t llist_next;             /* in a struct llist_node */
    struct {
        uint64_t size;
        uint64_t used;
        uint64_t table;
        uint64_t mask;
    } set;
    uint64_t flag_long_subclass;     /* Py_TPFLAGS_LONG_SUBCLASS; 0 when unknown */
    uint64_t flag_str_subclass;      /* Py_TPFLAGS_UNICODE_SUBCLASS (2.7: _STRING_); 0 unknown */

    /* Largest thread-state and code-object reads, for buffers. */
    uint64_t max_struct;
};

/* Fills L from the target's _Py_DebugOffsets bytes BLOB[0..LEN) (3.13+): reads the version and
 * free-threaded flag, picks pytop's definition of that version's struct, and checks that every
 * offset lies inside its struct and every size is plausible. Errors: PT_E_UNSUPPORTED (naming
 * the version and the newest supported), PT_E_BADLAYOUT. */
int layout_from_debug_offsets(const uint8_t *blob, size_t len, struct py_layout *L,
                              struct pt_error *err);

/* Fills L for a version before 3.13 from pytop's generated table of that minor version;
 * HEXVERSION is what the binary says of its version (its minor picks the table).
 * Errors: PT_E_UNSUPPORTED (no table for that minor), PT_E_BADLAYOUT. */
int layout_from_table(uint64_t hexversion, struct py_layout *L, struct pt_error *err);

/* Fills the fields that builds of L's minor version lay out differently (gen-layout's build
 * families), for a target that is a Py_REF_DEBUG build or not (REF_DEBUG): from the one family
 * of that kind. Without one, they stay LAYOUT_NONE and a code marker that needs them becomes
 * CODE_MARKER_NONE. Call after layout_from_debug_offsets() or layout_from_table(). */
void layout_pick_build(struct py_layout *L, bool ref_debug);

/* A runtime field that a version before 3.8 keeps in a global of its own instead of its
 * runtime struct: the symbol that names it (LOCAL ones too, from .symtab) and the uint64_t of
 * struct py_layout's runtime it fills, as an offset from the runtime's start. */
struct layout_global {
    const char *symbol;
    const char *file;  /* the source file that defines it, where others use the same name */
    size_t to;       /* offsetof(struct py_layout, runtime....) */
    bool required;   /* without it the interpreter cannot be found */
};

/* The globals L's version keeps runtime fields in; *N gets their count (0 for none). */
const struct layout_global *layout_globals(const struct py_layout *L, size_t *n);

/* The most globals layout_globals() names. */
enum { LAYOUT_GLOBALS_MAX = 8 };

/* Whether pytop has a table for the version of LAYOUT_VERSION_KEY() KEY (before 3.13). */
bool layout_has_table(unsigned key);

/* "3.15.2" (or "3.15.0a1", "3.15.2+") from a PY_VERSION_HEX, into BUF. */
void layout_version_string(uint64_t hexversion, char *buf, size_t size);

/* The versions pytop supports, for error messages ("2.7 and 3.6 to 3.15"). */
const char *layout_supported(void);

/* Reads a little-endian integer of WIDTH bytes (1, 2, 4 or 8) at OFF in BUF[0..SIZE). Returns
 * false (and leaves *OUT alone) when it does not fit. */
static inline bool layout_read_uint(const void *buf, size_t size, uint64_t off, unsigned width,
                                    uint64_t *out)
{
    uint64_t end;
    if (off == LAYOUT_NONE || __builtin_add_overflow(off, width, &end) || end > size) {
        return false;
    }
    const uint8_t *p = (const uint8_t *)buf + off;
    switch (width) {
    case 1:
        *out = p[0];
        return true;
    case 2: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        *out = v;
        return true;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        *out = v;
        return true;
    }
    case 8:
        memcpy(out, p, sizeof *out);
        return true;
    default:
        return false;
    }
}

static inline bool layout_read_u64(const void *buf, size_t size, uint64_t off, uint64_t *out)
{
    return layout_read_uint(buf, size, off, 8, out);
}

static inline bool layout_has(uint64_t off)
{
    return off != LAYOUT_NONE;
}

/* Whether a field of WIDTH bytes at OFF lies wholly inside a struct of SIZE bytes. */
static inline bool layout_field_fits(uint64_t off, uint64_t width, uint64_t size)
{
    uint64_t end;
    return !__builtin_add_overflow(off, width, &end) && end <= size;
}

#endif
