/* proc_batch: how batched reads of target memory are planned: close regions merged into one,
 * and read-ahead of the regions a repeated walk read last time. OS-independent; proc_<os>.c
 * hands it the function that really reads. */
#ifndef PYTOP_CORE_PROC_BATCH_H
#define PYTOP_CORE_PROC_BATCH_H

#include <stddef.h>

#include "core/target/proc.h"

/* Reads N regions exactly as given (at most PROC_IOV_MAX); 0 or -1. */
typedef int (*proc_batch_reader)(void *ctx, const struct proc_iov *iov, size_t n);

struct proc_batch;
struct pt_error;

/* NULL on out of memory. */
struct proc_batch *proc_batch_new(void);
void proc_batch_free(struct proc_batch *b);

/* Reads IOV[0..N): regions inside what was read ahead are copied from it; the others are read
 * with READ, close ones merged into one region. Returns 0 when every region was read; 1 when
 * some are left to the caller: *REST, *N_REST (valid until the next call) then lists them
 * (NULL: all N). */
int proc_batch_read(struct proc_batch *b, const struct proc_iov *iov, size_t n,
                    proc_batch_reader read, void *ctx, struct proc_iov **rest, size_t *n_rest);

/* What every proc_<os>.c's proc_read_many() does first: checks *IOV[0..*N) against its bounds
 * (PT_E_LIMIT past PROC_IOV_MAX regions or PROC_READ_MAX bytes, PT_E_READ for a region past the
 * end of the address space), then reads what read-ahead and merging can (B NULL: neither).
 * Returns 0 when all is read, -1 (ERR filled) when the bounds refuse the call, 1 when *IOV and
 * *N (then what is left) are for the caller to read region by region. */
int proc_batch_start(struct proc_batch *b, const struct proc_iov **iov, size_t *n,
                     proc_batch_reader read, void *ctx, struct pt_error *err);

/* What a proc backend (proc_<os>.c; tests/fuzz/proc_image.c) gives the reads proc_batch.c
 * implements for all of them (proc_read_many(), proc_read_now(), proc_read_bytes(), the
 * read-ahead): its batch (NULL: no merging, no read-ahead), and its own read of N regions, each
 * exactly as given (0, or -1 with ERR, which may be NULL, filled). */
struct proc_batch *proc_backend_batch(const struct proc *p);
int proc_backend_read(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err);

/* See proc_readahead_begin(), proc_readahead_end() and proc_readahead_each() in proc.h; B may
 * be NULL (no read-ahead: they do nothing). */
void proc_batch_readahead_begin(struct proc_batch *b, proc_batch_reader read, void *ctx);
void proc_batch_readahead_end(struct proc_batch *b);
void proc_batch_readahead_each(const struct proc_batch *b, proc_region_fn fn, void *ctx);

#endif
