/* ui_dump: the `d` key: a snapshot written to a new text file in the current directory. */
#ifndef PYTOP_UI_UI_DUMP_H
#define PYTOP_UI_UI_DUMP_H

#include <stddef.h>

struct snapshot;
struct snapshot_source;
struct pt_error;

/* Writes S as the text dump (source lines from SRC, may be NULL), then the asyncio trees of
 * TASKS (read at the same refresh; may be NULL), to a new file pytop-PID-YYYYmmdd-HHMMSS.txt
 * (the snapshot's local time; -2, -3... appended when taken), created exclusively with mode
 * 0600, and puts its name in NAME. Errors: PT_E_IO, PT_E_NOMEM. */
int ui_dump_write(const struct snapshot *s, const struct snapshot *tasks,
                  const struct snapshot_source *src, char *name, size_t size,
                  struct pt_error *err);

#endif
