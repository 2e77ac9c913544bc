/* error: filling and prefixing struct pt_error. */
#include "config.h"

#include "core/util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pt_error_set(struct pt_error *err, enum pt_errcode code, int sys_errno, const char *fmt, ...)
{
    if (err == NULL) {
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    err->sys_errno = sys_errno;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int pt_error_prefix(struct pt_error *err, const char *fmt, ...)
{
    if (err == NULL) {
        return -1;
    }
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* The message is cut at its end when the path grows too long. */
    size_t used = n < 0 ? 0 : (size_t)n;
    if (used + 2 < sizeof err->msg) {
        memcpy(err->msg + used, ": ", 2);
        size_t room = sizeof err->msg - used - 2;
        size_t len = strnlen(old, sizeof old);
        if (len >= room) {
            len = room - 1;
        }
        memcpy(err->msg + used + 2, old, len);
        err->msg[used + 2 + len] = '\0';
    }
    return -1;
}

const char *pt_error_name(enum pt_errcode code)
{
    switch (code) {
    case PT_OK:
        return "ok";
    case PT_E_NOPROC:
        return "no such process";
    case PT_E_PERM:
        return "permission denied";
    case PT_E_GONE:
        return "process exited";
    case PT_E_READ:
        return "memory read failed";
    case PT_E_NOTPY:
        return "not a Python process";
    case PT_E_UNSUPPORTED:
        return "unsupported Python version";
    case PT_E_BADLAYOUT:
        return "unexpected interpreter layout";
    case PT_E_LIMIT:
        return "limit reached";
    case PT_E_NOMEM:
        return "out of memory";
    case PT_E_FORMAT:
        return "malformed data";
    case PT_E_IO:
        return "I/O error";
    case PT_E_EXEC:
        return "process exec()ed";
    }
    return "unknown error";
}
