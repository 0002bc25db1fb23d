// mpxfer: MPTCP/TCP transfer tool of the kernel testbed (see mpxfer.c). Shared declarations.
#ifndef MPXFER_H
#define MPXFER_H

#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262 // include/uapi/linux/in.h
#endif
#ifndef SOL_MPTCP
#define SOL_MPTCP 284 // include/linux/socket.h
#endif

// Request a client sends right after connect(), network byte order on the wire.
#define MPX_MAGIC 0x6d707831u // "mpx1"
enum { MPX_DOWNLOAD = 0, MPX_UPLOAD = 1 };
enum { MPX_SIZED = 0, MPX_BULK = 1, MPX_RPC = 2, MPX_MESSAGES = 3 };

struct mpx_request {
    uint32_t magic;
    uint8_t direction;
    uint8_t kind;
    uint8_t nodelay;  // 1: the server sets TCP_NODELAY too (the flow's `nodelay`, both sockets alike)
    char cc[16];      // congestion control the server sets on its side of the connection
    uint64_t flow_id;
    uint64_t size_bytes; // sized flows; rpc: one response
    uint64_t request_bytes; // rpc: one request (the requests follow this header in the stream)
    // messages (size_bytes: one message): `count` of them, message k due at start_abs + k *
    // interval_ns; epoch_abs: the run's epoch (both ends share CLOCK_MONOTONIC)
    uint64_t count, interval_ns, start_abs, epoch_abs;
};

// A messages flow (mpxfer_msg.c). Times are absolute CLOCK_MONOTONIC ns.
struct mpx_msg_spec {
    uint64_t flow_id, count, size_bytes, interval_ns, start_abs, epoch_abs, sample_ns;
};

// An RPC flow's client side (mpxfer_rpc.c). Times are absolute CLOCK_MONOTONIC ns.
struct mpx_rpc_spec {
    uint64_t flow_id, requests, request_bytes, response_bytes;
    uint64_t interval_ns;  // open loop: request k due at start_abs + k * interval_ns (0: closed loop)
    uint64_t concurrency;  // closed loop: requests outstanding at once
    uint64_t start_abs, stop_abs, sample_ns;
};

// The upload receiver's answer: when its last byte arrived and how many bytes it got.
struct mpx_upload_reply {
    uint64_t last_byte_ns;
    uint64_t bytes_received;
};

uint64_t mpx_now_ns(void);
// Writes one JSON line per subflow of `fd` (a sample, or the final counters when `final`).
// `client_side` says whether the local address is the client's (for path identification).
// Returns the number of subflows seen.
int mpx_report_subflows(FILE *out, int fd, uint64_t flow_id, uint64_t now_ns, int final,
                        int client_side);
// Segments sent but not yet acknowledged, summed over the subflows of `fd`.
uint64_t mpx_unacked_segments(int fd);

// mpxfer.c
short mpx_wait_fd(int fd, short events, uint64_t abs_ns); // revents, 0 on timeout
void mpx_report_conn(uint64_t flow_id, uint64_t now_ns, uint64_t delivered);
int mpx_stopping(void);

// mpxfer_rpc.c
void mpx_nodelay(int fd);
// Issues the requests (the stream starts with `rq`), reads the responses; fills sent_ns and
// delivered_ns (per request, `*answered` of them delivered). Returns -1 if the connection failed.
int mpx_rpc_client(int fd, const struct mpx_request *rq, const struct mpx_rpc_spec *s, uint64_t *sent_ns,
                   uint64_t *delivered_ns, uint64_t *answered, uint64_t *response_bytes_read);
// Serves requests of `request_bytes` with responses of `response_bytes` until the client closes.
void mpx_rpc_serve(int fd, uint64_t flow_id, uint64_t request_bytes, uint64_t response_bytes, uint64_t sample_ns,
                   uint64_t give_up_abs);

// mpxfer_msg.c
// Writes message k when due until all are written or stop_abs, sampling the subflows; returns
// the bytes written, -1 if the connection failed.
int64_t mpx_msg_send(int fd, const struct mpx_msg_spec *s, uint64_t stop_abs, int client_side);
// Reads messages until all arrived, the peer closed or stop_abs; one "block" line per message
// read whole. Returns the bytes read; *last_read_abs: when the last of them was read (0: none).
uint64_t mpx_msg_receive(int fd, const struct mpx_msg_spec *s, uint64_t stop_abs, uint64_t *last_read_abs);

#endif
