/* fuzz_proc_wait: the parsers of /proc/PID/task/TID/syscall and the socket tables of
 * /proc/PID/net (tcp, tcp6, udp, udp6, unix) on the same arbitrary bytes, then lookups.
 *
 * Input: the text itself. Each parser gets an exact-size copy, so that reading one byte past
 * it is caught. */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/target/proc_wait.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    LOOKUPS = 64, /* small inodes looked up after the parse, those of the seeds among them */
};

/* A failure is one of the parsers' errors and says why. */
static void check_failure(int rc, const struct pt_error *err)
{
    if (rc == 0) {
        return;
    }
    if (rc != -1 || err->msg[0] == '\0' ||
        (err->code != PT_E_FORMAT && err->code != PT_E_LIMIT && err->code != PT_E_NOMEM)) {
        abort();
    }
}

/* A description is terminated within its room, and a miss leaves it empty. */
static void look_up(const struct proc_net *n, uint64_t inode)
{
    char out[48];
    memset(out, 'x', sizeof out);
    bool found = proc_net_describe_inode(n, inode, out, sizeof out);
    if (memchr(out, '\0', sizeof out) == NULL || (!found && out[0] != '\0') ||
        (found && strncmp(out, "socket ", 7) != 0)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size > 0 ? size : 1);
    struct proc_net *n = proc_net_new();
    if (text == NULL || n == NULL) {
        free(text);
        proc_net_free(n);
        return 0;
    }
    memcpy(text, data, size);

    struct proc_syscall sc = {.nr = -7};
    struct pt_error err = {0};
    int rc = proc_syscall_parse(text, size, &sc, &err);
    check_failure(rc, &err);
    if (rc == 0 && (sc.nr < -1 || (sc.running && sc.nr != -1))) {
        abort();
    }
    if (rc == 0) {
        /* Any number, the parsed one too, has a class; a name only if it is known. */
        (void)proc_syscall_name(sc.nr);
        (void)proc_syscall_class(sc.nr);
    }

    /* One table at a time: the same inode in two tables would be refused as forged. */
    uint64_t inode = 0;
    memcpy(&inode, data, size < sizeof inode ? size : sizeof inode);
    for (int table = 0; table < 5; table++) {
        err = (struct pt_error){0};
        rc = table < 4 ? proc_net_parse_inet(n, text, size, table & 1, table & 2, &err)
                       : proc_net_parse_unix(n, text, size, &err);
        check_failure(rc, &err);
        for (uint64_t small = 0; small < LOOKUPS; small++) {
            look_up(n, small);
        }
        look_up(n, inode);
        proc_net_reset(n);
        look_up(n, 1);
    }

    proc_net_free(n);
    free(text);
    return 0;
}
