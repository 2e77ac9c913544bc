/* sampler_heat: what the source heat view counts: for the one function asked about, each line's
 * and each instruction's own and total thread-samples, in the window's time buckets. Nothing is
 * counted, and nothing costs, while no function is asked about. */
#ifndef PYTOP_CORE_SAMPLER_HEAT_H
#define PYTOP_CORE_SAMPLER_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sampler/sampler.h"
#include "core/sampler/sampler_table.h"

struct code_info;
struct opcode_table;
struct py_layout;

enum {
    HEAT_MAX_ENTRIES = 1 << 14, /* distinct lines and instructions counted; more are dropped */
    HEAT_MAX_CODES = 8,         /* code objects of the function told apart (a reload makes one
                                 * more) */
    HEAT_CODE_SNAPSHOT = 0xff,  /* the code slot of frames counted from snapshots (no code) */
    HEAT_MEMO = 512,            /* offset-to-line lookups remembered */
};

/* A code object of the function, as samples name it. */
struct heat_code {
    uint64_t serial; /* the code cache's (sample.h) */
    uint64_t addr;
    uint64_t n_units; /* 0 unknown (before 3.11) */
};

struct heat_entry {
    bool instr;       /* an instruction (CODE, OFFSET, on LINE); else line LINE */
    uint8_t code;     /* slot in codes[], or HEAT_CODE_SNAPSHOT */
    int32_t line;     /* -1 unknown */
    uint32_t offset;  /* bytes into the bytecode */
    uint64_t mark;    /* the last stack that counted it in total */
    /* The code units seen at this instruction when the bytecode was read (opcode + 1; 0 none):
     * the specialised forms it took while counted. */
    uint16_t seen[SAMPLER_HEAT_FORMS];
};

struct heat_bucket {
    int64_t number; /* INT64_MIN: holds nothing */
    uint64_t thread_samples;
    uint64_t own; /* the function's */
    uint64_t total;
    uint32_t *own_c; /* by entry, CAP of them */
    uint32_t *total_c;
    uint32_t cap;
};

struct sampler_heat_state {
    char *function;
    size_t function_len;
    char *file;
    size_t file_len;
    int first_line;
    const struct py_layout *L; /* for compact frames' lines; NULL: snapshots only */
    double asked;              /* when counting began */
    /* The function's entry in the window's table, once found (its serial tells a new one). */
    uint32_t func_index;
    uint64_t func_serial;
    struct heat_code codes[HEAT_MAX_CODES];
    size_t n_codes;
    struct heat_entry *entries;
    uint32_t n_entries;
    uint32_t cap_entries;
    uint32_t *index; /* open addressing: entry + 1, 0 empty */
    size_t index_mask;
    struct heat_bucket buckets[SAMPLER_BUCKETS];
    int64_t newest;
    struct heat_bucket *cur; /* the bucket of the thread-sample being counted */
    uint64_t stack;          /* numbers the thread-samples counted */
    bool in_stack;           /* the function was counted in this stack's total */
    bool dropped;            /* entries or code objects were left out */
    struct {
        uint64_t serial; /* 0 empty */
        uint32_t offset;
        int32_t line;
    } memo[HEAT_MEMO];
};

/* A heat state for the function (FUNCTION, FILE, FIRST_LINE) (copied), counting from ASKED;
 * NULL on out of memory. */
struct sampler_heat_state *heat_new(const char *function, size_t function_len, const char *file,
                                    size_t file_len, int first_line, const struct py_layout *L,
                                    double asked);
void heat_free(struct sampler_heat_state *h);
/* Forgets every count (the window was cleared or resized); counting goes on from NOW. */
void heat_clear(struct sampler_heat_state *h, double now);

/* A thread-sample that matched the mode begins, in the window's bucket NUMBER. */
void heat_thread_sample(struct sampler_heat_state *h, int64_t number);
/* Whether the table's function entry FI of T is the one H counts (remembered once found). */
bool heat_is_function(struct sampler_heat_state *h, const struct sampler_table *t, uint32_t fi);
/* The slot of code serial SERIAL, or -1 when it is not one of the function's known yet. */
static inline int heat_code_slot(const struct sampler_heat_state *h, uint64_t serial)
{
    for (size_t i = 0; i < h->n_codes; i++) {
        if (h->codes[i].serial == serial) {
            return (int)i;
        }
    }
    return -1;
}
/* Makes CI one of the function's code objects; its slot, or -1 when too many were seen. */
int heat_claim_code(struct sampler_heat_state *h, const struct code_info *ci);
/* Counts a frame of the function in the current thread-sample: compact (code slot SLOT, code
 * CI, OFFSET; SAMPLE_OFFSET_UNKNOWN when not known), its line looked up. INNERMOST: it is
 * the stack's innermost counted frame (own). */
void heat_compact_frame(struct sampler_heat_state *h, int slot, const struct code_info *ci,
                        uint32_t offset, bool innermost);
/* The same for a snapshot's frame: LINE (-1 unknown) and OFFSET as the snapshot read them. */
void heat_frame(struct sampler_heat_state *h, int slot, int line, uint32_t offset,
                bool innermost);

/* Reads code object C's bytecode into BUF (CAP bytes): the bytes read, or -1. */
typedef long (*heat_read_fn)(void *ctx, const struct heat_code *c, uint8_t *buf, size_t cap);

/* The counts over the buckets the window holds at bucket NOW_BUCKET, as a self-contained copy
 * (sampler_heat_free()); SPAN_S and MODE as the window says. With OPCODES (the version's table)
 * and READ, each code object's bytecode is read once and every instruction named, the forms
 * seen added to what earlier calls saw. NULL on out of memory. */
struct sampler_heat *heat_stats(struct sampler_heat_state *h, int64_t now_bucket, double span_s,
                                enum sampler_mode mode, const struct opcode_table *opcodes,
                                heat_read_fn read, void *ctx);

#endif
