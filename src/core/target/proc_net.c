/* proc_net: what a process's descriptors are (fd links, the socket tables of net/), and what an
 * epoll watches (its fdinfo), as proc_wait.h declares them. */
#include "config.h"

#include "core/target/proc_wait.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/target/proc.h"
#include "core/target/proc_text.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/util/memory.h"

enum {
    UNIX_PATH_BYTES = 108, /* sun_path (including the '@' of an abstract name) */
    ACCEPTCON = 0x10000,   /* __SO_ACCEPTCON in /proc/net/unix's Flags */
    TCP_LISTEN = 0x0a,
};

/* The socket tables, in the order of a struct proc_net's loaded[]. */
enum net_table { NET_TCP, NET_TCP6, NET_UDP, NET_UDP6, NET_UNIX, NET_TABLES };

static const char *const table_names[NET_TABLES] = {"tcp", "tcp6", "udp", "udp6", "unix"};

/* One socket of the tables. */
struct net_sock {
    uint64_t inode;
    uint8_t addr[2][16]; /* local and remote, in network order (the first 4 bytes for IPv4) */
    uint16_t port[2];
    uint32_t path_off; /* a Unix socket's name: PATH_LEN bytes at paths + PATH_OFF */
    uint8_t path_len;
    uint8_t table; /* enum net_table */
    bool listening;
};

struct proc_net {
    struct net_sock *socks; /* sorted by inode once a table is in */
    size_t n;
    size_t cap;
    char *paths;
    size_t paths_len;
    size_t paths_cap;
    bool loaded[NET_TABLES];
};

/* A NUL-terminated description being written into CAP bytes, cut to fit. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static struct out out_begin(char *buf, size_t cap)
{
    if (cap > 0) {
        buf[0] = '\0';
    }
    return (struct out){buf, cap, 0};
}

static void put_bytes(struct out *o, const char *s, size_t n)
{
    if (o->cap == 0) {
        return;
    }
    size_t room = o->cap - 1 - o->len;
    n = n < room ? n : room;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void put_str(struct out *o, const char *s)
{
    put_bytes(o, s, strlen(s));
}

struct proc_net *proc_net_new(void)
{
    return calloc(1, sizeof(struct proc_net));
}

void proc_net_free(struct proc_net *n)
{
    if (n == NULL) {
        return;
    }
    free(n->socks);
    free(n->paths);
    free(n);
}

void proc_net_reset(struct proc_net *n)
{
    if (n == NULL) {
        return;
    }
    /* The buffers stay for the next tables, which are much the same size. */
    n->n = 0;
    n->paths_len = 0;
    memset(n->loaded, 0, sizeof n->loaded);
}

/* One table being parsed, line by line. */
struct table_parse {
    struct proc_net *net;
    enum net_table table;
    size_t lines; /* the header included */
    size_t good;  /* entry lines read, those of inode 0 too */
    size_t bad;
    size_t added;
    size_t first_n; /* where the table's entries start, to take them out again */
    size_t first_paths;
    bool full; /* LIMIT_NET_SOCKETS entries are in */
};

static struct table_parse table_begin(struct proc_net *n, enum net_table table)
{
    return (struct table_parse){
        .net = n, .table = table, .first_n = n->n, .first_paths = n->paths_len};
}

static int add_sock(struct table_parse *t, struct net_sock *s, struct proc_cursor path,
                    struct pt_error *err)
{
    struct proc_net *n = t->net;
    size_t path_len = (size_t)(path.end - path.at);
    if (t->added == LIMIT_NET_SOCKETS) {
        t->full = true;
        return pt_error_set(err, PT_E_LIMIT, 0, "more than %d sockets in the %s table",
                            LIMIT_NET_SOCKETS, table_names[t->table]);
    }
    if (!memory_grow((void **)&n->socks, &n->cap, n->n + 1, sizeof *n->socks, 256) ||
        !memory_grow((void **)&n->paths, &n->paths_cap, n->paths_len + path_len, 1, 4096)) {
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for the %s table",
                            table_names[t->table]);
    }
    /* At most 5 tables of LIMIT_NET_SOCKETS names of UNIX_PATH_BYTES: the offset fits. */
    s->path_off = (uint32_t)n->paths_len;
    s->path_len = (uint8_t)path_len;
    if (path_len > 0) {
        memcpy(n->paths + n->paths_len, path.at, path_len);
    }
    n->paths_len += path_len;
    n->socks[n->n++] = *s;
    t->added++;
    return 0;
}

/* "ADDR:PORT" of /proc/net/tcp: the address as 1 (IPv4) or 4 (IPv6) 32-bit words of 8 hex
 * digits, each the bytes in network order read as a host-order number; the port in hex. */
static bool take_endpoint(struct proc_cursor f, bool ipv6, uint8_t addr[16], uint16_t *port)
{
    for (size_t i = 0; i < (ipv6 ? 4u : 1u); i++) {
        uint64_t v;
        struct proc_cursor word = {f.at, f.end - f.at >= 8 ? f.at + 8 : f.end};
        if (word.end - word.at != 8 || !proc_text_take_number(&word, 16, 8, &v) ||
            word.at != word.end) {
            return false;
        }
        uint32_t host = (uint32_t)v;
        memcpy(addr + 4 * i, &host, sizeof host);
        f.at = word.end;
    }
    uint64_t p;
    if (!proc_text_take_char(&f, ':') || !proc_text_take_number(&f, 16, 4, &p) || f.at != f.end) {
        return false;
    }
    *port = (uint16_t)p;
    return true;
}

/* "sl: local remote st tx:rx tr:when retrnsmt uid timeout inode ..." (tcp4_seq_show(),
 * udp4_format_sock() and their IPv6 forms). Returns NULL or what is wrong with the line. */
static const char *parse_inet_line(struct proc_cursor c, enum net_table table, struct net_sock *s)
{
    bool ipv6 = table == NET_TCP6 || table == NET_UDP6;
    struct proc_cursor sl = proc_text_take_field(&c);
    if (sl.at == sl.end || sl.end[-1] != ':') {
        return "no slot number";
    }
    if (!take_endpoint(proc_text_take_field(&c), ipv6, s->addr[0], &s->port[0]) ||
        !take_endpoint(proc_text_take_field(&c), ipv6, s->addr[1], &s->port[1])) {
        return "bad address";
    }
    uint64_t state;
    struct proc_cursor st = proc_text_take_field(&c);
    if (!proc_text_take_number(&st, 16, 2, &state) || st.at != st.end) {
        return "bad state";
    }
    for (int i = 4; i < 9; i++) {
        struct proc_cursor f = proc_text_take_field(&c);
        if (f.at == f.end) {
            return "too few fields";
        }
    }
    struct proc_cursor inode = proc_text_take_field(&c);
    if (!proc_text_take_number(&inode, 10, 0, &s->inode) || inode.at != inode.end) {
        return "bad inode";
    }
    s->listening = (table == NET_TCP || table == NET_TCP6) && state == TCP_LISTEN;
    return NULL;
}

/* "Num: RefCount Protocol Flags Type St Inode[ Path]" (unix_seq_show()): the path is the rest
 * of the line, '@' first for an abstract name, its NUL bytes shown as '@'. */
static const char *parse_unix_line(struct proc_cursor c, struct net_sock *s,
                                   struct proc_cursor *path)
{
    struct proc_cursor num = proc_text_take_field(&c);
    if (num.at == num.end || num.end[-1] != ':') {
        return "no slot";
    }
    uint64_t v[5]; /* RefCount, Protocol, Flags, Type, St */
    for (size_t i = 0; i < 5; i++) {
        struct proc_cursor f = proc_text_take_field(&c);
        if (!proc_text_take_number(&f, 16, 8, &v[i]) || f.at != f.end) {
            return "bad field";
        }
    }
    proc_text_skip_blanks(&c);
    if (!proc_text_take_number(&c, 10, 0, &s->inode)) {
        return "bad inode";
    }
    *path = (struct proc_cursor){c.end, c.end};
    if (c.at < c.end) {
        if (!proc_text_take_char(&c, ' ') || c.at == c.end || c.end - c.at > UNIX_PATH_BYTES ||
            memchr(c.at, '\0', (size_t)(c.end - c.at)) != NULL) {
            return "bad path";
        }
        *path = c;
    }
    s->listening = (v[2] & ACCEPTCON) != 0;
    return NULL;
}

static int table_line(void *ctx, struct proc_cursor line, struct pt_error *err)
{
    struct table_parse *t = ctx;
    if (t->lines++ == 0) {
        const char *want = t->table == NET_UNIX ? "Num" : "sl";
        struct proc_cursor head = proc_text_take_field(&line);
        if ((size_t)(head.end - head.at) != strlen(want) ||
            memcmp(head.at, want, strlen(want)) != 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "%s table: no header", table_names[t->table]);
        }
        return 0;
    }
    struct net_sock s = {.table = (uint8_t)t->table};
    struct proc_cursor path = {line.end, line.end};
    const char *problem = t->table == NET_UNIX ? parse_unix_line(line, &s, &path)
                                               : parse_inet_line(line, t->table, &s);
    if (problem != NULL) {
        t->bad++;
        return 0;
    }
    t->good++;
    return s.inode == 0 ? 0 : add_sock(t, &s, path, err);
}

static int compare_inodes(const void *a, const void *b)
{
    uint64_t x = ((const struct net_sock *)a)->inode;
    uint64_t y = ((const struct net_sock *)b)->inode;
    return (x > y) - (x < y);
}

/* Ends the table that RC (0 or -1) says how its lines went: takes its entries out again on
 * failure, but for reaching the limit, and sorts the rest for lookups. */
static int table_finish(struct table_parse *t, int rc, struct pt_error *err)
{
    struct proc_net *n = t->net;
    if (rc == 0 && t->lines == 0) {
        rc = pt_error_set(err, PT_E_FORMAT, 0, "%s table: empty", table_names[t->table]);
    } else if (rc == 0 && t->good == 0 && t->bad > 0) {
        rc = pt_error_set(err, PT_E_FORMAT, 0, "%s table: none of its %zu lines could be read",
                          table_names[t->table], t->bad);
    }
    if (rc < 0 && !t->full) {
        n->n = t->first_n;
        n->paths_len = t->first_paths;
    }
    if (n->n > 0) {
        qsort(n->socks, n->n, sizeof *n->socks, compare_inodes);
    }
    return rc;
}

static int parse_table(struct proc_net *n, enum net_table table, const char *text, size_t len,
                       struct pt_error *err)
{
    struct table_parse t = table_begin(n, table);
    struct proc_cursor c = {text, text + len};
    struct proc_cursor line;
    int rc = 0;
    while (rc == 0 && proc_text_take_line(&c, &line)) {
        rc = table_line(&t, line, err);
    }
    return table_finish(&t, rc, err);
}

int proc_net_parse_inet(struct proc_net *n, const char *text, size_t len, bool udp, bool ipv6,
                        struct pt_error *err)
{
    enum net_table table = udp ? (ipv6 ? NET_UDP6 : NET_UDP) : (ipv6 ? NET_TCP6 : NET_TCP);
    return parse_table(n, table, text, len, err);
}

int proc_net_parse_unix(struct proc_net *n, const char *text, size_t len, struct pt_error *err)
{
    return parse_table(n, NET_UNIX, text, len, err);
}

static void put_endpoint(struct out *o, const uint8_t addr[16], bool ipv6, uint16_t port)
{
    char host[INET6_ADDRSTRLEN];
    char text[INET6_ADDRSTRLEN + 16];
    if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, addr, host, sizeof host) == NULL) {
        snprintf(host, sizeof host, "?");
    }
    if (ipv6) {
        snprintf(text, sizeof text, "[%s]:%u", host, (unsigned)port);
    } else {
        snprintf(text, sizeof text, "%s:%u", host, (unsigned)port);
    }
    put_str(o, text);
}

static void describe_sock(const struct proc_net *n, const struct net_sock *s, struct out *o)
{
    if (s->table == NET_UNIX) {
        put_str(o, "socket UNIX");
        if (s->path_len > 0) {
            put_str(o, " ");
            put_bytes(o, n->paths + s->path_off, s->path_len);
        }
        if (s->listening) {
            put_str(o, " (listening)");
        }
        return;
    }
    bool ipv6 = s->table == NET_TCP6 || s->table == NET_UDP6;
    put_str(o, s->table == NET_TCP || s->table == NET_TCP6 ? "socket TCP " : "socket UDP ");
    put_endpoint(o, s->addr[0], ipv6, s->port[0]);
    if (s->listening) {
        put_str(o, " (listening)");
    } else if (s->port[1] != 0) {
        put_str(o, "->");
        put_endpoint(o, s->addr[1], ipv6, s->port[1]);
    }
}

bool proc_net_describe_inode(const struct proc_net *n, uint64_t inode, char *out, size_t cap)
{
    struct out o = out_begin(out, cap);
    if (n == NULL || n->n == 0) {
        return false;
    }
    struct net_sock key = {.inode = inode};
    const struct net_sock *s = bsearch(&key, n->socks, n->n, sizeof key, compare_inodes);
    if (s == NULL || (s > n->socks && s[-1].inode == inode) ||
        (s + 1 < n->socks + n->n && s[1].inode == inode)) {
        return false;
    }
    describe_sock(n, s, &o);
    return true;
}

/* Reads /proc/PID/net/TABLE into N. A table the kernel does not have (tcp6 without IPv6) is
 * empty; one past LIMIT_NET_SOCKETS keeps what fits. */
static int load_table(struct proc *p, struct proc_net *n, enum net_table table,
                      struct pt_error *err)
{
    char name[32];
    struct pt_error open_err = {0};
    snprintf(name, sizeof name, "net/%s", table_names[table]);
    int fd = proc_text_open(p, name, name, &open_err);
    if (fd < 0) {
        if (open_err.code == PT_E_IO && open_err.sys_errno == ENOENT) {
            n->loaded[table] = true;
            return 0;
        }
        if (err != NULL) {
            *err = open_err;
        }
        return -1;
    }
    struct table_parse t = table_begin(n, table);
    int rc = proc_text_read_lines(p, fd, name, table_line, &t, err);
    close(fd);
    if (table_finish(&t, rc, err) < 0 && !t.full) {
        return pt_error_prefix(err, "%s of process %d", name, (int)proc_pid(p));
    }
    n->loaded[table] = true;
    return 0;
}

/* Which tables can hold socket FD, as a bit per enum net_table: by its protocol's name as
 * sockfs gives it ("TCP", "UDPv6", "UNIX-STREAM"), or all of them when that cannot be read; 0
 * for a protocol no table lists (netlink, raw, ...). */
static unsigned tables_for(struct proc *p, int fd)
{
    static const struct {
        const char *name;
        enum net_table table;
    } protos[] = {{"TCP", NET_TCP},    {"TCPv6", NET_TCP6}, {"UDP", NET_UDP},
                  {"UDPv6", NET_UDP6}, {"UNIX", NET_UNIX},  {"UNIX-STREAM", NET_UNIX}};
    char path[64];
    char proto[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)proc_pid(p), fd);
    ssize_t len = getxattr(path, "system.sockprotoname", proto, sizeof proto - 1);
    if (len <= 0) {
        return (1u << NET_TABLES) - 1;
    }
    proto[len] = '\0'; /* the kernel's name ends in a NUL of its own */
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++) {
        if (strcmp(proto, protos[i].name) == 0) {
            return 1u << protos[i].table;
        }
    }
    return 0;
}

static int describe_socket(struct proc *p, struct proc_net *net, int fd, uint64_t inode,
                           struct out *o, struct pt_error *err)
{
    unsigned want = net != NULL ? tables_for(p, fd) : 0;
    for (int t = 0; t < NET_TABLES; t++) {
        if ((want >> t & 1) && !net->loaded[t] && load_table(p, net, t, err) < 0) {
            return -1;
        }
    }
    if (want == 0 || !proc_net_describe_inode(net, inode, o->buf, o->cap)) {
        put_str(o, "socket");
    }
    return 0;
}

int proc_fd_describe(struct proc *p, struct proc_net *net, int fd, char *out, size_t cap,
                     struct pt_error *err)
{
    static const struct {
        const char *link;
        const char *says;
    } anon[] = {{"anon_inode:[eventfd]", "eventfd"},
                {"anon_inode:[eventpoll]", "epoll"},
                {"anon_inode:[signalfd]", "signalfd"},
                {"anon_inode:[timerfd]", "timerfd"}};
    struct out o = out_begin(out, cap);
    char path[64];
    char link[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)proc_pid(p), fd);
    ssize_t len = readlink(path, link, sizeof link);
    if (len < 0) {
        char what[32];
        snprintf(what, sizeof what, "fd %d", fd);
        return proc_text_file_failed(p, errno, what, err);
    }
    for (size_t i = 0; i < sizeof anon / sizeof anon[0]; i++) {
        if ((size_t)len == strlen(anon[i].link) && memcmp(link, anon[i].link, (size_t)len) == 0) {
            put_str(&o, anon[i].says);
            return 0;
        }
    }
    struct proc_cursor c = {link, link + len};
    uint64_t inode;
    if (proc_text_take_word(&c, "pipe:[")) {
        put_str(&o, "pipe");
        return 0;
    }
    if (proc_text_take_word(&c, "socket:[") && proc_text_take_number(&c, 10, 0, &inode) &&
        proc_text_take_char(&c, ']') && c.at == c.end) {
        return describe_socket(p, net, fd, inode, &o, err);
    }
    /* A path longer than LINK is cut by readlink() as it would be by CAP. */
    put_bytes(&o, link, (size_t)len);
    return 0;
}

/* The descriptors of an epoll's fdinfo, as far as they fit. */
struct epoll_parse {
    int *fds;
    size_t max;
    size_t n;
    bool more; /* a descriptor past MAX */
};

/* "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x" (ep_show_fdinfo()). */
static int epoll_line(void *ctx, struct proc_cursor line, struct pt_error *err)
{
    struct epoll_parse *e = ctx;
    uint64_t fd;
    if (!proc_text_take_word(&line, "tfd:")) {
        return 0;
    }
    proc_text_skip_blanks(&line);
    if (!proc_text_take_number(&line, 10, 0, &fd) || fd > INT_MAX ||
        (line.at < line.end && proc_text_skip_blanks(&line) == 0)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "malformed tfd line");
    }
    if (e->n == e->max) {
        e->more = true;
        return pt_error_set(err, PT_E_LIMIT, 0, "watches more than %zu descriptors", e->max);
    }
    e->fds[e->n++] = (int)fd;
    return 0;
}

int proc_epoll_fds(struct proc *p, int epfd, int *fds, size_t max, size_t *n, struct pt_error *err)
{
    char name[32];
    *n = 0;
    snprintf(name, sizeof name, "fdinfo/%d", epfd);
    int fd = proc_text_open(p, name, name, err);
    if (fd < 0) {
        return -1;
    }
    struct epoll_parse e = {fds, max, 0, false};
    int rc = proc_text_read_lines(p, fd, name, epoll_line, &e, err);
    close(fd);
    *n = rc == 0 || e.more ? e.n : 0;
    if (rc < 0) {
        return pt_error_prefix(err, "epoll fd %d of process %d", epfd, (int)proc_pid(p));
    }
    return 0;
}
