// mpxfer: MPTCP/TCP transfers for the kernel testbed (mpsched, native/).
//
//   mpxfer server --port P [--sample-ns S] [--cc CC] [--rcvbuf-bytes B] [--sndbuf-bytes B]
//   mpxfer client --server IP --port P --epoch-ns E --deadline-ns D --sample-ns S --flows FILE
//   mpxfer cbr --dst IP --port P --bind IP --rate-bps R --packet-bytes B --epoch-ns E
//              --start-ns S --stop-ns T
//   mpxfer sink --port P
//   mpxfer echo --port P
//   mpxfer ping --dst IP --port P --bind IP [--count N] [--interval-ns I] [--wait-ns W]
//
// All times are CLOCK_MONOTONIC, which every network namespace shares, so the harness can put
// client, server and router events on one time axis. The flows file has one flow per line:
//   id protocol(mptcp|tcp) cc bind_ip direction(download|upload) kind(sized|bulk) amount start_ns rcvbuf sndbuf
// (amount: bytes for sized, stop time relative to the epoch for bulk; start relative too;
// rcvbuf / sndbuf: SO_RCVBUF / SO_SNDBUF of the client's socket, 0 to autotune; the server's
// listener takes --rcvbuf-bytes for uploads and --sndbuf-bytes for downloads and RPC responses;
// python/mpsched/engines/kernel/rcvbuf.py and sndbuf.py choose the values).
// An rpc line (kind rpc, direction download, amount = requests) ends with four more fields:
//   request_bytes response_bytes interval_ns(0: closed loop) concurrency   (mpxfer_rpc.c)
// A messages line (kind messages, either direction, amount = messages) ends with the same four:
//   message_bytes 0 interval_ns 0   (mpxfer_msg.c)
// The client opens each flow at epoch + start (socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP) or
// plain TCP), sends a struct mpx_request and measures from the start of connect() to the last
// byte (download: received by the client; upload: the server reports when its last byte came).
// Whoever sends the data samples its subflows every S ns (mpxfer_info.c). Output: JSON lines.

#define _GNU_SOURCE
#include "mpxfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_BYTES (256 * 1024)
#define MAX_FLOWS 4096
// How long a finished sender keeps the connection open waiting for the peer's final word.
#define LINGER_NS 10000000000ull

// Longest wait for the last ACKs before the final counters are read anyway.
#define FINAL_WAIT_NS 3000000000ull

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}
int mpx_stopping(void) { return g_stop; }

static const char *arg(int argc, char **argv, const char *key, const char *def) {
    for (int i = 2; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], key)) return argv[i + 1];
    if (!def) {
        fprintf(stderr, "mpxfer: missing %s\n", key);
        exit(2);
    }
    return def;
}

static uint64_t u64arg(int argc, char **argv, const char *key, const char *def) {
    return strtoull(arg(argc, argv, key, def), NULL, 10);
}

static void sleep_until(uint64_t abs_ns) {
    struct timespec ts = {.tv_sec = (time_t)(abs_ns / 1000000000ull),
                          .tv_nsec = (long)(abs_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !g_stop) {
    }
}

// Waits for `events` on fd until abs_ns; returns revents (0 on timeout).
short mpx_wait_fd(int fd, short events, uint64_t abs_ns) {
    uint64_t now = mpx_now_ns();
    uint64_t d = abs_ns > now ? abs_ns - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull)};
    struct pollfd p = {.fd = fd, .events = events};
    return ppoll(&p, 1, &ts, NULL) > 0 ? p.revents : 0;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

// Sends up to limit bytes until stop_abs, sampling every sample_ns; stops early when the peer
// sends something (watch_read). Returns bytes sent.
static uint64_t send_loop(int fd, uint64_t flow_id, uint64_t limit, uint64_t stop_abs,
                          uint64_t sample_ns, int client_side, int watch_read) {
    static const char zeros[CHUNK_BYTES];
    uint64_t sent = 0, next_sample = mpx_now_ns();
    while (sent < limit && !g_stop) {
        uint64_t now = mpx_now_ns();
        if (now >= stop_abs) break;
        if (sample_ns && now >= next_sample) {
            mpx_report_subflows(stdout, fd, flow_id, now, 0, client_side);
            next_sample = next_sample + sample_ns > now ? next_sample + sample_ns : now + sample_ns;
        }
        short ev = mpx_wait_fd(fd, POLLOUT | (watch_read ? POLLIN : 0),
                           min3(sample_ns ? next_sample : UINT64_MAX, stop_abs, UINT64_MAX));
        if (ev & (POLLIN | POLLERR | POLLHUP)) break;
        if (ev & POLLOUT) {
            uint64_t want = limit - sent < CHUNK_BYTES ? limit - sent : CHUNK_BYTES;
            ssize_t n = send(fd, zeros, (size_t)want, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) sent += (uint64_t)n;
            else if (n < 0 && errno != EAGAIN && errno != EINTR) break;
        }
    }
    return sent;
}

// Keeps sampling while waiting for the peer to send something; true if it did.
static int sample_until_readable(int fd, uint64_t flow_id, uint64_t stop_abs, uint64_t sample_ns,
                                 int client_side) {
    uint64_t next_sample = mpx_now_ns();
    while (!g_stop) {
        uint64_t now = mpx_now_ns();
        if (now >= stop_abs) return 0;
        if (sample_ns && now >= next_sample) {
            mpx_report_subflows(stdout, fd, flow_id, now, 0, client_side);
            next_sample = now + sample_ns;
        }
        if (mpx_wait_fd(fd, POLLIN, min3(sample_ns ? next_sample : UINT64_MAX, stop_abs, UINT64_MAX)))
            return 1;
    }
    return 0;
}

// The final counters are read once every sent segment is acknowledged (the peer having all the
// data does not mean its last ACKs have come back), or after `max_wait_ns`.
static void final_report(int fd, uint64_t flow_id, int client_side, uint64_t max_wait_ns) {
    uint64_t until = mpx_now_ns() + max_wait_ns;
    while (mpx_unacked_segments(fd) > 0 && mpx_now_ns() < until && !g_stop) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 2000000};
        nanosleep(&ts, NULL);
    }
    mpx_report_subflows(stdout, fd, flow_id, mpx_now_ns(), 1, client_side);
}

// The receiver's progress: application bytes read so far (the conn_series table).
void mpx_report_conn(uint64_t flow_id, uint64_t now_ns, uint64_t delivered) {
    printf("{\"type\": \"conn\", \"flow_id\": %" PRIu64 ", \"t_ns\": %" PRIu64
           ", \"delivered_bytes\": %" PRIu64 "}\n", flow_id, now_ns, delivered);
}

// Waits for data until stop_abs, reporting progress every sample_ns (0: never) on the way.
static short wait_readable_sampling(int fd, uint64_t stop_abs, uint64_t flow_id, uint64_t delivered,
                                    uint64_t sample_ns, uint64_t *next_sample) {
    for (;;) {
        uint64_t now = mpx_now_ns();
        if (sample_ns && now >= *next_sample) {
            mpx_report_conn(flow_id, now, delivered);
            *next_sample = *next_sample + sample_ns > now ? *next_sample + sample_ns : now + sample_ns;
        }
        if (now >= stop_abs || g_stop) return 0;
        uint64_t until = sample_ns && *next_sample < stop_abs ? *next_sample : stop_abs;
        short ev = mpx_wait_fd(fd, POLLIN, until);
        if (ev) return ev;
    }
}

static int read_full(int fd, void *buf, size_t len, uint64_t stop_abs) {
    size_t got = 0;
    while (got < len) {
        if (!(mpx_wait_fd(fd, POLLIN, stop_abs) & (POLLIN | POLLHUP | POLLERR))) return -1;
        ssize_t n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
        if (n == 0) return -1;
        if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
        if (n > 0) got += (size_t)n;
    }
    return 0;
}

// A fixed receive buffer (the scenario's rcv_buf_autotuning = false): SO_RCVBUF sets SOCK_RCVBUF_LOCK,
// which stops autotuning; FORCE passes net.core.rmem_max (a host-wide limit; the harness is root).
// A fixed send buffer likewise: SO_SNDBUF sets SOCK_SNDBUF_LOCK (no tcp_sndbuf_expand, no
// __mptcp_sync_sndbuf).
static int set_buf(int fd, int opt, const char *name, uint64_t bytes) {
    if (!bytes) return 0;
    int v = bytes > INT32_MAX / 2 ? INT32_MAX / 2 : (int)bytes;
    if (setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v) < 0) {
        fprintf(stderr, "mpxfer: %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

static int set_bufs(int fd, uint64_t rcvbuf, uint64_t sndbuf) {
    return set_buf(fd, SO_RCVBUFFORCE, "SO_RCVBUFFORCE", rcvbuf) < 0 ||
                   set_buf(fd, SO_SNDBUFFORCE, "SO_SNDBUFFORCE", sndbuf) < 0
               ? -1
               : 0;
}

static void set_cc(int fd, const char *cc) {
    if (cc[0] && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) < 0)
        fprintf(stderr, "mpxfer: TCP_CONGESTION %s: %s\n", cc, strerror(errno));
}

/* ---------------------------------- server ---------------------------------- */

struct conn {
    int fd;
    uint64_t sample_ns;
};

static void *serve(void *p) {
    struct conn c = *(struct conn *)p;
    free(p);
    struct mpx_request rq;
    uint64_t give_up = mpx_now_ns() + 30000000000ull;
    if (read_full(c.fd, &rq, sizeof rq, give_up) < 0 || ntohl(rq.magic) != MPX_MAGIC) goto out;
    rq.cc[sizeof rq.cc - 1] = 0;
    set_cc(c.fd, rq.cc);
    if (rq.nodelay) mpx_nodelay(c.fd);
    uint64_t flow_id = be64toh(rq.flow_id), size = be64toh(rq.size_bytes);
    if (rq.kind == MPX_MESSAGES) {
        struct mpx_msg_spec s = {.flow_id = flow_id, .count = be64toh(rq.count), .size_bytes = size,
                                 .interval_ns = be64toh(rq.interval_ns), .start_abs = be64toh(rq.start_abs),
                                 .epoch_abs = be64toh(rq.epoch_abs), .sample_ns = c.sample_ns};
        if (!s.count || !s.size_bytes || !s.interval_ns) goto out;
        if (rq.direction == MPX_DOWNLOAD) {
            mpx_msg_send(c.fd, &s, give_up + LINGER_NS * 360, 0);
            sample_until_readable(c.fd, flow_id, mpx_now_ns() + LINGER_NS, c.sample_ns, 0);
            final_report(c.fd, flow_id, 0, FINAL_WAIT_NS);
        } else {
            uint64_t last = 0, got = mpx_msg_receive(c.fd, &s, give_up + LINGER_NS * 360, &last);
            struct mpx_upload_reply r = {.last_byte_ns = htobe64(last), .bytes_received = htobe64(got)};
            send(c.fd, &r, sizeof r, MSG_NOSIGNAL);
            mpx_wait_fd(c.fd, POLLIN, mpx_now_ns() + LINGER_NS);
        }
    } else if (rq.kind == MPX_RPC) {
        uint64_t request_bytes = be64toh(rq.request_bytes);
        if (request_bytes == 0 || size == 0) goto out;
        mpx_rpc_serve(c.fd, flow_id, request_bytes, size, c.sample_ns, mpx_now_ns() + LINGER_NS * 360);
        final_report(c.fd, flow_id, 0, FINAL_WAIT_NS);
    } else if (rq.direction == MPX_DOWNLOAD) {
        uint64_t limit = rq.kind == MPX_BULK ? UINT64_MAX : size;
        send_loop(c.fd, flow_id, limit, UINT64_MAX, c.sample_ns, 0, 1);
        // The client sends one byte once it has everything (or its bulk period ended).
        sample_until_readable(c.fd, flow_id, mpx_now_ns() + LINGER_NS, c.sample_ns, 0);
        final_report(c.fd, flow_id, 0, FINAL_WAIT_NS);
    } else {
        static __thread char buf[CHUNK_BYTES];
        uint64_t got = 0, last = 0, next_sample = mpx_now_ns();
        uint64_t give_up_abs = mpx_now_ns() + LINGER_NS * 360; // an hour: only a guard
        while (rq.kind == MPX_BULK || got < size) {
            short ev = wait_readable_sampling(c.fd, give_up_abs, flow_id, got, c.sample_ns, &next_sample);
            if (!(ev & (POLLIN | POLLHUP | POLLERR))) break;
            ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0) break;
            if (n < 0 && errno != EAGAIN && errno != EINTR) break;
            if (n > 0) {
                got += (uint64_t)n;
                last = mpx_now_ns();
            }
        }
        if (c.sample_ns) mpx_report_conn(flow_id, mpx_now_ns(), got);
        struct mpx_upload_reply r = {.last_byte_ns = htobe64(last), .bytes_received = htobe64(got)};
        send(c.fd, &r, sizeof r, MSG_NOSIGNAL);
        // Wait for the client's close so the reply is not lost to a reset.
        mpx_wait_fd(c.fd, POLLIN, mpx_now_ns() + LINGER_NS);
    }
out:
    close(c.fd);
    return NULL;
}

static int run_server(int argc, char **argv) {
    int port = (int)u64arg(argc, argv, "--port", NULL);
    uint64_t sample_ns = u64arg(argc, argv, "--sample-ns", "10000000");
    // An MPTCP listener also accepts plain TCP clients (they fall back).
    int ls = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
    if (ls < 0) {
        fprintf(stderr, "mpxfer: MPTCP socket: %s (is net.mptcp.enabled=1?)\n", strerror(errno));
        return 1;
    }
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    // Set between bind and listen: MPTCP then copies it to the listener's subflow, and accepted
    // sockets inherit it (and the SYN-ACK's window is chosen from it).
    if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 ||
        set_bufs(ls, u64arg(argc, argv, "--rcvbuf-bytes", "0"), u64arg(argc, argv, "--sndbuf-bytes", "0")) < 0 ||
        listen(ls, 128) < 0) {
        fprintf(stderr, "mpxfer: listen on %d: %s\n", port, strerror(errno));
        return 1;
    }
    // Accepted sockets (and MPTCP join subflows) inherit the listener's congestion control;
    // without it they are born with the namespace default (the host's, e.g. bbr), whose init
    // leaves TCP pacing on after the per-connection switch (docs/testbed.md, HyStart).
    set_cc(ls, arg(argc, argv, "--cc", ""));
    printf("{\"type\": \"ready\"}\n");
    while (!g_stop) {
        if (!(mpx_wait_fd(ls, POLLIN, mpx_now_ns() + 200000000ull) & POLLIN)) continue;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        struct conn *c = malloc(sizeof *c);
        c->fd = fd;
        c->sample_ns = sample_ns;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, c) == 0) pthread_detach(t);
        else {
            close(fd);
            free(c);
        }
    }
    fflush(stdout);
    return 0;
}

/* ---------------------------------- client ---------------------------------- */

struct flow {
    uint64_t id, amount, start_ns;
    uint64_t rcvbuf, sndbuf;  // SO_RCVBUF / SO_SNDBUF before connect(); 0: autotuning
    uint64_t request_bytes, response_bytes, interval_ns, concurrency; // rpc (amount: requests)
    uint64_t nodelay; // 1: TCP_NODELAY on both sockets (the request tells the server)
    char protocol[8], cc[16], bind_ip[48], direction[12], kind[12];
    const char *server;
    int port;
    uint64_t epoch, deadline_abs, sample_ns;
};

static void flow_result(const struct flow *f, uint64_t t_connect, uint64_t end, int completed,
                        uint64_t delivered, const char *error) {
    printf("{\"type\": \"flow\", \"flow_id\": %" PRIu64 ", \"connect_ns\": %" PRIu64
           ", \"end_ns\": %" PRIu64 ", \"completed\": %s, \"bytes_delivered\": %" PRIu64
           ", \"error\": \"%s\"}\n",
           f->id, t_connect, end, completed ? "true" : "false", delivered, error);
}

// An RPC flow on the connected `fd`: the requests and their responses, one "block" line per
// request (times relative to the epoch), then the flow's line.
static void run_rpc(const struct flow *f, int fd, uint64_t t_connect, uint64_t stop_abs) {
    struct mpx_request rq = {.magic = htonl(MPX_MAGIC), .direction = MPX_DOWNLOAD, .kind = MPX_RPC,
                             .nodelay = (uint8_t)f->nodelay, .flow_id = htobe64(f->id),
                             .size_bytes = htobe64(f->response_bytes), .request_bytes = htobe64(f->request_bytes)};
    snprintf(rq.cc, sizeof rq.cc, "%s", f->cc);
    struct mpx_rpc_spec s = {.flow_id = f->id, .requests = f->amount, .request_bytes = f->request_bytes,
                             .response_bytes = f->response_bytes, .interval_ns = f->interval_ns,
                             .concurrency = f->concurrency ? f->concurrency : 1,
                             .start_abs = f->epoch + f->start_ns, .stop_abs = stop_abs, .sample_ns = f->sample_ns};
    uint64_t *sent = calloc(f->amount, sizeof *sent), *delivered = calloc(f->amount, sizeof *delivered);
    uint64_t answered = 0, got = 0;
    int failed = !sent || !delivered || mpx_rpc_client(fd, &rq, &s, sent, delivered, &answered, &got) < 0;
    uint64_t end = answered == f->amount && answered ? delivered[answered - 1] : mpx_now_ns();
    shutdown(fd, SHUT_WR);
    static __thread char buf[4096];
    uint64_t drain_until = mpx_now_ns() + LINGER_NS;
    while (mpx_wait_fd(fd, POLLIN, drain_until) && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    for (uint64_t k = 0; sent && k < f->amount && sent[k]; k++) {
        printf("{\"type\": \"block\", \"flow_id\": %" PRIu64 ", \"block\": %" PRIu64 ", \"sent_ns\": %" PRIu64,
               f->id, k, sent[k] - f->epoch);
        if (k < answered) printf(", \"delivered_ns\": %" PRIu64, delivered[k] - f->epoch);
        printf("}\n");
    }
    flow_result(f, t_connect, end, answered == f->amount, got, failed ? "reset" : "");
    free(sent);
    free(delivered);
}

// A messages flow on the connected `fd`: the header, then the messages one way (the receiver
// prints a "block" line per message, mpxfer_msg.c), then the flow's line.
static void run_messages(const struct flow *f, int fd, uint64_t t_connect, uint64_t stop_abs) {
    int upload = !strcmp(f->direction, "upload");
    struct mpx_request rq = {.magic = htonl(MPX_MAGIC), .direction = upload ? MPX_UPLOAD : MPX_DOWNLOAD,
                             .kind = MPX_MESSAGES, .nodelay = (uint8_t)f->nodelay, .flow_id = htobe64(f->id),
                             .size_bytes = htobe64(f->request_bytes),
                             .count = htobe64(f->amount), .interval_ns = htobe64(f->interval_ns),
                             .start_abs = htobe64(f->epoch + f->start_ns), .epoch_abs = htobe64(f->epoch)};
    snprintf(rq.cc, sizeof rq.cc, "%s", f->cc);
    struct mpx_msg_spec s = {.flow_id = f->id, .count = f->amount, .size_bytes = f->request_bytes,
                             .interval_ns = f->interval_ns, .start_abs = f->epoch + f->start_ns,
                             .epoch_abs = f->epoch, .sample_ns = f->sample_ns};
    const uint64_t total = f->amount * f->request_bytes;
    if (send(fd, &rq, sizeof rq, MSG_NOSIGNAL) != (ssize_t)sizeof rq) {
        flow_result(f, t_connect, mpx_now_ns(), 0, 0, "request");
        return;
    }
    static __thread char buf[4096];
    if (!upload) {
        uint64_t last = 0, got = mpx_msg_receive(fd, &s, stop_abs, &last);
        char done = 1;
        send(fd, &done, 1, MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        uint64_t drain_until = mpx_now_ns() + LINGER_NS;
        while (mpx_wait_fd(fd, POLLIN, drain_until) && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
        }
        flow_result(f, t_connect, got >= total ? last : mpx_now_ns(), got >= total, got, "");
        return;
    }
    int64_t sent = mpx_msg_send(fd, &s, stop_abs, 1);
    shutdown(fd, SHUT_WR);
    struct mpx_upload_reply rep;
    int ok = read_full(fd, &rep, sizeof rep, f->deadline_abs) == 0;
    final_report(fd, f->id, 1, FINAL_WAIT_NS);
    uint64_t got = ok ? be64toh(rep.bytes_received) : 0;
    int completed = ok && sent >= (int64_t)total && got >= total;
    flow_result(f, t_connect, completed ? be64toh(rep.last_byte_ns) : mpx_now_ns(), completed, got,
                sent < 0 ? "reset" : ok ? "" : "no reply");
}

static void *run_flow(void *p) {
    struct flow *f = p;
    int rpc = !strcmp(f->kind, "rpc"), messages = !strcmp(f->kind, "messages");
    int upload = !strcmp(f->direction, "upload"), bulk = !strcmp(f->kind, "bulk");
    uint64_t stop_abs = bulk ? f->epoch + f->amount : UINT64_MAX;
    if (stop_abs > f->deadline_abs) stop_abs = f->deadline_abs;
    sleep_until(f->epoch + f->start_ns);
    int fd = socket(AF_INET, SOCK_STREAM, !strcmp(f->protocol, "mptcp") ? IPPROTO_MPTCP : IPPROTO_TCP);
    if (fd < 0) {
        flow_result(f, 0, 0, 0, 0, "socket");
        return NULL;
    }
    set_cc(fd, f->cc);
    if (f->nodelay) mpx_nodelay(fd); // before connect(): MPTCP copies it to every subflow
    if (set_bufs(fd, f->rcvbuf, f->sndbuf) < 0) {
        flow_result(f, 0, 0, 0, 0, "sockbuf");
        close(fd);
        return NULL;
    }
    struct sockaddr_in local = {.sin_family = AF_INET}, remote = {.sin_family = AF_INET};
    inet_pton(AF_INET, f->bind_ip, &local.sin_addr);
    inet_pton(AF_INET, f->server, &remote.sin_addr);
    remote.sin_port = htons((uint16_t)f->port);
    if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
        flow_result(f, 0, 0, 0, 0, "bind");
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    uint64_t t_connect = mpx_now_ns();
    int r = connect(fd, (struct sockaddr *)&remote, sizeof remote);
    if (r < 0 && errno == EINPROGRESS) {
        int err = 0;
        socklen_t el = sizeof err;
        if (!(mpx_wait_fd(fd, POLLOUT, f->deadline_abs) & POLLOUT) ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) r = -1;
        else r = 0;
    }
    if (r < 0) {
        flow_result(f, t_connect, mpx_now_ns(), 0, 0, "connect");
        close(fd);
        return NULL;
    }
    if (rpc || messages) {
        (rpc ? run_rpc : run_messages)(f, fd, t_connect, stop_abs);
        close(fd);
        return NULL;
    }
    struct mpx_request rq = {.magic = htonl(MPX_MAGIC), .direction = upload ? MPX_UPLOAD : MPX_DOWNLOAD,
                             .kind = bulk ? MPX_BULK : MPX_SIZED, .nodelay = (uint8_t)f->nodelay,
                             .flow_id = htobe64(f->id),
                             .size_bytes = htobe64(bulk ? 0 : f->amount)};
    snprintf(rq.cc, sizeof rq.cc, "%s", f->cc);
    if (send(fd, &rq, sizeof rq, MSG_NOSIGNAL) != (ssize_t)sizeof rq) {
        flow_result(f, t_connect, mpx_now_ns(), 0, 0, "request");
        close(fd);
        return NULL;
    }
    if (!upload) {
        static __thread char buf[CHUNK_BYTES];
        uint64_t got = 0, end = 0, want = bulk ? UINT64_MAX : f->amount;
        uint64_t next_sample = mpx_now_ns();
        int failed = 0;
        while (got < want && !g_stop) {
            short ev = wait_readable_sampling(fd, stop_abs, f->id, got, f->sample_ns, &next_sample);
            if (!ev) break; // stop time or deadline
            ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                failed = 1;
                break;
            }
            if (n > 0) {
                got += (uint64_t)n;
                end = mpx_now_ns();
            }
        }
        int completed = bulk ? (!failed && mpx_now_ns() >= stop_abs && stop_abs < f->deadline_abs)
                             : got >= want;
        if (bulk || !completed) end = mpx_now_ns();
        if (f->sample_ns) mpx_report_conn(f->id, end, got);
        char done = 1;
        send(fd, &done, 1, MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        // Drain until the server closes, so its final counters are taken on a live connection.
        uint64_t drain_until = mpx_now_ns() + LINGER_NS;
        while (mpx_wait_fd(fd, POLLIN, drain_until) && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
        }
        flow_result(f, t_connect, end, completed, got, failed ? "reset" : "");
    } else {
        uint64_t limit = bulk ? UINT64_MAX : f->amount;
        uint64_t sent = send_loop(fd, f->id, limit, stop_abs, f->sample_ns, 1, 0);
        shutdown(fd, SHUT_WR);
        struct mpx_upload_reply rep;
        int ok = read_full(fd, &rep, sizeof rep, f->deadline_abs) == 0;
        final_report(fd, f->id, 1, FINAL_WAIT_NS);
        uint64_t got = ok ? be64toh(rep.bytes_received) : 0;
        uint64_t end = ok ? be64toh(rep.last_byte_ns) : mpx_now_ns();
        int completed = ok && (bulk ? stop_abs < f->deadline_abs : got >= f->amount && sent >= f->amount);
        if (bulk) end = stop_abs;
        flow_result(f, t_connect, end, completed, got, ok ? "" : "no reply");
    }
    close(fd);
    return NULL;
}

static int run_client(int argc, char **argv) {
    static struct flow flows[MAX_FLOWS];
    static pthread_t threads[MAX_FLOWS];
    const char *server = arg(argc, argv, "--server", NULL), *path = arg(argc, argv, "--flows", NULL);
    int port = (int)u64arg(argc, argv, "--port", NULL);
    uint64_t epoch = u64arg(argc, argv, "--epoch-ns", NULL);
    uint64_t deadline = epoch + u64arg(argc, argv, "--deadline-ns", NULL);
    uint64_t sample_ns = u64arg(argc, argv, "--sample-ns", "10000000");
    FILE *in = fopen(path, "r");
    if (!in) {
        fprintf(stderr, "mpxfer: %s: %s\n", path, strerror(errno));
        return 2;
    }
    int n = 0;
    char line[512];
    while (n < MAX_FLOWS && fgets(line, sizeof line, in)) {
        struct flow f = {0};
        int k = sscanf(line, "%" SCNu64 " %7s %15s %47s %11s %11s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                       " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &f.id, f.protocol, f.cc, f.bind_ip,
                       f.direction, f.kind, &f.amount, &f.start_ns, &f.rcvbuf, &f.sndbuf, &f.nodelay, &f.request_bytes,
                       &f.response_bytes, &f.interval_ns, &f.concurrency);
        if (k <= 0) break; // a blank line ends the list
        if (k < 11 || f.nodelay > 1) {
            fprintf(stderr, "mpxfer: %s: a flow line has at least 11 fields (... start_ns rcvbuf sndbuf nodelay, "
                    "nodelay 0 or 1)\n", path);
            return 2;
        }
        if (!strcmp(f.kind, "rpc") && (k != 15 || !f.request_bytes || !f.response_bytes || !f.amount)) {
            fprintf(stderr, "mpxfer: flow %" PRIu64 ": an rpc line ends with request_bytes response_bytes "
                    "interval_ns concurrency (positive sizes, requests > 0)\n", f.id);
            return 2;
        }
        if (!strcmp(f.kind, "messages") && (k != 15 || !f.request_bytes || !f.interval_ns || !f.amount)) {
            fprintf(stderr, "mpxfer: flow %" PRIu64 ": a messages line ends with message_bytes 0 interval_ns 0 "
                    "(positive size and interval, messages > 0)\n", f.id);
            return 2;
        }
        f.server = server;
        f.port = port;
        f.epoch = epoch;
        f.deadline_abs = deadline;
        f.sample_ns = sample_ns;
        flows[n++] = f;
    }
    fclose(in);
    for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, run_flow, &flows[i]);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    fflush(stdout);
    return 0;
}

/* --------------------------- constant-bit-rate UDP --------------------------- */

static int run_cbr(int argc, char **argv) {
    const char *dst = arg(argc, argv, "--dst", NULL), *bind_ip = arg(argc, argv, "--bind", "0.0.0.0");
    int port = (int)u64arg(argc, argv, "--port", NULL);
    uint64_t rate = u64arg(argc, argv, "--rate-bps", NULL);
    uint64_t pkt = u64arg(argc, argv, "--packet-bytes", "1500");
    uint64_t epoch = u64arg(argc, argv, "--epoch-ns", NULL);
    uint64_t start = epoch + u64arg(argc, argv, "--start-ns", "0");
    uint64_t stop = epoch + u64arg(argc, argv, "--stop-ns", NULL);
    if (rate == 0 || pkt < 29 || pkt > 65535) {
        fprintf(stderr, "mpxfer cbr: need rate > 0 and 29 <= packet bytes <= 65535\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in l = {.sin_family = AF_INET}, r = {.sin_family = AF_INET};
    inet_pton(AF_INET, bind_ip, &l.sin_addr);
    inet_pton(AF_INET, dst, &r.sin_addr);
    r.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&l, sizeof l) < 0) {
        fprintf(stderr, "mpxfer cbr: bind %s: %s\n", bind_ip, strerror(errno));
        return 1;
    }
    // The configured size is the IP packet: 20 bytes of IPv4 and 8 of UDP header come off.
    static char payload[65536];
    size_t plen = (size_t)(pkt - 28);
    double gap_ns = (double)pkt * 8.0 * 1e9 / (double)rate;
    uint64_t sent = 0, errors = 0;
    sleep_until(start);
    for (uint64_t k = 0; !g_stop; k++) {
        uint64_t due = start + (uint64_t)((double)k * gap_ns);
        if (due >= stop) break;
        if (due > mpx_now_ns()) sleep_until(due);
        if (sendto(fd, payload, plen, 0, (struct sockaddr *)&r, sizeof r) < 0) errors++;
        else sent++;
    }
    printf("{\"type\": \"cbr\", \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"errors\": %" PRIu64 "}\n",
           sent, sent * pkt, errors);
    return 0;
}

static int run_sink(int argc, char **argv) {
    int port = (int)u64arg(argc, argv, "--port", NULL);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "mpxfer sink: bind %d: %s\n", port, strerror(errno));
        return 1;
    }
    printf("{\"type\": \"ready\"}\n");
    fflush(stdout);
    static char buf[65536];
    uint64_t packets = 0, bytes = 0;
    while (!g_stop) {
        if (!(mpx_wait_fd(fd, POLLIN, mpx_now_ns() + 200000000ull) & POLLIN)) continue;
        ssize_t n;
        while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) >= 0) {
            packets++;
            bytes += (uint64_t)n + 28;
        }
    }
    printf("{\"type\": \"sink\", \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 "}\n", packets, bytes);
    return 0;
}

/* ------------------------------ UDP echo / ping ------------------------------ */

// Echo: sends every datagram back to where it came from (the ping's peer).
static int run_echo(int argc, char **argv) {
    int port = (int)u64arg(argc, argv, "--port", NULL);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "mpxfer echo: bind %d: %s\n", port, strerror(errno));
        return 1;
    }
    printf("{\"type\": \"ready\"}\n");
    char buf[2048];
    while (!g_stop) {
        if (!(mpx_wait_fd(fd, POLLIN, mpx_now_ns() + 200000000ull) & POLLIN)) continue;
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n > 0) sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
    }
    return 0;
}

// Ping: COUNT probes every INTERVAL ns from BIND to DST's echo; one JSON line per reply with
// the round-trip time (CLOCK_MONOTONIC, so no clock offset), then a summary line.
static int run_ping(int argc, char **argv) {
    const char *dst = arg(argc, argv, "--dst", NULL), *bind_ip = arg(argc, argv, "--bind", "0.0.0.0");
    int port = (int)u64arg(argc, argv, "--port", NULL);
    uint64_t count = u64arg(argc, argv, "--count", "10");
    uint64_t interval = u64arg(argc, argv, "--interval-ns", "10000000");
    uint64_t wait_ns = u64arg(argc, argv, "--wait-ns", "2000000000");
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in l = {.sin_family = AF_INET}, r = {.sin_family = AF_INET};
    inet_pton(AF_INET, bind_ip, &l.sin_addr);
    inet_pton(AF_INET, dst, &r.sin_addr);
    r.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&l, sizeof l) < 0) {
        fprintf(stderr, "mpxfer ping: bind %s: %s\n", bind_ip, strerror(errno));
        return 1;
    }
    struct probe {
        uint64_t seq, sent_ns;
    } p;
    uint64_t start = mpx_now_ns(), received = 0, sent = 0;
    uint64_t last_send = start + (count ? count - 1 : 0) * interval;
    for (;;) {
        uint64_t now = mpx_now_ns();
        uint64_t due = start + sent * interval;
        if (sent < count && now >= due) {
            p.seq = sent++;
            p.sent_ns = now;
            sendto(fd, &p, sizeof p, 0, (struct sockaddr *)&r, sizeof r);
            continue;
        }
        if (g_stop || (sent == count && (received == count || now >= last_send + wait_ns))) break;
        uint64_t until = sent < count ? due : last_send + wait_ns;
        if (!(mpx_wait_fd(fd, POLLIN, until) & POLLIN)) continue;
        struct probe q;
        if (recv(fd, &q, sizeof q, MSG_DONTWAIT) == (ssize_t)sizeof q) {
            received++;
            printf("{\"type\": \"rtt\", \"seq\": %" PRIu64 ", \"rtt_ns\": %" PRIu64 "}\n", q.seq,
                   mpx_now_ns() - q.sent_ns);
        }
    }
    printf("{\"type\": \"ping\", \"sent\": %" PRIu64 ", \"received\": %" PRIu64 "}\n", sent, received);
    return 0;
}

int main(int argc, char **argv) {
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: mpxfer server|client|cbr|sink|echo|ping --key value ...\n");
        return 2;
    }
    if (!strcmp(argv[1], "server")) return run_server(argc, argv);
    if (!strcmp(argv[1], "client")) return run_client(argc, argv);
    if (!strcmp(argv[1], "cbr")) return run_cbr(argc, argv);
    if (!strcmp(argv[1], "sink")) return run_sink(argc, argv);
    if (!strcmp(argv[1], "echo")) return run_echo(argc, argv);
    if (!strcmp(argv[1], "ping")) return run_ping(argc, argv);
    fprintf(stderr, "mpxfer: unknown mode %s\n", argv[1]);
    return 2;
}
