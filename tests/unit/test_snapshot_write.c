/* test_snapshot_write: the JSON and text writers. */
#include "config.h"

#include <locale.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/model/snapshot_words.h"
#include "core/write/snapshot_write.h"
#include "snapshot_fixture.h"

static char *write_json(const struct snapshot *s, bool newline)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_json(s, f, newline, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static char *write_text(const struct snapshot *s, const struct snapshot_source *src)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_text(s, f, src, &err), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_snapshot_write_json_matches_the_design_example(void **state)
{
    (void)state;
    struct snapshot *s = design_snapshot();
    s->python.hexversion = 51315442;
    /* The main thread waits for an RLock a second thread owns, which waits for one it owns. */
    struct snap_thread *t = &s->interps[0].threads[0];
    t->wait = (struct snap_wait){
        .kind = SNAP_WAIT_LOCK,
        .syscall = {"futex", 5},
        .fd = -1,
        .object = {"threading.RLock", 15},
        .lock = 140512340000000ull,
        .variable = {"db_lock", 7},
        .owner_tid = 4243,
        .since = 12.3,
        .left = -1,
        .requested = -1,
        .owner_held = -1,
    };
    static pid_t cycle[] = {4242, 4243};
    static uint64_t locks[] = {140512340000000ull, 140512340000064ull};
    static struct snap_deadlock deadlock = {cycle, locks, 2};
    s->waits_present = true;
    s->deadlocks = &deadlock;
    s->n_deadlocks = 1;
    char *got = write_json(s, false);
    assert_string_equal(
        got,
        "{\"pytop\":\"" PACKAGE_VERSION "\",\"pid\":4242,\"cmdline\":[\"python3\",\"app.py\"],"
        "\"started\":1764479000.500,\"time\":1764480000.123,"
        "\"python\":{\"version\":\"3.15.2\",\"hexversion\":51315442,\"free_threaded\":false,"
        "\"debug_build\":false,\"binary\":\"/usr/bin/python3.15\"},"
        "\"interpreters\":[{\"id\":0,\"threads\":[{\"tid\":4242,\"thread_id\":140512345678912,"
        "\"name\":\"MainThread\",\"main\":true,\"gil\":false,\"gil_requested\":false,"
        "\"on_cpu\":false,\"has_exception\":false,\"in_gc\":false,"
        "\"frames\":[{\"function\":\"Worker.run\",\"name\":\"run\",\"file\":\"/srv/app/worker.py\","
        "\"line\":41,\"end_line\":41,\"col\":8,\"end_col\":30,\"kind\":\"python\"}],"
        "\"wait\":{\"kind\":\"lock\",\"syscall\":\"futex\",\"fd\":null,"
        "\"object\":\"threading.RLock\",\"lock\":140512340000000,\"variable\":\"db_lock\","
        "\"via\":null,\"owner_tid\":4243,\"owner_held_s\":null,\"since_s\":12.300,\"left_s\":null,"
        "\"requested_s\":null,\"reason\":null}}],"
        "\"gc\":{\"collecting\":false,\"thread\":null,\"enabled\":true,"
        "\"generations\":[{\"generation\":0,\"count\":312,"
        "\"threshold\":2000,\"collections\":118,\"collected\":4312,\"uncollectable\":0,"
        "\"candidates\":null,\"duration\":null}],"
        "\"recent\":[]},\"tasks\":null}],"
        "\"deadlocks\":[{\"threads\":[4242,4243],\"locks\":[140512340000000,140512340000064]}],"
        "\"warnings\":[]}");
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_writes_null_for_every_unknown_value(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    s->time = 1.5;
    s->python = (struct snap_python){.debug_build = SNAP_UNKNOWN};
    s->interps[0].id = -1;
    struct snap_thread *t = &s->interps[0].threads[0];
    *t = (struct snap_thread){
        .gil = SNAP_UNKNOWN,
        .gil_requested = SNAP_UNKNOWN,
        .on_cpu = SNAP_UNKNOWN,
        .has_exception = SNAP_UNKNOWN,
        .in_gc = SNAP_UNKNOWN,
    };
    give_frames(s, t, 1);
    t->frames[0] = (struct snap_frame){.line = -1, .end_line = -1, .col = -1, .end_col = -1,
                                       .kind = SNAP_FRAME_NATIVE};
    char *got = write_json(s, false);
    assert_string_equal(
        got,
        "{\"pytop\":\"" PACKAGE_VERSION "\",\"pid\":4242,\"cmdline\":null,\"started\":null,"
        "\"time\":1.500,"
        "\"python\":{\"version\":null,\"hexversion\":null,\"free_threaded\":false,"
        "\"debug_build\":null,\"binary\":null},"
        "\"interpreters\":[{\"id\":null,\"threads\":[{\"tid\":null,\"thread_id\":null,"
        "\"name\":null,\"main\":false,\"gil\":null,\"gil_requested\":null,\"on_cpu\":null,"
        "\"has_exception\":null,\"in_gc\":null,"
        "\"frames\":[{\"function\":null,\"name\":null,\"file\":null,\"line\":null,"
        "\"end_line\":null,\"col\":null,\"end_col\":null,\"kind\":\"native\"}],"
        "\"wait\":null}],\"gc\":null,\"tasks\":null}],\"deadlocks\":null,\"warnings\":[]}");
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_names_every_frame_kind(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    give_frames(s, t, 4);
    t->frames[0] = py_frame("f", "a.py", 1);
    t->frames[1].kind = SNAP_FRAME_NATIVE;
    t->frames[2].kind = SNAP_FRAME_GC;
    t->frames[3].kind = SNAP_FRAME_SHIM;
    char *got = write_json(s, false);
    const char *py = strstr(got, "\"kind\":\"python\"},");
    const char *native = strstr(got, "\"kind\":\"native\"},");
    const char *gc = strstr(got, "\"kind\":\"gc\"},");
    const char *shim = strstr(got, "\"kind\":\"shim\"}]");
    assert_true(py != NULL && native > py && gc > native && shim > gc);
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_adds_frames_truncated_only_when_true(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 2);
    s->interps[0].threads[1].frames_truncated = true;
    char *got = write_json(s, false);
    const char *first = strstr(got, "\"frames\":[],\"wait\":null}");
    const char *second = strstr(got, "\"frames\":[],\"frames_truncated\":true,\"wait\":null}");
    assert_non_null(first);
    assert_non_null(second);
    assert_true(first < second);
    const char *mark = strstr(got, "frames_truncated");
    assert_true(mark > second);
    assert_null(strstr(mark + 1, "frames_truncated"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_adds_frames_torn_only_when_true(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 2);
    s->interps[0].threads[0].frames_torn = true;
    char *got = write_json(s, false);
    const char *first = strstr(got, "\"frames\":[],\"frames_torn\":true,\"wait\":null}");
    assert_non_null(first);
    assert_non_null(strstr(first + 1, "\"frames\":[],\"wait\":null}"));
    const char *mark = strstr(got, "frames_torn");
    assert_null(strstr(mark + 1, "frames_torn"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_says_a_torn_stack_may_not_be_real(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    give_frames(s, t, 1);
    t->frames[0] = py_frame("inner", "a.py", 3);
    t->frames_torn = true;
    char *got = write_text(s, NULL);
    assert_non_null(strstr(got, "most recent call last):\n"
                                "  ... (stack changed while read: these frames may be torn)\n"
                                "  File \"a.py\", line 3, in inner\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_lists_warnings_escaped(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 0);
    snapshot_warn(s, "thread %d: name unreadable", 4243);
    snapshot_warn(s, "gc: \"%s\"", "bad\n");
    char *got = write_json(s, false);
    const char *tail = "\"threads\":[],\"gc\":null,\"tasks\":null}],\"deadlocks\":null,"
                       "\"warnings\":[\"thread 4243: name unreadable\",\"gc: \\\"bad\\n\\\"\"]}";
    assert_non_null(strstr(got, tail));
    assert_string_equal(strstr(got, tail), tail);
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_keeps_hostile_strings_on_one_valid_line(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    t->name = str("a\"b\\c\nd\x01\xff\xc3\xa9");
    give_frames(s, t, 1);
    t->frames[0] = py_frame("f\r\n", "\xed\xa0\x80/x.py\n", 3);
    char *got = write_json(s, true);
    size_t len = strlen(got);
    for (size_t i = 0; i + 1 < len; i++) {
        assert_true((unsigned char)got[i] >= 0x20);
    }
    assert_int_equal(got[len - 1], '\n');
    assert_non_null(strstr(got, "\"name\":\"a\\\"b\\\\c\\nd\\u0001\\udcff\xc3\xa9\","));
    assert_non_null(strstr(got, "\"function\":\"f\\r\\n\","));
    assert_non_null(strstr(got, "\"file\":\"\\udced\\udca0\\udc80/x.py\\n\","));
    free(got);
    snapshot_free(s);
}

static void check_time(double t, const char *expected)
{
    struct snapshot *s = bare_snapshot(0, 0);
    s->time = t;
    char *got = write_json(s, false);
    assert_non_null(strstr(got, expected));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_json_writes_time_with_three_decimals(void **state)
{
    (void)state;
    check_time(2.25, ",\"time\":2.250,");
    check_time(1764480000.9996, ",\"time\":1764480001.000,");
    check_time(0.0, ",\"time\":0.000,");
    check_time(-1.0, ",\"time\":null,");
    check_time(0.0 / 0.0, ",\"time\":null,");
}

static void test_snapshot_write_json_ignores_a_decimal_comma_locale(void **state)
{
    (void)state;
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL) {
        skip();
    }
    check_time(2.25, ",\"time\":2.250,");
    setlocale(LC_NUMERIC, "C");
}

static void test_snapshot_write_json_reports_a_failed_write(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (full == NULL) {
        skip();
    }
    struct snapshot *s = design_snapshot();
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_json(s, full, true, &err), -1);
    assert_int_equal(err.code, PT_E_IO);
    assert_int_not_equal(err.sys_errno, 0);
    fclose(full);
    snapshot_free(s);
}

struct source_line {
    const char *file;
    int line;
    const char *text;
};

static struct source_line design_source[] = {
    {"/srv/app/worker.py", 41, "        self.handle(item)"},
    {"/srv/app/main.py", 7, "Worker().run()\r\n"},
    {NULL, 0, NULL},
};

static const char *fake_source(void *ctx, const char *file, size_t file_len, int line, size_t *len)
{
    for (const struct source_line *l = ctx; l->file != NULL; l++) {
        bool same_file = strlen(l->file) == file_len && memcmp(l->file, file, file_len) == 0;
        if (same_file && l->line == line) {
            *len = strlen(l->text);
            return l->text;
        }
    }
    return NULL;
}

/* design_snapshot() with an outer frame, holding the GIL on a CPU. */
static struct snapshot *design_two_frames(void)
{
    struct snapshot *s = design_snapshot();
    struct snap_thread *t = &s->interps[0].threads[0];
    struct snap_frame inner = t->frames[0];
    give_frames(s, t, 2);
    t->frames[0] = inner;
    t->frames[1] = py_frame("<module>", "/srv/app/main.py", 7);
    t->gil = SNAP_YES;
    t->on_cpu = SNAP_YES;
    return s;
}

static void test_snapshot_write_text_reads_like_a_traceback(void **state)
{
    (void)state;
    struct snapshot *s = design_two_frames();
    no_tasks(s);
    struct snapshot_source src = {fake_source, design_source};
    char *got = write_text(s, &src);
    assert_string_equal(
        got,
        "Process 4242: Python 3.15.2 (/usr/bin/python3.15)\n"
        "Command: python3 app.py\n"
        "Started: 2025-11-30 05:03:20 UTC (up 0:16:39)\n"
        "Taken at 2025-11-30 05:20:00.123 UTC\n"
        "\n"
        "Thread 4242 \"MainThread\" (main thread, has GIL, on CPU; most recent call last):\n"
        "  File \"/srv/app/main.py\", line 7, in <module>\n"
        "    Worker().run()\n"
        "  File \"/srv/app/worker.py\", line 41, in Worker.run\n"
        "    self.handle(item)\n"
        "\n"
        "GC:\n"
        "  generation  count/threshold  collections  collected  uncollectable\n"
        "  0           312/2000         118          4312       0\n"
        "  No collections recorded yet.\n");
    free(got);
    snapshot_free(s);
}

/* Two threads each waiting for an RLock the other owns, a third in recv, a fourth asleep. */
static struct snapshot *deadlocked(void)
{
    struct snapshot *s = bare_snapshot(1, 4);
    static const char *const names[] = {"web-1", "web-2", "reader", "MainThread"};
    for (size_t i = 0; i < 4; i++) {
        struct snap_thread *t = &s->interps[0].threads[i];
        t->tid = 100 + (pid_t)i;
        t->name = (struct snap_str){names[i], strlen(names[i])};
        t->wait = (struct snap_wait){
            .fd = -1, .since = -1, .left = -1, .requested = -1, .owner_held = -1};
    }
    struct snap_thread *t = s->interps[0].threads;
    for (size_t i = 0; i < 2; i++) {
        t[i].wait.kind = SNAP_WAIT_LOCK;
        t[i].wait.object = (struct snap_str){"threading.RLock", 15};
        t[i].wait.lock = 0x7f0000001000u + i * 0x40;
        t[i].wait.variable = (struct snap_str){"db_lock", 7};
        t[i].wait.owner_tid = i == 0 ? 101 : 100;
        t[i].wait.since = 12.34;
    }
    t[2].wait.kind = SNAP_WAIT_IO;
    t[2].wait.syscall = (struct snap_str){"recvfrom", 8};
    t[2].wait.fd = 7;
    t[2].wait.object = (struct snap_str){"socket TCP 10.0.0.5:43122->10.0.0.9:5432", 40};
    t[3].wait.kind = SNAP_WAIT_SLEEP;
    t[3].wait.left = 0.84;
    static pid_t cycle[] = {100, 101};
    static uint64_t locks[] = {0x7f0000001000u, 0x7f0000001040u};
    static struct snap_deadlock d = {cycle, locks, 2};
    s->waits_present = true;
    s->deadlocks = &d;
    s->n_deadlocks = 1;
    return s;
}

static void test_snapshot_write_text_says_what_each_thread_waits_for(void **state)
{
    (void)state;
    struct snapshot *s = deadlocked();
    char *got = write_text(s, NULL);
    assert_non_null(strstr(got, "\nDeadlock: 2 threads wait for locks the next one holds:\n"
                                "  Thread 100 \"web-1\" waits for 0x7f0000001000 (db_lock), held by "
                                "Thread 101 \"web-2\"\n"
                                "  Thread 101 \"web-2\" waits for 0x7f0000001040 (db_lock), held by "
                                "Thread 100 \"web-1\"\n"));
    assert_non_null(strstr(got, "most recent call last):\n"
                                "  Waiting for: RLock 0x7f0000001000 (db_lock) held by web-2 (101), "
                                "for 12.3 s\n"));
    assert_non_null(strstr(got, "  Waiting for: recvfrom fd 7: socket TCP "
                                "10.0.0.5:43122->10.0.0.9:5432\n"));
    assert_non_null(strstr(got, "  Waiting for: sleep, 0.8 s left\n"));
    /* The deadlock comes before the threads: what the report leads with. */
    assert_true(strstr(got, "Deadlock:") < strstr(got, "most recent call last"));
    free(got);
    /* The column's words leave out addresses, descriptors and tids. */
    char brief[200];
    snapshot_wait_text(s, &s->interps[0].threads[0], true, brief, sizeof brief);
    assert_string_equal(brief, "RLock (db_lock) held by web-2, for 12.3 s");
    snapshot_wait_text(s, &s->interps[0].threads[2], true, brief, sizeof brief);
    assert_string_equal(brief, "recvfrom socket TCP 10.0.0.5:43122->10.0.0.9:5432");
    snapshot_free(s);
}

static void test_snapshot_write_text_quotes_the_command_line_as_a_shell_would_read_it(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    static const char args[] = "python3\0my app.py\0it's\0\0--x=1\0\x1b[2J";
    assert_int_equal(snapshot_set_cmdline(s, args, sizeof args - 1, false, NULL), 0);
    char *got = write_text(s, NULL);
    assert_non_null(strstr(got, "\nCommand: python3 'my app.py' 'it'\\''s' '' --x=1 "
                                "'\\x1b[2J'\n"));
    /* Unknown: no line at all, never a guess. */
    assert_null(strstr(got, "Started:"));
    free(got);
    s->cmdline_cut = true;
    s->started = s->time - 90061;
    got = write_text(s, NULL);
    assert_non_null(strstr(got, " '\\x1b[2J' ... (cut short)\n"));
    assert_non_null(strstr(got, "\nStarted: 2025-11-29 04:18:59 UTC (up 1d 01:01:01)\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_parts_split_header_from_body(void **state)
{
    (void)state;
    struct snapshot *s = design_snapshot();
    char *all = write_text(s, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(snapshot_write_text_parts(s, f, NULL, SNAPSHOT_TEXT_HEADER, NULL), 0);
    assert_int_equal(fflush(f), 0);
    size_t head = len;
    assert_true(head > 0);
    assert_non_null(strstr(buf, "Taken at "));
    assert_null(strstr(buf, "Thread "));
    assert_int_equal(snapshot_write_text_parts(s, f, NULL, SNAPSHOT_TEXT_BODY, NULL), 0);
    assert_int_equal(fclose(f), 0);
    assert_string_equal(buf, all);
    free(buf);
    free(all);
    snapshot_free(s);
}

static void test_snapshot_write_text_prints_the_most_recent_call_last(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    give_frames(s, t, 3);
    t->frames[0] = py_frame("inner", "a.py", 3);
    t->frames[1] = py_frame("middle", "a.py", 2);
    t->frames[2] = py_frame("outer", "a.py", 1);
    char *got = write_text(s, NULL);
    const char *outer = strstr(got, "line 1, in outer\n");
    const char *middle = strstr(got, "line 2, in middle\n");
    const char *inner = strstr(got, "line 3, in inner\n");
    assert_true(outer != NULL && middle > outer && inner > middle);
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_marks_truncation_where_callers_are_missing(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    give_frames(s, t, 2);
    t->frames[0] = py_frame("inner", "a.py", 3);
    t->frames[1] = py_frame("middle", "a.py", 2);
    t->frames_truncated = true;
    char *got = write_text(s, NULL);
    assert_non_null(strstr(got, "most recent call last):\n"
                                "  ... (stack truncated)\n"
                                "  File \"a.py\", line 2, in middle\n"
                                "  File \"a.py\", line 3, in inner\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_shows_question_marks_for_unknowns(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    no_tasks(s);
    s->time = 0;
    s->python = (struct snap_python){.debug_build = SNAP_UNKNOWN};
    struct snap_thread *t = &s->interps[0].threads[0];
    *t = (struct snap_thread){.gil = SNAP_UNKNOWN, .on_cpu = SNAP_UNKNOWN};
    give_frames(s, t, 1);
    t->frames[0] = (struct snap_frame){.line = -1, .end_line = -1, .col = -1, .end_col = -1};
    struct snapshot_source src = {fake_source, design_source};
    char *got = write_text(s, &src);
    assert_string_equal(got, "Process 4242: Python ?\n"
                             "\n"
                             "Thread ? (most recent call last):\n"
                             "  File ?, line ?, in ?\n");
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_escapes_what_the_target_wrote(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    s->python.free_threaded = true;
    s->python.debug_build = SNAP_YES;
    struct snap_thread *t = &s->interps[0].threads[0];
    t->name = str("we\"ird\\\x1b[2J\xff");
    give_frames(s, t, 1);
    t->frames[0] = py_frame("f\x07", "/tmp/\xff\".py", 3);
    static struct source_line lines[] = {
        {"/tmp/\xff\".py", 3, "\tprint('\x1b[31m')\n"},
        {NULL, 0, NULL},
    };
    struct snapshot_source src = {fake_source, lines};
    char *got = write_text(s, &src);
    assert_non_null(strstr(got, "Python 3.15.2, free-threaded, debug build (/usr/bin/"));
    assert_non_null(strstr(got, "\nThread 4242 \"we\\\"ird\\\\\\x1b[2J\\xff\" (idle; most"));
    assert_non_null(strstr(got, "\n  File \"/tmp/\\xff\\\".py\", line 3, in f\\x07\n"
                                "    print('\\x1b[31m')\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_lists_gc_generations_and_warnings(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    no_tasks(s);
    give_gc(s, &s->interps[0]);
    s->interps[0].gc.collecting = SNAP_YES;
    snapshot_warn(s, "thread %d: name unreadable", 4243);
    snapshot_warn(s, "bad \x1b");
    char *got = write_text(s, NULL);
    const char *tail = "\nGC (collecting now):\n"
                       "  generation  count/threshold  collections  collected  uncollectable\n"
                       "  0           312/2000         118          4312       0\n"
                       "  1           4/10             11           95         0\n"
                       "  2           0/0              1            12000000   ?\n"
                       "\n"
                       "Warnings:\n"
                       "  thread 4243: name unreadable\n"
                       "  bad \\x1b\n";
    assert_non_null(strstr(got, tail));
    assert_string_equal(strstr(got, tail), tail);
    free(got);
    snapshot_free(s);
}

/* 3.15: candidates and time per generation, the records oldest first, each one's own counts. */
static void test_snapshot_writes_gc_records_with_what_each_collection_did(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_gc *gc = &s->interps[0].gc;
    give_gc(s, &s->interps[0]);
    gc->collecting = SNAP_YES;
    gc->thread = 4242;
    gc->generations[0].candidates = 7000;
    gc->generations[0].duration = 0.0015;
    static const struct snap_gc_record recs[] = {
        {0, 1000000000, 1000200000, 117, 4300, 0, 6000, 900, 0.0013},
        {0, 2000000000, 2000200000, 118, 4312, 0, 7000, 950, 0.0015},
    };
    gc->recent = snapshot_alloc(s, sizeof recs);
    assert_non_null(gc->recent);
    memcpy(gc->recent, recs, sizeof recs);
    gc->n_recent = 2;
    gc->recent_present = true;
    gc->read_ns = 3000200000;
    char *json = write_json(s, false);
    assert_non_null(strstr(json, "\"gc\":{\"collecting\":true,\"thread\":4242,\"enabled\":true,"));
    assert_non_null(strstr(json, "\"candidates\":7000,\"duration\":0.001500000}"));
    assert_non_null(strstr(json, "\"recent\":[{\"generation\":0,\"start_ns\":1000000000,"
                                 "\"stop_ns\":1000200000,\"collections\":117,\"collected\":4300,"
                                 "\"uncollectable\":0,\"candidates\":6000,\"heap_size\":900,"
                                 "\"duration\":0.001300000},{"));
    char *text = write_text(s, NULL);
    assert_non_null(strstr(text, "\nGC (collecting now, thread 4242):\n"));
    assert_non_null(strstr(text, "  generation  count/threshold  collections  collected  "
                                 "uncollectable  candidates  time\n"
                                 "  0           312/2000         118          4312       0"
                                 "              7000        1.500 ms\n"));
    /* "collected" means in the records what it means in the table and in JSON: the running
     * total; what one collection did is the "+", unknown ("+?", said why) for the oldest record
     * kept, which cannot be told apart from its predecessors. */
    assert_non_null(strstr(text, "  Recent collections, oldest first (the generation's totals "
                                 "when each ended, and in parentheses what that collection "
                                 "added):\n"
                                 "    generation 0, 2.000 s ago: 0.200 ms, collected 4300 (+?), "
                                 "candidates 6000 (+?), heap 900 objects\n"
                                 "    generation 0, 1.000 s ago: 0.200 ms, collected 4312 (+12), "
                                 "candidates 7000 (+1000), heap 950 objects\n"
                                 "  (+?: the collection before it in its generation is not among "
                                 "the records kept, so what it added is not known)\n"));
    free(json);
    free(text);
    snapshot_free(s);
}

/* A task graph that was not read is said to be missing, not left out as if there were no
 * tasks; an empty one (no asyncio) needs no words. */
static void test_snapshot_write_text_says_the_tasks_were_not_read(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    snapshot_warn(s, "asyncio tasks unavailable: test");
    char *got = write_text(s, NULL);
    const char *tail = "\nAsyncio tasks: not read (the warnings below say why)\n"
                       "\n"
                       "Warnings:\n"
                       "  asyncio tasks unavailable: test\n";
    assert_non_null(strstr(got, tail));
    assert_string_equal(strstr(got, tail), tail);
    free(got);
    no_tasks(s);
    got = write_text(s, NULL);
    assert_null(strstr(got, "Asyncio tasks"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_heads_each_of_several_interpreters(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(2, 1);
    no_tasks(s);
    give_gc(s, &s->interps[1]);
    s->interps[1].threads[0].main = true;
    char *got = write_text(s, NULL);
    assert_non_null(strstr(got, "\n\nInterpreter 0:\n"
                                "\nThread 4242 (idle; most recent call last):\n"
                                "  (no Python frames)\n"
                                "\nInterpreter 1:\n"
                                "\nThread 4242 (main thread, idle; most recent call last):\n"
                                "  (no Python frames)\n"
                                "\nGC of interpreter 1:\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_labels_the_interpreters_own_frames(void **state)
{
    (void)state;
    struct snapshot *s = bare_snapshot(1, 1);
    struct snap_thread *t = &s->interps[0].threads[0];
    give_frames(s, t, 3);
    t->frames[0].kind = SNAP_FRAME_NATIVE;
    t->frames[0].function = str("PyObject_Call");
    t->frames[0].file = str("libpython3.15.so");
    t->frames[0].line = 12;
    t->frames[1].kind = SNAP_FRAME_GC;
    t->frames[2].kind = SNAP_FRAME_SHIM;
    /* A source line here would break the expected text: marker frames have none. */
    static struct source_line lines[] = {
        {"libpython3.15.so", 12, "not source"},
        {NULL, 0, NULL},
    };
    struct snapshot_source src = {fake_source, lines};
    char *got = write_text(s, &src);
    assert_non_null(strstr(got, "most recent call last):\n"
                                "  <shim>\n"
                                "  <GC>\n"
                                "  <native> in PyObject_Call (libpython3.15.so)\n"));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_skips_source_lines_it_cannot_get(void **state)
{
    (void)state;
    static struct source_line partial[] = {
        {"/srv/app/worker.py", 41, " \t \r\n"},
        {NULL, 0, NULL},
    };
    struct snapshot *s = design_two_frames();
    struct snapshot_source src = {fake_source, partial};
    const char *frames = "last):\n"
                         "  File \"/srv/app/main.py\", line 7, in <module>\n"
                         "  File \"/srv/app/worker.py\", line 41, in Worker.run\n"
                         "\nGC:\n";
    char *got = write_text(s, &src);
    assert_non_null(strstr(got, frames));
    free(got);
    got = write_text(s, NULL);
    assert_non_null(strstr(got, frames));
    free(got);
    struct snapshot_source no_callback = {NULL, NULL};
    got = write_text(s, &no_callback);
    assert_non_null(strstr(got, frames));
    free(got);
    snapshot_free(s);
}

static void test_snapshot_write_text_reports_a_failed_write(void **state)
{
    (void)state;
    FILE *readonly = fopen("/dev/null", "r");
    assert_non_null(readonly);
    struct snapshot *s = design_snapshot();
    struct pt_error err = {0};
    assert_int_equal(snapshot_write_text(s, readonly, NULL, &err), -1);
    assert_int_equal(err.code, PT_E_IO);
    fclose(readonly);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_write_json_matches_the_design_example),
        cmocka_unit_test(test_snapshot_write_json_writes_null_for_every_unknown_value),
        cmocka_unit_test(test_snapshot_write_json_names_every_frame_kind),
        cmocka_unit_test(test_snapshot_write_json_adds_frames_truncated_only_when_true),
        cmocka_unit_test(test_snapshot_write_json_adds_frames_torn_only_when_true),
        cmocka_unit_test(test_snapshot_write_text_says_a_torn_stack_may_not_be_real),
        cmocka_unit_test(test_snapshot_write_json_lists_warnings_escaped),
        cmocka_unit_test(test_snapshot_write_json_keeps_hostile_strings_on_one_valid_line),
        cmocka_unit_test(test_snapshot_write_json_writes_time_with_three_decimals),
        cmocka_unit_test(test_snapshot_write_json_ignores_a_decimal_comma_locale),
        cmocka_unit_test(test_snapshot_write_json_reports_a_failed_write),
        cmocka_unit_test(test_snapshot_write_text_reads_like_a_traceback),
        cmocka_unit_test(test_snapshot_write_text_says_what_each_thread_waits_for),
        cmocka_unit_test(test_snapshot_write_text_quotes_the_command_line_as_a_shell_would_read_it),
        cmocka_unit_test(test_snapshot_write_text_parts_split_header_from_body),
        cmocka_unit_test(test_snapshot_write_text_prints_the_most_recent_call_last),
        cmocka_unit_test(test_snapshot_write_text_marks_truncation_where_callers_are_missing),
        cmocka_unit_test(test_snapshot_write_text_shows_question_marks_for_unknowns),
        cmocka_unit_test(test_snapshot_write_text_escapes_what_the_target_wrote),
        cmocka_unit_test(test_snapshot_write_text_lists_gc_generations_and_warnings),
        cmocka_unit_test(test_snapshot_writes_gc_records_with_what_each_collection_did),
        cmocka_unit_test(test_snapshot_write_text_says_the_tasks_were_not_read),
        cmocka_unit_test(test_snapshot_write_text_heads_each_of_several_interpreters),
        cmocka_unit_test(test_snapshot_write_text_labels_the_interpreters_own_frames),
        cmocka_unit_test(test_snapshot_write_text_skips_source_lines_it_cannot_get),
        cmocka_unit_test(test_snapshot_write_text_reports_a_failed_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
