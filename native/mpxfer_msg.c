// mpxfer_msg: real-time message flows of mpxfer, the simulator's `messages` application.
//
// The sender writes message k (`size` bytes) when it is due, at start + k * interval, and stamps
// it with that time (a wait for the handshake or for send-buffer room counts in its delay, as in
// the simulator, whose application issues on the clock whatever the socket does). The receiver
// reads the stream and stamps message k when its last byte is read; it prints one "block" line
// per message read (times relative to the epoch; the due times are the plan's, so the harness
// adds them). Sender and receiver run in different namespaces of one host and share
// CLOCK_MONOTONIC, so a message's one-way delay is a difference of two stamps on one clock.
// Both sockets set TCP_NODELAY unless the flow's `nodelay` is false (a real-time application
// does by default): a message leaves at once rather than waiting for the ACK of the previous one.

#define _GNU_SOURCE
#include "mpxfer.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#define MSG_CHUNK_BYTES (64 * 1024)

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

int64_t mpx_msg_send(int fd, const struct mpx_msg_spec *s, uint64_t stop_abs, int client_side) {
    static const char zeros[MSG_CHUNK_BYTES];
    const uint64_t total = s->count * s->size_bytes;
    uint64_t issued = 0, written = 0, next_sample = mpx_now_ns();
    while (written < total && !mpx_stopping()) {
        uint64_t now = mpx_now_ns();
        if (now >= stop_abs) break;
        if (s->sample_ns && now >= next_sample) {
            mpx_report_subflows(stdout, fd, s->flow_id, now, 0, client_side);
            next_sample = next_sample + s->sample_ns > now ? next_sample + s->sample_ns : now + s->sample_ns;
        }
        uint64_t next_due = UINT64_MAX;
        while (issued < s->count) {
            uint64_t due = s->start_abs + issued * s->interval_ns;
            if (due > now) {
                next_due = due;
                break;
            }
            issued++;
        }
        uint64_t owed = issued * s->size_bytes - written;
        if (owed) {
            ssize_t k = send(fd, zeros, (size_t)min_u64(owed, sizeof zeros), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k < 0 && errno != EAGAIN && errno != EINTR) return -1;
            if (k > 0) {
                written += (uint64_t)k;
                owed -= (uint64_t)k;
            }
        }
        uint64_t until = min_u64(min_u64(next_due, stop_abs), s->sample_ns ? next_sample : UINT64_MAX);
        if (written < total) mpx_wait_fd(fd, owed ? POLLOUT : 0, until);
    }
    return (int64_t)written;
}

uint64_t mpx_msg_receive(int fd, const struct mpx_msg_spec *s, uint64_t stop_abs, uint64_t *last_read_abs) {
    static __thread char buf[MSG_CHUNK_BYTES];
    const uint64_t total = s->count * s->size_bytes;
    uint64_t got = 0, done = 0, next_sample = mpx_now_ns();
    *last_read_abs = 0;
    while (got < total && !mpx_stopping()) {
        uint64_t now = mpx_now_ns();
        if (now >= stop_abs) break;
        if (s->sample_ns && now >= next_sample) {
            mpx_report_conn(s->flow_id, now, got);
            next_sample = next_sample + s->sample_ns > now ? next_sample + s->sample_ns : now + s->sample_ns;
        }
        short ev = mpx_wait_fd(fd, POLLIN, min_u64(stop_abs, s->sample_ns ? next_sample : UINT64_MAX));
        if (!(ev & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;
        if (r < 0) continue;
        got += (uint64_t)r;
        now = mpx_now_ns();
        *last_read_abs = now;
        for (; done < s->count && got >= (done + 1) * s->size_bytes; done++)
            printf("{\"type\": \"block\", \"flow_id\": %" PRIu64 ", \"block\": %" PRIu64 ", \"delivered_ns\": %" PRIu64
                   "}\n", s->flow_id, done, now - s->epoch_abs);
    }
    if (s->sample_ns) mpx_report_conn(s->flow_id, mpx_now_ns(), got);
    return got;
}
