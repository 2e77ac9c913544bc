/* sampler_heat: what the source heat view counts, for one function, in time buckets. */
#include "config.h"

#include "core/sampler/sampler_heat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/opcodes.h"
#include "core/pyobj/code.h"
#include "core/walk/sample.h"

/* A function's lines and instructions are few; these grow on demand up to HEAT_MAX_ENTRIES. */
enum {
    ENTRIES_MIN = 64,
    BYTECODE_MAX = 1 << 20, /* bytes of one code object's bytecode read to name instructions */
};

static char *dup_bytes(const char *p, size_t len)
{
    char *d = malloc(len + 1);
    if (d != NULL) {
        if (len > 0) {
            memcpy(d, p, len);
        }
        d[len] = '\0';
    }
    return d;
}

struct sampler_heat_state *heat_new(const char *function, size_t function_len, const char *file,
                                    size_t file_len, int first_line, const struct py_layout *L,
                                    double asked)
{
    struct sampler_heat_state *h = calloc(1, sizeof *h);
    if (h == NULL) {
        return NULL;
    }
    h->function = dup_bytes(function, function_len);
    h->function_len = function_len;
    h->file = file != NULL ? dup_bytes(file, file_len) : NULL;
    h->file_len = file != NULL ? file_len : 0;
    if (h->function == NULL || (file != NULL && h->file == NULL)) {
        heat_free(h);
        return NULL;
    }
    h->first_line = first_line;
    h->L = L;
    h->func_index = SAMPLER_TABLE_NONE;
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        h->buckets[i].number = INT64_MIN; /* empty, and nothing to zero */
    }
    heat_clear(h, asked);
    return h;
}

void heat_free(struct sampler_heat_state *h)
{
    if (h == NULL) {
        return;
    }
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        free(h->buckets[i].own_c);
        free(h->buckets[i].total_c);
    }
    free(h->entries);
    free(h->index);
    free(h->function);
    free(h->file);
    free(h);
}

/* Takes what bucket B holds off it (counts past the entries made so far are always zero). */
static void bucket_empty(struct sampler_heat_state *h, struct heat_bucket *b)
{
    if (b->number == INT64_MIN) {
        return;
    }
    size_t n = b->cap < h->n_entries ? b->cap : h->n_entries;
    if (n > 0) {
        memset(b->own_c, 0, n * sizeof *b->own_c);
        memset(b->total_c, 0, n * sizeof *b->total_c);
    }
    b->thread_samples = b->own = b->total = 0;
    b->number = INT64_MIN;
}

void heat_clear(struct sampler_heat_state *h, double now)
{
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        bucket_empty(h, &h->buckets[i]);
    }
    /* Entries stay (their counts are the buckets'); the code objects and memo too. */
    h->newest = INT64_MIN;
    h->cur = NULL;
    h->asked = now;
}


static struct heat_bucket *bucket_slot(struct sampler_heat_state *h, int64_t number)
{
    int64_t i = number % SAMPLER_BUCKETS;
    return &h->buckets[i < 0 ? i + SAMPLER_BUCKETS : i];
}

void heat_thread_sample(struct sampler_heat_state *h, int64_t number)
{
    if (h->newest == INT64_MIN || number - h->newest >= SAMPLER_BUCKETS) {
        for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
            bucket_empty(h, &h->buckets[i]);
        }
        h->newest = number;
    } else if (number > h->newest) {
        for (int64_t j = h->newest + 1; j <= number; j++) {
            bucket_empty(h, bucket_slot(h, j));
        }
        h->newest = number;
    }
    /* Time that runs backwards counts into the newest bucket, as the window's does. */
    struct heat_bucket *b = bucket_slot(h, h->newest);
    b->number = h->newest;
    b->thread_samples++;
    h->cur = b;
    h->stack++;
    h->in_stack = false;
}

bool heat_is_function(struct sampler_heat_state *h, const struct sampler_table *t, uint32_t fi)
{
    const struct sampler_table_func *e = sampler_table_func_at(t, fi);
    if (h->func_index == fi && e->serial == h->func_serial) {
        return true;
    }
    /* The entry found before still lives: FI is another function. */
    if (h->func_index < t->funcs.n) {
        const struct sampler_table_func *known = sampler_table_func_at(t, h->func_index);
        if (known->used && known->serial == h->func_serial) {
            return false;
        }
    }
    if (e->first_line != h->first_line || e->function == NULL ||
        e->function_len != h->function_len || (e->file == NULL) != (h->file == NULL) ||
        e->file_len != h->file_len || memcmp(e->function, h->function, h->function_len) != 0 ||
        (h->file != NULL && memcmp(e->file, h->file, h->file_len) != 0)) {
        return false;
    }
    h->func_index = fi;
    h->func_serial = e->serial;
    return true;
}

int heat_claim_code(struct sampler_heat_state *h, const struct code_info *ci)
{
    int slot = heat_code_slot(h, ci->serial);
    if (slot >= 0) {
        return slot;
    }
    if (h->n_codes == HEAT_MAX_CODES) {
        h->dropped = true;
        return -1;
    }
    h->codes[h->n_codes] = (struct heat_code){ci->serial, ci->addr, ci->n_units};
    return (int)h->n_codes++;
}

static uint64_t entry_key(bool instr, uint8_t code, int line, uint32_t offset)
{
    return instr ? (1ULL << 63) | (uint64_t)code << 32 | offset : (uint64_t)(uint32_t)line;
}

static size_t key_hash(uint64_t k)
{
    k ^= k >> 29;
    k *= 0xbf58476d1ce4e5b9ULL;
    k ^= k >> 32;
    return (size_t)k;
}

static bool index_grow(struct sampler_heat_state *h)
{
    size_t slots = h->index_mask ? (h->index_mask + 1) * 2 : 256;
    uint32_t *fresh = calloc(slots, sizeof *fresh);
    if (fresh == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < h->n_entries; i++) {
        const struct heat_entry *e = &h->entries[i];
        size_t at = key_hash(entry_key(e->instr, e->code, e->line, e->offset)) & (slots - 1);
        while (fresh[at] != 0) {
            at = (at + 1) & (slots - 1);
        }
        fresh[at] = i + 1;
    }
    free(h->index);
    h->index = fresh;
    h->index_mask = slots - 1;
    return true;
}

/* The entry of (INSTR, CODE, LINE, OFFSET), made when new; -1 when bounds or memory say no. */
static long entry_of(struct sampler_heat_state *h, bool instr, uint8_t code, int line,
                     uint32_t offset)
{
    uint64_t k = entry_key(instr, code, line, offset);
    if (h->index != NULL) {
        for (size_t at = key_hash(k) & h->index_mask;; at = (at + 1) & h->index_mask) {
            uint32_t i = h->index[at];
            if (i == 0) {
                break;
            }
            const struct heat_entry *e = &h->entries[i - 1];
            if (entry_key(e->instr, e->code, e->line, e->offset) == k) {
                return (long)i - 1;
            }
        }
    }
    if (h->n_entries == HEAT_MAX_ENTRIES) {
        h->dropped = true;
        return -1;
    }
    if (h->n_entries == h->cap_entries) {
        uint32_t cap = h->cap_entries ? h->cap_entries * 2 : ENTRIES_MIN;
        struct heat_entry *fresh = realloc(h->entries, cap * sizeof *fresh);
        if (fresh == NULL) {
            h->dropped = true;
            return -1;
        }
        h->entries = fresh;
        h->cap_entries = cap;
    }
    if ((h->n_entries + 1) * 2 > h->index_mask && !index_grow(h)) {
        h->dropped = true;
        return -1;
    }
    uint32_t i = h->n_entries++;
    h->entries[i] = (struct heat_entry){.instr = instr, .code = code, .line = line,
                                        .offset = offset};
    size_t at = key_hash(k) & h->index_mask;
    while (h->index[at] != 0) {
        at = (at + 1) & h->index_mask;
    }
    h->index[at] = i + 1;
    return (long)i;
}

/* Room in the current bucket for entry I. */
static bool bucket_room(struct sampler_heat_state *h, struct heat_bucket *b, uint32_t i)
{
    if (i < b->cap) {
        return true;
    }
    uint32_t cap = h->cap_entries > i ? h->cap_entries : i + 1;
    uint32_t *own = realloc(b->own_c, cap * sizeof *own);
    if (own != NULL) {
        b->own_c = own;
    }
    uint32_t *total = own != NULL ? realloc(b->total_c, cap * sizeof *total) : NULL;
    if (total == NULL) {
        h->dropped = true;
        return false;
    }
    b->total_c = total;
    memset(b->own_c + b->cap, 0, (cap - b->cap) * sizeof *b->own_c);
    memset(b->total_c + b->cap, 0, (cap - b->cap) * sizeof *b->total_c);
    b->cap = cap;
    return true;
}

static void count_entry(struct sampler_heat_state *h, long i, bool innermost)
{
    struct heat_bucket *b = h->cur;
    if (i < 0 || !bucket_room(h, b, (uint32_t)i)) {
        return;
    }
    struct heat_entry *e = &h->entries[i];
    if (e->mark != h->stack) {
        e->mark = h->stack;
        b->total_c[i]++;
    }
    b->own_c[i] += innermost;
}

void heat_frame(struct sampler_heat_state *h, int slot, int line, uint32_t offset,
                bool innermost)
{
    if (h->cur == NULL || slot < 0) {
        return;
    }
    if (!h->in_stack) {
        h->in_stack = true;
        h->cur->total++;
    }
    h->cur->own += innermost;
    count_entry(h, entry_of(h, false, 0, line, 0), innermost);
    if (offset != SAMPLE_OFFSET_UNKNOWN) {
        count_entry(h, entry_of(h, true, (uint8_t)slot, line, offset), innermost);
    }
}

void heat_compact_frame(struct sampler_heat_state *h, int slot, const struct code_info *ci,
                        uint32_t offset, bool innermost)
{
    int line = ci->firstlineno; /* a frame that has not started is at the first line */
    if (ci->offsets_are_lines) {
        line = offset != SAMPLE_OFFSET_UNKNOWN && offset <= INT32_MAX ? (int)offset : -1;
        offset = SAMPLE_OFFSET_UNKNOWN;
    } else if (offset != SAMPLE_OFFSET_UNKNOWN) {
        size_t m = key_hash(ci->serial ^ (uint64_t)offset << 40) % HEAT_MEMO;
        if (h->memo[m].serial == ci->serial && h->memo[m].offset == offset) {
            line = h->memo[m].line;
        } else {
            line = h->L != NULL ? code_offset_line(ci, h->L, offset) : -1;
            h->memo[m].serial = ci->serial;
            h->memo[m].offset = offset;
            h->memo[m].line = line;
        }
    }
    heat_frame(h, slot, line, offset, innermost);
}

/* --- the counts as the view shows them ---------------------------------------------------- */

static int cmp_lines(const void *a, const void *b)
{
    const struct sampler_heat_line *x = a;
    const struct sampler_heat_line *y = b;
    return (x->line > y->line) - (x->line < y->line);
}

static int cmp_instrs(const void *a, const void *b)
{
    const struct sampler_heat_instr *x = a;
    const struct sampler_heat_instr *y = b;
    if (x->line != y->line) {
        return (x->line > y->line) - (x->line < y->line);
    }
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Adds the specialised form FORM to OUT's, once. */
static void add_form(struct sampler_heat_instr *out, const char *form)
{
    for (size_t j = 0; j < out->n_forms; j++) {
        if (strcmp(out->forms[j], form) == 0) {
            return;
        }
    }
    if (out->n_forms < SAMPLER_HEAT_FORMS) {
        out->forms[out->n_forms++] = form;
    }
}

/* Remembers that entry E's instruction was seen as code unit OP. */
static void note_seen(struct heat_entry *e, int op)
{
    for (size_t k = 0; k < SAMPLER_HEAT_FORMS; k++) {
        if (e->seen[k] == op + 1) {
            return;
        }
        if (e->seen[k] == 0) {
            e->seen[k] = (uint16_t)(op + 1);
            return;
        }
    }
}

/* Names the instruction of entry E (bytecode BC of N bytes, read now, or NULL) into OUT: its
 * start (3.11 and 3.12 frames may point into its inline caches) and the forms seen. */
static void name_instr(struct heat_entry *e, const struct opcode_table *t, const uint8_t *bc,
                       long n, struct sampler_heat_instr *out)
{
    if (bc != NULL && n > 0 && e->offset < (uint64_t)n) {
        long at = t->caches != NULL ? opcode_owner(t, bc, (size_t)n, e->offset) : (long)e->offset;
        if (at >= 0 && at < n && (size_t)at + opcode_length(t, bc[at]) <= (size_t)n) {
            out->offset = (uint32_t)at;
            note_seen(e, bc[at]);
        }
    }
    for (size_t k = 0; k < SAMPLER_HEAT_FORMS && e->seen[k] != 0; k++) {
        struct opcode_name d = opcode_describe(t, e->seen[k] - 1);
        if (d.base_name == NULL) {
            continue;
        }
        out->name = d.base_name;
        if (d.specialised != NULL) {
            add_form(out, d.specialised);
        }
    }
}

/* Adds rows of INSTRS[0..N) that name the same instruction (3.11, 3.12: offsets inside one
 * instruction's caches) into one. Returns the rows left. INSTRS is sorted. */
static size_t merge_instrs(struct sampler_heat_instr *in, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && in[m - 1].line == in[i].line && in[m - 1].offset == in[i].offset) {
            in[m - 1].own += in[i].own;
            in[m - 1].total += in[i].total; /* one stack at both: at most counted twice */
            for (size_t k = 0; k < in[i].n_forms; k++) {
                add_form(&in[m - 1], in[i].forms[k]);
            }
            if (in[m - 1].name == NULL) {
                in[m - 1].name = in[i].name;
            }
            continue;
        }
        in[m++] = in[i];
    }
    return m;
}

struct sampler_heat *heat_stats(struct sampler_heat_state *h, int64_t now_bucket, double span_s,
                                enum sampler_mode mode, const struct opcode_table *opcodes,
                                heat_read_fn read, void *ctx)
{
    size_t n = h->n_entries;
    uint64_t *own = calloc(n ? n : 1, sizeof *own);
    uint64_t *total = calloc(n ? n : 1, sizeof *total);
    size_t bytes = sizeof(struct sampler_heat) + n * sizeof(struct sampler_heat_line) +
                   n * sizeof(struct sampler_heat_instr) + h->function_len + h->file_len + 2;
    struct sampler_heat *out = calloc(1, bytes);
    if (own == NULL || total == NULL || out == NULL) {
        free(own);
        free(total);
        free(out);
        return NULL;
    }
    out->lines = (struct sampler_heat_line *)(out + 1);
    out->instrs = (struct sampler_heat_instr *)(out->lines + n);
    char *str = (char *)(out->instrs + n);
    memcpy(str, h->function, h->function_len);
    out->function = (struct snap_str){str, h->function_len};
    str += h->function_len + 1;
    if (h->file != NULL) {
        memcpy(str, h->file, h->file_len);
        out->file = (struct snap_str){str, h->file_len};
    }
    out->first_line = h->first_line;
    out->mode = mode;
    out->span_s = span_s;
    out->truncated = h->dropped;
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        const struct heat_bucket *b = &h->buckets[i];
        if (b->number == INT64_MIN || b->number > now_bucket ||
            b->number <= now_bucket - SAMPLER_BUCKETS) {
            continue;
        }
        out->thread_samples += b->thread_samples;
        out->own += b->own;
        out->total += b->total;
        size_t m = b->cap < n ? b->cap : n;
        for (size_t k = 0; k < m; k++) {
            own[k] += b->own_c[k];
            total[k] += b->total_c[k];
        }
    }
    /* Instructions are named from each code object's bytecode as it is now. */
    long bc_n[HEAT_MAX_CODES] = {0};
    uint8_t *bc_of[HEAT_MAX_CODES] = {NULL};
    if (opcodes != NULL && read != NULL) {
        out->instructions = true;
        for (size_t c = 0; c < h->n_codes; c++) {
            uint64_t units = h->codes[c].n_units;
            size_t cap = units > 0 && units * 2 < BYTECODE_MAX ? (size_t)units * 2 : BYTECODE_MAX;
            bc_of[c] = malloc(cap);
            bc_n[c] = bc_of[c] != NULL ? read(ctx, &h->codes[c], bc_of[c], cap) : -1;
        }
    } else if (read != NULL) {
        snprintf(out->instr_note, sizeof out->instr_note, "no instruction table for this version");
    }
    for (size_t i = 0; i < n; i++) {
        struct heat_entry *e = &h->entries[i];
        if (total[i] == 0) {
            continue;
        }
        if (!e->instr) {
            out->lines[out->n_lines++] = (struct sampler_heat_line){e->line, own[i], total[i]};
        } else if (out->instructions) {
            struct sampler_heat_instr *in = &out->instrs[out->n_instrs++];
            *in = (struct sampler_heat_instr){.line = e->line, .offset = e->offset,
                                              .own = own[i], .total = total[i]};
            bool ours = e->code < h->n_codes;
            name_instr(e, opcodes, ours && bc_n[e->code] > 0 ? bc_of[e->code] : NULL,
                       ours ? bc_n[e->code] : 0, in);
        }
    }
    qsort(out->lines, out->n_lines, sizeof *out->lines, cmp_lines);
    qsort(out->instrs, out->n_instrs, sizeof *out->instrs, cmp_instrs);
    out->n_instrs = merge_instrs(out->instrs, out->n_instrs);
    for (size_t c = 0; c < h->n_codes; c++) {
        free(bc_of[c]);
    }
    free(own);
    free(total);
    return out;
}
