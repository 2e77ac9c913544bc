/* proc_image: the proc interface (core/proc.h) over a memory image instead of a process, for
 * the walker fuzzer; linked in place of core/proc_linux.c. */
#ifndef PYTOP_FUZZ_PROC_IMAGE_H
#define PYTOP_FUZZ_PROC_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct pt_error;
struct image_header;

/* A target whose memory is the image in BUF (image.h), which must outlive it: reads outside its
 * regions fail as unmapped memory does (PT_E_READ). Threads, their states and the pid are the
 * image's; it has no mappings and no files. *HEADER points into the handle. Errors:
 * PT_E_FORMAT (BUF is no image), PT_E_NOMEM. Closed with proc_close(). */
struct proc *proc_image_open(const uint8_t *buf, size_t len, const struct image_header **header,
                             struct pt_error *err);

#endif
