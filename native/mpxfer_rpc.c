// mpxfer_rpc: request / response (RPC) flows of mpxfer, the simulator's `rpc` application.
//
// The client writes request k (`request_bytes` of the client-to-server stream) when it is due
// (open loop: epoch + start + k * interval, stamped with that time, so a wait for the
// handshake counts in its latency; closed loop: while fewer than `concurrency` requests are
// unanswered, stamped now), only once connect() has returned, and closes its side after the
// last. The server reads the requests in order and writes response k (`response_bytes`) once
// requests 0..=k have arrived whole. The client records when the last byte of each response
// was read: one "block" line per request (the simulator's `blocks` table). Both sockets set
// TCP_NODELAY unless the flow's `nodelay` is false (an RPC does by default): a request or the
// tail of a response leaves at once rather than waiting for the ACK of an earlier small segment.

#define _GNU_SOURCE
#include "mpxfer.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RPC_CHUNK_BYTES (64 * 1024)

void mpx_nodelay(int fd) {
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        fprintf(stderr, "mpxfer: TCP_NODELAY: %s\n", strerror(errno));
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

// Sends up to `owed` bytes without blocking (the first `head_len` bytes of the stream are
// `head`, zeros after); returns bytes sent, or -1 on a connection error.
static int64_t send_some(int fd, const void *head, uint64_t head_len, uint64_t written, uint64_t owed) {
    static const char zeros[RPC_CHUNK_BYTES];
    static __thread char first[RPC_CHUNK_BYTES];
    uint64_t n = min_u64(owed, RPC_CHUNK_BYTES);
    const char *from = zeros;
    if (written < head_len) {
        // The header and the first requests leave in one write (one segment where they fit).
        memset(first, 0, (size_t)n);
        memcpy(first, (const char *)head + written, (size_t)min_u64(head_len - written, n));
        from = first;
    }
    ssize_t r = send(fd, from, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    return r;
}

int mpx_rpc_client(int fd, const struct mpx_request *rq, const struct mpx_rpc_spec *s, uint64_t *sent_ns,
                   uint64_t *delivered_ns, uint64_t *answered, uint64_t *response_bytes_read) {
    static __thread char buf[RPC_CHUNK_BYTES];
    const uint64_t head = sizeof *rq, n = s->requests;
    uint64_t issued = 0, done = 0, written = 0, got = 0, next_sample = mpx_now_ns();
    int failed = 0;
    while (done < n && !mpx_stopping()) {
        uint64_t now = mpx_now_ns();
        if (now >= s->stop_abs) break;
        if (s->sample_ns && now >= next_sample) {
            mpx_report_conn(s->flow_id, now, got);
            next_sample = next_sample + s->sample_ns > now ? next_sample + s->sample_ns : now + s->sample_ns;
        }
        uint64_t next_due = UINT64_MAX;
        while (issued < n) {
            if (s->interval_ns) {
                uint64_t due = s->start_abs + issued * s->interval_ns;
                if (due > now) {
                    next_due = due;
                    break;
                }
                sent_ns[issued++] = due;
            } else if (issued - done < s->concurrency) {
                sent_ns[issued++] = now;
            } else {
                break;
            }
        }
        uint64_t owed = head + issued * s->request_bytes - written;
        if (owed) {
            int64_t k = send_some(fd, rq, head, written, owed);
            if (k < 0) {
                failed = 1;
                break;
            }
            written += (uint64_t)k;
            owed -= (uint64_t)k;
        }
        uint64_t until = min_u64(min_u64(next_due, s->stop_abs), s->sample_ns ? next_sample : UINT64_MAX);
        short ev = mpx_wait_fd(fd, POLLIN | (owed ? POLLOUT : 0), until);
        if (!(ev & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            failed = 1;
            break;
        }
        if (r > 0) {
            got += (uint64_t)r;
            now = mpx_now_ns();
            while (done < issued && got >= (done + 1) * s->response_bytes) delivered_ns[done++] = now;
        }
    }
    if (s->sample_ns) mpx_report_conn(s->flow_id, mpx_now_ns(), got);
    *answered = done;
    *response_bytes_read = got;
    return failed ? -1 : 0;
}

void mpx_rpc_serve(int fd, uint64_t flow_id, uint64_t request_bytes, uint64_t response_bytes, uint64_t sample_ns,
                   uint64_t give_up_abs) {
    static __thread char buf[RPC_CHUNK_BYTES];
    static const char zeros[RPC_CHUNK_BYTES];
    uint64_t got = 0, written = 0, next_sample = mpx_now_ns();
    int peer_closed = 0;
    while (!mpx_stopping()) {
        uint64_t now = mpx_now_ns();
        if (now >= give_up_abs) break;
        if (sample_ns && now >= next_sample) {
            mpx_report_subflows(stdout, fd, flow_id, now, 0, 0);
            next_sample = next_sample + sample_ns > now ? next_sample + sample_ns : now + sample_ns;
        }
        // Responses owed: one per request whole so far (requests are served in order).
        uint64_t owed = (got / request_bytes) * response_bytes - written;
        if (owed) {
            ssize_t k = send(fd, zeros, (size_t)min_u64(owed, sizeof zeros), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k > 0) {
                written += (uint64_t)k;
                owed -= (uint64_t)k;
            } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                break;
            }
        }
        if (peer_closed && !owed) break;
        uint64_t until = min_u64(give_up_abs, sample_ns ? next_sample : UINT64_MAX);
        short ev = mpx_wait_fd(fd, (peer_closed ? 0 : POLLIN) | (owed ? POLLOUT : 0), until);
        if (peer_closed || !(ev & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) peer_closed = 1;
        else if (r < 0 && errno != EAGAIN && errno != EINTR) break;
        else if (r > 0) got += (uint64_t)r;
    }
}
