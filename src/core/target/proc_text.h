/* proc_text: what proc_wait.c (a thread's system call) and proc_net.c (what its descriptors
 * are) share to read the kernel's text under /proc: a cursor over text, and opening and reading
 * a /proc/PID file. Not for the rest of the core: it sees proc_wait.h. */
#ifndef PYTOP_CORE_PROC_TEXT_H
#define PYTOP_CORE_PROC_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct pt_error;

/* A read position in text that is not NUL-terminated: the bytes from AT up to END. The takers
 * move AT past what they take (a number that fails may have moved it). */
struct proc_cursor {
    const char *at;
    const char *end;
};

/* Takes CH, or the bytes of WORD (NUL-terminated); false, taking nothing, when they are not
 * next. */
bool proc_text_take_char(struct proc_cursor *c, char ch);
bool proc_text_take_word(struct proc_cursor *c, const char *word);
/* Takes spaces and tabs; how many. */
size_t proc_text_skip_blanks(struct proc_cursor *c);
/* Takes one or more digits in BASE (10 or 16, either case) whose value fits in 64 bits; at
 * most MAX_DIGITS of them (0: any number). */
bool proc_text_take_number(struct proc_cursor *c, unsigned base, size_t max_digits, uint64_t *out);
/* Takes the rest of the line up to the next blank (or its end) as a field, the blanks before
 * it skipped; an empty field at the end. */
struct proc_cursor proc_text_take_field(struct proc_cursor *c);
/* Splits off the line at C (without its '\n'); false at the end of the text. */
bool proc_text_take_line(struct proc_cursor *c, struct proc_cursor *line);

/* True when P's process no longer runs: no such process, or only its zombie is left. */
bool proc_text_process_gone(struct proc *p);
/* Names what went wrong opening or reading WHAT (a /proc file of P) with errno E: PT_E_GONE
 * (the process exited), PT_E_PERM, PT_E_IO. An fd or a thread that is not there while the
 * process runs is PT_E_IO (sys_errno ENOENT), not PT_E_GONE, which callers take to mean the
 * target exited. Returns -1. */
int proc_text_file_failed(struct proc *p, int e, const char *what, struct pt_error *err);
/* Opens /proc/PID/NAME of P's process for reading; the descriptor, which the caller closes, or
 * -1 with the error of proc_text_file_failed() for WHAT. */
int proc_text_open(struct proc *p, const char *name, const char *what, struct pt_error *err);

/* What proc_text_read_lines() calls with each line; 0, or -1 (with ERR set) to stop. */
typedef int (*proc_text_line_fn)(void *ctx, struct proc_cursor line, struct pt_error *err);

/* Calls FN with each line of FD (WHAT, a /proc file of P) without its '\n', until FN fails;
 * 0, or -1 when FN or a read failed. A line longer than the 64 KiB it reads in (none of the
 * kernel's) is passed cut to that, its rest skipped. Errors of its own: PT_E_NOMEM, and a
 * failed read as proc_text_file_failed() names it. */
int proc_text_read_lines(struct proc *p, int fd, const char *what, proc_text_line_fn fn, void *ctx,
                         struct pt_error *err);

#endif
