/* unwind_instr: the instruction each Python frame of a snapshot is at (--opcodes): the code
 * unit at the frame's instruction, read for every frame in one or two batched reads once the
 * walk is done. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/layout.h"
#include "core/layout/opcodes.h"
#include "core/model/snapshot.h"
#include "core/pyobj/code.h"
#include "core/target/proc.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/walk/unwind.h"
#include "core/walk/unwind_threads.h"

/* One frame whose instruction is to be read. */
struct unwind_instr {
    struct snap_frame *frame;
    uint64_t at;       /* 3.11+: the code unit's address; before: the code object's */
    uint64_t offset;   /* bytes from the bytecode's start */
    uint64_t limit;    /* the bytecode's length in bytes; 0 unknown (read with it, before 3.11) */
    uint64_t bytes;    /* before 3.11: co_code, as read */
    uint64_t start;    /* 3.11+: where the code object's bytecode starts */
    uint8_t unit[2];
    bool ok;
};

void unwind_instr_add(struct unwind *u, struct snap_frame *f, const struct code_info *ci,
                      uint64_t instr_ptr)
{
    const struct py_layout *L = u->L;
    uint64_t offset;
    if (!u->opcodes || ci == NULL || !code_instr_offset(ci, L, instr_ptr, &offset) ||
        offset > UINT32_MAX) {
        return;
    }
    if (L->frames != FRAMES_OBJECTS && ci->n_units > 0 && offset >= ci->n_units * 2) {
        return;
    }
    if (L->frames == FRAMES_OBJECTS && !layout_has(L->code.code)) {
        return;
    }
    if (u->n_instr == u->cap_instr) {
        size_t cap = u->cap_instr ? u->cap_instr * 2 : 256;
        if (cap > LIMIT_OPCODE_FRAMES) {
            return;
        }
        struct unwind_instr *fresh = realloc(u->instr, cap * sizeof *fresh);
        if (fresh == NULL) {
            return;
        }
        u->instr = fresh;
        u->cap_instr = cap;
    }
    struct unwind_instr *in = &u->instr[u->n_instr++];
    memset(in, 0, sizeof *in);
    in->frame = f;
    in->offset = offset;
    in->at = L->frames == FRAMES_OBJECTS ? ci->addr : instr_ptr;
    in->limit = L->frames != FRAMES_OBJECTS ? ci->n_units * 2 : 0;
    in->start = ci->addr + L->code.code_adaptive;
}

/* Reads what IOV asks for, PROC_IOV_MAX regions a call; a region not read leaves its
 * instruction unknown (ok false). */
static void read_all(struct unwind *u, struct proc_iov *iov, size_t n, bool *ok)
{
    for (size_t i = 0; i < n; i += PROC_IOV_MAX) {
        size_t m = n - i < PROC_IOV_MAX ? n - i : PROC_IOV_MAX;
        if (proc_read_many(u->proc, iov + i, m, NULL) == 0) {
            for (size_t k = 0; k < m; k++) {
                ok[i + k] = true;
            }
            continue;
        }
        for (size_t k = 0; k < m; k++) { /* one by one: a frame gone fails alone */
            ok[i + k] = proc_read_bytes(u->proc, iov[i + k].addr, iov[i + k].dst,
                                        iov[i + k].len, NULL) == 0;
        }
    }
}

/* One bytecode to read for read_owners(): the frames of one code object share it. */
struct bytecode_ref {
    uint64_t start;
    uint64_t limit;
    size_t frame; /* index into u->instr */
};

static int cmp_refs(const void *pa, const void *pb)
{
    const struct bytecode_ref *a = pa;
    const struct bytecode_ref *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return (a->limit > b->limit) - (a->limit < b->limit);
}

/* 3.11 and 3.12 (T->caches): a frame's pointer may sit in an instruction's inline caches, so
 * each code object's bytecode is read whole, once however many frames run it (up to
 * LIMIT_OPCODE_BYTES for all), and stepped through from the start to the instruction that
 * holds each frame's unit. False when it could not be. */
static bool read_owners(struct unwind *u, const struct opcode_table *t, size_t n)
{
    struct bytecode_ref *refs = malloc((n ? n : 1) * sizeof *refs);
    struct proc_iov *iov = malloc((n ? n : 1) * sizeof *iov);
    bool *ok = calloc(n ? n : 1, sizeof *ok);
    size_t *region = malloc((n ? n : 1) * sizeof *region); /* each frame's read */
    uint8_t *buf = NULL;
    bool done = refs != NULL && iov != NULL && ok != NULL && region != NULL;
    size_t total = 0;
    size_t m = 0;
    for (size_t i = 0; done && i < n; i++) {
        refs[i] = (struct bytecode_ref){u->instr[i].start, u->instr[i].limit, i};
        done = u->instr[i].limit != 0;
    }
    if (done) {
        qsort(refs, n, sizeof *refs, cmp_refs);
        for (size_t i = 0; i < n && done; i++) {
            bool same = i > 0 && refs[i].start == refs[i - 1].start &&
                        refs[i].limit == refs[i - 1].limit;
            if (!same) {
                done = refs[i].limit <= LIMIT_OPCODE_BYTES - total;
                iov[m++] = (struct proc_iov){refs[i].start, NULL, refs[i].limit};
                total += refs[i].limit;
            }
            region[refs[i].frame] = m - 1;
        }
    }
    if (done && (buf = malloc(total ? total : 1)) == NULL) {
        done = false;
    }
    if (done) {
        for (size_t r = 0, at = 0; r < m; r++) {
            iov[r].dst = buf + at;
            at += iov[r].len;
        }
        read_all(u, iov, m, ok);
        for (size_t i = 0; i < n; i++) {
            struct unwind_instr *in = &u->instr[i];
            const uint8_t *code = iov[region[i]].dst;
            long owner = ok[region[i]] ? opcode_owner(t, code, in->limit, in->offset) : -1;
            if (owner >= 0) {
                in->offset = (uint64_t)owner;
                memcpy(in->unit, code + owner, 2);
                in->ok = true;
            }
        }
    }
    free(buf);
    free(refs);
    free(iov);
    free(ok);
    free(region);
    return done;
}

void unwind_instr_read(struct unwind *u, struct snapshot *s)
{
    const struct py_layout *L = u->L;
    size_t n = u->n_instr;
    u->n_instr = 0;
    if (n == 0) {
        return;
    }
    struct proc_iov *iov = malloc(n * 2 * sizeof *iov);
    bool *ok = calloc(n * 2, sizeof *ok);
    int64_t *sizes = calloc(n, sizeof *sizes); /* ob_size of each co_code */
    if (iov == NULL || ok == NULL || sizes == NULL) {
        snapshot_warn(s, "instructions not read: out of memory");
        goto done;
    }
    bool objects = L->frames == FRAMES_OBJECTS;
    if (objects) {
        /* co_code first: the bytes object holding the bytecode. */
        for (size_t i = 0; i < n; i++) {
            iov[i] = (struct proc_iov){u->instr[i].at + L->code.code, &u->instr[i].bytes, 8};
        }
        read_all(u, iov, n, ok);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            struct unwind_instr *in = &u->instr[i];
            if (!ok[i]) {
                in->bytes = 0;
            }
            if (in->bytes == 0) {
                continue;
            }
            /* Then the bytes object's length (the offset must lie inside) and the unit. */
            iov[m++] = (struct proc_iov){in->bytes + L->bytes.ob_size, &sizes[i], 8};
            iov[m++] = (struct proc_iov){in->bytes + L->bytes.ob_sval + in->offset, in->unit, 2};
        }
        memset(ok, 0, n * 2 * sizeof *ok);
        read_all(u, iov, m, ok);
        for (size_t i = 0, k = 0; i < n; i++) {
            struct unwind_instr *in = &u->instr[i];
            if (in->bytes == 0) {
                continue;
            }
            /* The whole instruction lies inside: 2 bytes, or 1 or 3 before wordcode (a bytes
             * object keeps a NUL after its last byte, so reading 2 was safe). */
            in->ok = ok[k] && ok[k + 1] && sizes[i] >= 0 &&
                     in->offset + opcode_length(s->opcodes, in->unit[0]) <= (uint64_t)sizes[i];
            k += 2;
        }
    } else if (s->opcodes->caches == NULL || !read_owners(u, s->opcodes, n)) {
        for (size_t i = 0; i < n; i++) {
            iov[i] = (struct proc_iov){u->instr[i].at, u->instr[i].unit, 2};
        }
        read_all(u, iov, n, ok);
        for (size_t i = 0; i < n; i++) {
            u->instr[i].ok = ok[i];
        }
    }
    size_t unread = 0;
    for (size_t i = 0; i < n; i++) {
        struct unwind_instr *in = &u->instr[i];
        /* The opcode is the code unit's first byte (Include/cpython/code.h: _Py_CODEUNIT). */
        if (in->ok && s->opcodes->names[in->unit[0]] != NULL) {
            in->frame->op1 = (uint16_t)(in->unit[0] + 1);
            in->frame->op_offset = (uint32_t)in->offset;
        } else {
            unread++;
        }
    }
    if (unread > 0) {
        snapshot_warn(s, "instructions: %zu of %zu frames' could not be read", unread, n);
    }
done:
    free(iov);
    free(ok);
    free(sizes);
}

long unwind_read_bytecode(struct unwind *u, uint64_t code_addr, uint64_t n_units, uint8_t *buf,
                          size_t cap, struct pt_error *err)
{
    const struct py_layout *L = u->L;
    uint64_t start;
    uint64_t len;
    if (L->frames != FRAMES_OBJECTS) {
        start = code_addr + L->code.code_adaptive;
        len = n_units * 2;
        if (n_units == 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "code object of unknown length");
        }
    } else {
        /* co_code: a bytes object, its length first. */
        uint64_t bytes = 0;
        int64_t size = 0;
        if (!layout_has(L->code.code)) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0, "no co_code in this layout");
        }
        if (proc_read_bytes(u->proc, code_addr + L->code.code, &bytes, 8, err) < 0 ||
            bytes == 0 || proc_read_bytes(u->proc, bytes + L->bytes.ob_size, &size, 8, err) < 0) {
            return pt_error_set(err, PT_E_READ, 0, "co_code of 0x%" PRIx64 " not read", code_addr);
        }
        /* Wordcode is whole code units; before it (OPCODE_BYTECODE) any length is. */
        const struct opcode_table *t = unwind_opcode_table(u);
        bool units = t == NULL || t->encoding == OPCODE_WORDCODE;
        if (size < 0 || (units && size % 2 != 0)) {
            return pt_error_set(err, PT_E_FORMAT, 0, "co_code of %" PRId64 " bytes", size);
        }
        start = bytes + L->bytes.ob_sval;
        len = (uint64_t)size;
    }
    if (len > cap || len > LIMIT_OPCODE_BYTES) {
        return pt_error_set(err, PT_E_LIMIT, 0, "bytecode of %" PRIu64 " bytes", len);
    }
    if (proc_read_bytes(u->proc, start, buf, (size_t)len, err) < 0) {
        return -1;
    }
    return (long)len;
}

const struct opcode_table *unwind_opcode_table(const struct unwind *u)
{
    return opcode_table_for(LAYOUT_VERSION_KEY(u->L->hexversion));
}

const struct py_layout *unwind_layout(const struct unwind *u)
{
    return u->L;
}
