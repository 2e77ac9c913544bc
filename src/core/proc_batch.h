/* proc_batch: how batched reads of target memory are planned: close regions merged into one,
 * and read-ahead of the regions a repeated walk read last time. OS-independent; proc_<os>.c
 * hands it the function that really reads. */
#ifndef PYTOP_CORE_PROC_BATCH_H
#define PYTOP_CORE_PROC_BATCH_H

#include <stddef.h>

#include "core/proc.h"

/* Reads N regions exactly as given (at most PROC_IOV_MAX); 0 or -1. */
typedef int (*proc_batch_reader)(void *ctx, const struct proc_iov *iov, size_t n);

struct proc_batch;

/* NULL on out of memory. */
struct proc_batch *proc_batch_new(void);
void proc_batch_free(struct proc_batch *b);

/* Reads IOV[0..N): regions inside what was read ahead are copied from it; the others are read
 * with READ, close ones merged into one region. Returns 0 when every region was read; 1 when
 * some are left to the caller: *REST, *N_REST (valid until the next call) then lists them
 * (NULL: all N). */
int proc_batch_read(struct proc_batch *b, const struct proc_iov *iov, size_t n,
                    proc_batch_reader read, void *ctx, struct proc_iov **rest, size_t *n_rest);

/* Reads IOV[0..N) with READ, close regions merged into one, never from the read-ahead copy
 * (nor recorded for it). Returns 0 when done; 1 when merging would not help or failed: the
 * caller then reads them as they are. */
int proc_batch_read_merged(struct proc_batch *b, const struct proc_iov *iov, size_t n,
                           proc_batch_reader read, void *ctx);

/* See proc_readahead_begin() and proc_readahead_end() in proc.h. */
void proc_batch_readahead_begin(struct proc_batch *b, proc_batch_reader read, void *ctx);
void proc_batch_readahead_end(struct proc_batch *b);

#endif
