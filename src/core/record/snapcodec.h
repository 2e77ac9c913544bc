/* snapcodec: a whole snapshot as bytes and back, for the full snapshots a recording keeps
 * (varint.h's encodings, led by a format version). */
#ifndef PYTOP_CORE_SNAPCODEC_H
#define PYTOP_CORE_SNAPCODEC_H

#include <stddef.h>

struct pt_error;
struct snapshot;
struct strbuf;

/* The format snapcodec_encode() writes; snapcodec_decode() refuses any other. */
enum { SNAPCODEC_VERSION = 1 };

/* Appends S, whole, to OUT. Frames several owners share are written once per owner. Returns
 * 0, or -1 (PT_E_NOMEM when OUT failed). */
int snapcodec_encode(const struct snapshot *s, struct strbuf *out, struct pt_error *err);

/* The snapshot encoded in P[0..N), in a new arena with its strings copied (P may go once this
 * returns); the caller frees it with snapshot_free(). The bytes are trusted in nothing: every
 * count is held to limits.h's limits and to the bytes left (what is allocated is a small
 * multiple of N), every enum and number to its range; an argument or a warning cannot be
 * unknown, and bytes after the snapshot are an error. An instruction table this pytop does not
 * have leaves opcodes NULL. Errors: PT_E_FORMAT (with a short reason), PT_E_NOMEM. */
struct snapshot *snapcodec_decode(const void *p, size_t n, struct pt_error *err);

#endif
