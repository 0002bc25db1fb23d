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
enum { MPX_SIZED = 0, MPX_BULK = 1 };

struct mpx_request {
    uint32_t magic;
    uint8_t direction;
    uint8_t kind;
    char cc[16];      // congestion control the server sets on its side of the connection
    uint64_t flow_id;
    uint64_t size_bytes; // sized flows
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

#endif
