/* fuzz_tasks: _asyncio debug offsets and task graphs (cycles, repeats, DAGs) from hostile bytes. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/model/snapshot.h"
#include "core/util/strbuf.h"
#include "core/asyncio/asyncdebug.h"
#include "core/model/tasktree.h"

/* A writer that takes the text away: what is drawn after it must not depend on it. */
static void drain_text(void *ctx, struct strbuf *sb)
{
    (void)ctx;
    sb->len = 0;
    if (sb->data != NULL) {
        sb->data[0] = '\0';
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_TASKS = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct asyncdebug_offsets o;
    asyncdebug_parse_offsets(data, size, &o, NULL);

    /* Three bytes a task: its id (and, bit 4, whether it has a name: before 3.8 none, and it is
     * drawn by its coroutine), the id of its awaiter (0: a future), and its stack's depth. */
    static const char *const names[] = {"a", "b", "c", "d"};
    struct snap_frame frames[4];
    struct snap_task tasks[MAX_TASKS];
    struct snap_task_awaiter awaiters[MAX_TASKS];
    size_t n = 0;
    for (size_t i = 0; i < 4; i++) {
        memset(&frames[i], 0, sizeof frames[i]);
        frames[i].function = (struct snap_str){names[i], 1};
        frames[i].file = (struct snap_str){"f.py", 4};
        frames[i].line = (int)i - 1;
    }
    for (size_t i = 0; i + 3 <= size && n < MAX_TASKS; i += 3, n++) {
        memset(&tasks[n], 0, sizeof tasks[n]);
        tasks[n].id = data[i] % 16 + 1;
        tasks[n].name = (data[i] & 16) != 0 ? (struct snap_str){NULL, 0}
                                            : (struct snap_str){names[data[i] % 4], 1};
        tasks[n].frames = frames;
        tasks[n].n_frames = data[i + 2] % 5;
        awaiters[n] = (struct snap_task_awaiter){data[i + 1] % 17, frames, data[i + 2] / 64};
        tasks[n].awaited_by = &awaiters[n];
        tasks[n].n_awaited_by = data[i + 1] >= 128 ? 0 : 1;
    }
    struct strbuf sb = {0};
    /* Every other input drains the text between roots, as the text dump does. */
    const struct tasktree_drain drain = {drain_text, NULL};
    tasktree_write(&sb, tasks, n, size > 0 && (data[0] & 1) ? &drain : NULL, NULL);
    strbuf_free(&sb);
    return 0;
}
