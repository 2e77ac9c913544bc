/* error: how a failure travels up the core, as a code plus a readable path to the problem. */
#ifndef PYTOP_CORE_ERROR_H
#define PYTOP_CORE_ERROR_H

enum pt_errcode {
    PT_OK = 0,
    PT_E_NOPROC,      /* no such process */
    PT_E_PERM,        /* not allowed to read the process */
    PT_E_GONE,        /* the process (or thread) went away while being read */
    PT_E_READ,        /* a read of target memory failed (bad address) */
    PT_E_NOTPY,       /* no Python interpreter found in the target */
    PT_E_UNSUPPORTED, /* a Python version pytop has no layout for */
    PT_E_BADLAYOUT,   /* the target's data contradicts the layout (corrupt or unexpected) */
    PT_E_LIMIT,       /* a count or size from the target is past a limit in limits.h */
    PT_E_NOMEM,       /* out of memory */
    PT_E_FORMAT,      /* malformed bytes (ELF file, line table, string) */
    PT_E_IO,          /* a local file or OS call failed */
    PT_E_EXEC,        /* the process exec()ed: the image that was being read is gone */
};

struct pt_error {
    enum pt_errcode code;
    int sys_errno;
    char msg[256];
};

/* Fills ERR (if not NULL) with CODE, SYS_ERRNO and a printf-style message. Returns -1. */
int pt_error_set(struct pt_error *err, enum pt_errcode code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Puts "PREFIX: " in front of ERR's message, keeping its code. Returns -1. */
int pt_error_prefix(struct pt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A short lower-case name of CODE ("permission denied"). Static storage. */
const char *pt_error_name(enum pt_errcode code);

#endif
