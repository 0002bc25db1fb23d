// nfqdelay: the kernel testbed's link delayer (mpsched, native/).
//
// Holds packets that iptables hands to NFQUEUE queues in the router namespace for a per-queue
// one-way delay, with optional "smooth" jitter (a jitter sample every period, linearly
// interpolated in between: mean delay kept, never reorders), netem-like per-packet "reorder"
// jitter, and Bernoulli or Gilbert-Elliott loss. Why NFQUEUE and not netem/BPF: see
// docs/testbed.md (netem, fq and etf are not built on the target kernel; only a userspace queue
// can hold packets).
//
// Speed: a 4-byte copy range (just enough to learn the length), NFQA_CFG_F_GSO (GSO super-packets queued whole),
// recvmmsg batches, and NFQNL_MSG_VERDICT_BATCH (one message accepts every queued id <= N, valid
// because FIFO modes release a prefix of the queue). Verdicts of all queues go out in one send.
//
// Usage: nfqdelay [-g] [-s SEED] [-o STATS.json] [-e EPOCH_FILE] -q SPEC [-q SPEC ...]
//   SPEC = QNUM,delay_us=D[,jitter_us=J][,period_us=P][,mode=fifo|smooth|reorder]
//          [,dist=uniform|normal][,loss=PROB][,ge=P_GB:P_BG:LOSS_GOOD:LOSS_BAD][,gso=0|1]
//          [,ramp=AT_US:LEN_US:END_US:P0:P1][,spike=AT_US:END_US:EXTRA_US]
//          [,trace=FILE[,tpkt=BYTES][,tperiod_us=P][,qlimit=BYTES]]
// trace= puts a Mahimahi trace-driven bottleneck with a drop-tail limit of qlimit bytes in front
// of the delay (nfqdelay_trace.c); SIGUSR1 re-reads the epoch from -e, the trace's offset 0.
// -g queues GSO super-packets whole (NFQA_CFG_F_GSO); gso=0 on a queue makes the kernel segment
// them before queueing instead, so that loss applies per packet as in the simulator.
// Prints "ready" on stdout once every queue is bound (add the iptables rules only then: NFQUEUE
// without a listener drops). SIGINT/SIGTERM: accepts everything still held, unbinds, writes the
// statistics (packets, bytes, losses, max occupancy, lateness histogram, and lateness split
// into the host's share and the delayer's own) as JSON.

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#include "nfqdelay_core.h"

#define MAX_QUEUES 16
// Bytes of each packet copied to us: we only need the length, which comes with any partial copy.
#define COPY_RANGE_BYTES 4
#define RECV_BATCH 64
#define RECV_BUF_BYTES 4096
#define SEND_BUF_BYTES (64 * 1024)
// Kernel-side queue length (packets) before the kernel itself drops; far above any BDP we emulate.
#define KERNEL_QUEUE_MAXLEN 100000
// Netlink receive buffer: absorbs bursts while we are busy releasing (needs SO_RCVBUFFORCE, root).
#define NL_RCVBUF_BYTES (64 * 1024 * 1024)
// How many recvmmsg batches we drain before checking for due releases again.
#define MAX_DRAIN_ROUNDS 8

static volatile sig_atomic_t g_stop, g_epoch;

static void on_signal(int sig) {
    if (sig == SIGUSR1) g_epoch = 1;
    else g_stop = 1;
}

// SIGUSR1: the harness wrote the run's epoch (CLOCK_MONOTONIC ns) into the -e file; trace
// bottlenecks put their offset 0 there, as the simulator starts its traces at time 0, and path
// events (ramp=, spike=) are timed from it.
static void apply_epoch(struct dq_queue *qs, int n, const char *path) {
    FILE *f = path ? fopen(path, "r") : NULL;
    unsigned long long epoch = 0;
    if (!f) return;
    if (fscanf(f, "%llu", &epoch) == 1)
        for (int i = 0; i < n; i++) {
            if (qs[i].trace) dq_trace_set_origin(qs[i].trace, (uint64_t)epoch);
            qs[i].ev_origin_ns = (uint64_t)epoch; // path events are timed from it too
        }
    fclose(f);
}

struct ctx {
    struct mnl_socket *nl;
    unsigned int portid;
    struct dq_queue queues[MAX_QUEUES];
    int nqueues;
    char sendbuf[SEND_BUF_BYTES];
    size_t sendlen;
    uint64_t now_ns;
    uint64_t enobufs;
    uint64_t send_errors;
};

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct dq_queue *find_queue(struct ctx *c, uint16_t qnum) {
    for (int i = 0; i < c->nqueues; i++)
        if (c->queues[i].qnum == qnum) return &c->queues[i];
    return NULL;
}

static void flush_verdicts(struct ctx *c) {
    if (c->sendlen == 0) return;
    if (mnl_socket_sendto(c->nl, c->sendbuf, c->sendlen) < 0) c->send_errors++;
    c->sendlen = 0;
}

// Appends one verdict message; `batch` selects NFQNL_MSG_VERDICT_BATCH (all ids <= id).
static void put_verdict(struct ctx *c, uint16_t qnum, uint32_t id, int verdict, int batch) {
    if (SEND_BUF_BYTES - c->sendlen < 256) flush_verdicts(c);
    struct nlmsghdr *nlh = nfq_nlmsg_put(c->sendbuf + c->sendlen,
                                         batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT, qnum);
    nfq_nlmsg_verdict_put(nlh, (int)id, verdict);
    c->sendlen += NLMSG_ALIGN(nlh->nlmsg_len);
}

static int on_packet(const struct nlmsghdr *nlh, void *data) {
    struct ctx *c = data;
    struct nlattr *attr[NFQA_MAX + 1] = {0};
    if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR]) return MNL_CB_OK;
    struct nfqnl_msg_packet_hdr *ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
    struct nfgenmsg *nfg = mnl_nlmsg_get_payload(nlh);
    uint16_t qnum = ntohs(nfg->res_id);
    uint32_t id = ntohl(ph->packet_id);
    // Only COPY_RANGE_BYTES of payload are copied; the whole length comes in NFQA_CAP_LEN.
    uint32_t len = 0;
    if (attr[NFQA_CAP_LEN]) len = ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN]));
    else if (attr[NFQA_PAYLOAD]) len = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
    struct dq_queue *q = find_queue(c, qnum);
    if (!q) {
        put_verdict(c, qnum, id, NF_ACCEPT, 0);
        return MNL_CB_OK;
    }
    if (dq_arrive(q, id, len, c->now_ns) == DQ_DROP) put_verdict(c, qnum, id, NF_DROP, 0);
    return MNL_CB_OK;
}

// Releases every packet whose time has come; returns the earliest pending target (0 if none).
static uint64_t release_due(struct ctx *c) {
    uint64_t next = 0;
    c->now_ns = mono_ns();
    for (int i = 0; i < c->nqueues; i++) {
        struct dq_queue *q = &c->queues[i];
        struct dq_pkt p;
        if (q->mode == DQ_REORDER) {
            while (dq_pop_due(q, c->now_ns, &p)) put_verdict(c, q->qnum, p.id, NF_ACCEPT, 0);
        } else {
            uint32_t last = 0;
            int any = 0;
            while (dq_pop_due(q, c->now_ns, &p)) {
                last = p.id;
                any = 1;
            }
            if (any) put_verdict(c, q->qnum, last, NF_ACCEPT, 1);
        }
        uint64_t t = dq_next_target(q);
        if (t && (!next || t < next)) next = t;
    }
    flush_verdicts(c);
    return next;
}

static void release_all(struct ctx *c) {
    for (int i = 0; i < c->nqueues; i++) {
        struct dq_queue *q = &c->queues[i];
        struct dq_pkt p;
        while (dq_pop_due(q, UINT64_MAX, &p)) put_verdict(c, q->qnum, p.id, NF_ACCEPT, 0);
    }
    flush_verdicts(c);
}

// Sends one config message with NLM_F_ACK and waits for the kernel's answer.
static int config_request(struct ctx *c, struct nlmsghdr *nlh) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    nlh->nlmsg_flags |= NLM_F_ACK;
    nlh->nlmsg_seq = (uint32_t)time(NULL);
    if (mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len) < 0) return -1;
    ssize_t n = mnl_socket_recvfrom(c->nl, buf, sizeof buf);
    if (n < 0) return -1;
    return mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, c->portid, NULL, NULL) < 0 ? -1 : 0;
}

static int bind_queue(struct ctx *c, uint16_t qnum, int gso) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, qnum);
    nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
    if (config_request(c, nlh) < 0) {
        fprintf(stderr, "nfqdelay: cannot bind queue %u: %s\n", qnum, strerror(errno));
        return -1;
    }
    nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, qnum);
    // COPY_PACKET of a few bytes rather than COPY_META: the kernel reports the packet length
    // (NFQA_CAP_LEN) only when it copies part of the packet (net/netfilter/nfnetlink_queue.c).
    nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, COPY_RANGE_BYTES);
    nfq_nlmsg_cfg_put_qmaxlen(nlh, KERNEL_QUEUE_MAXLEN);
    if (gso) {
        mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
        mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
    }
    if (config_request(c, nlh) < 0) {
        fprintf(stderr, "nfqdelay: cannot configure queue %u: %s\n", qnum, strerror(errno));
        return -1;
    }
    return 0;
}

static void unbind_queue(struct ctx *c, uint16_t qnum) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, qnum);
    nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_UNBIND);
    mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len);
}

static void drain(struct ctx *c) {
    static char bufs[RECV_BATCH][RECV_BUF_BYTES];
    struct mmsghdr msgs[RECV_BATCH];
    struct iovec iov[RECV_BATCH];
    int fd = mnl_socket_get_fd(c->nl);
    for (int round = 0; round < MAX_DRAIN_ROUNDS; round++) {
        for (int i = 0; i < RECV_BATCH; i++) {
            iov[i].iov_base = bufs[i];
            iov[i].iov_len = RECV_BUF_BYTES;
            memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int n = recvmmsg(fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == ENOBUFS) {
                c->enobufs++;
                continue;
            }
            return; // EAGAIN (drained) or EINTR (signal): back to the main loop
        }
        c->now_ns = mono_ns();
        for (int i = 0; i < n; i++)
            mnl_cb_run(bufs[i], msgs[i].msg_len, 0, c->portid, on_packet, c);
        flush_verdicts(c); // losses
        if (n < RECV_BATCH) return;
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: nfqdelay [-g] [-s SEED] [-o STATS.json] [-e EPOCH_FILE] -q SPEC [-q SPEC ...]\n"
            "  SPEC = QNUM,delay_us=D[,jitter_us=J][,period_us=P][,mode=fifo|smooth|reorder]"
            "[,dist=uniform|normal][,loss=PROB][,ge=P_GB:P_BG:LOSS_GOOD:LOSS_BAD][,gso=0|1]"
            "[,ramp=AT_US:LEN_US:END_US:P0:P1][,spike=AT_US:END_US:EXTRA_US]"
            "[,trace=FILE[,tpkt=BYTES][,tperiod_us=P][,qlimit=BYTES]]\n");
}

int main(int argc, char **argv) {
    static struct ctx c;
    int gso = 0, opt;
    uint64_t seed = 1;
    const char *stats_path = NULL, *epoch_path = NULL;
    const char *specs[MAX_QUEUES];
    int nspecs = 0;
    while ((opt = getopt(argc, argv, "gs:o:e:q:h")) != -1) {
        switch (opt) {
        case 'e': epoch_path = optarg; break;
        case 'g': gso = 1; break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': stats_path = optarg; break;
        case 'q':
            if (nspecs == MAX_QUEUES) {
                fprintf(stderr, "nfqdelay: at most %d queues\n", MAX_QUEUES);
                return 2;
            }
            specs[nspecs++] = optarg;
            break;
        default: usage(); return 2;
        }
    }
    if (nspecs == 0) {
        usage();
        return 2;
    }
    for (int i = 0; i < nspecs; i++) {
        char err[200];
        if (dq_parse_spec(&c.queues[i], specs[i], seed, err, sizeof err) < 0) {
            fprintf(stderr, "nfqdelay: bad queue spec '%s': %s\n", specs[i], err);
            return 2;
        }
        c.nqueues++;
    }

    c.nl = mnl_socket_open(NETLINK_NETFILTER);
    if (!c.nl || mnl_socket_bind(c.nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        fprintf(stderr, "nfqdelay: netlink socket: %s\n", strerror(errno));
        return 1;
    }
    c.portid = mnl_socket_get_portid(c.nl);
    int fd = mnl_socket_get_fd(c.nl);
    int one = 1, rcvbuf = NL_RCVBUF_BYTES;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
    for (int i = 0; i < c.nqueues; i++)
        if (bind_queue(&c, c.queues[i].qnum, c.queues[i].gso >= 0 ? c.queues[i].gso : gso) < 0) return 1;

    // Signals only interrupt ppoll, so the stop flag is never missed between check and sleep.
    sigset_t block, empty;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, NULL);
    sigemptyset(&empty);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);

    printf("ready\n");
    fflush(stdout);

    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint64_t next = 0;
    while (!g_stop) {
        struct timespec ts, *tsp = &ts;
        uint64_t now = mono_ns();
        uint64_t wait_ns = next ? (next > now ? next - now : 0) : 200000000ull;
        ts.tv_sec = (time_t)(wait_ns / 1000000000ull);
        ts.tv_nsec = (long)(wait_ns % 1000000000ull);
        int r = ppoll(&pfd, 1, tsp, &empty);
        uint64_t woke = mono_ns();
        for (int i = 0; i < c.nqueues; i++) dq_note_sleep(&c.queues[i], now, woke);
        if (g_epoch) {
            g_epoch = 0;
            apply_epoch(c.queues, c.nqueues, epoch_path);
        }
        if (r > 0 && (pfd.revents & POLLIN)) drain(&c);
        next = release_due(&c);
    }

    release_all(&c);
    for (int i = 0; i < c.nqueues; i++) unbind_queue(&c, c.queues[i].qnum);
    FILE *out = stats_path ? fopen(stats_path, "w") : stderr;
    if (!out) out = stderr;
    dq_write_stats(out, c.queues, c.nqueues, c.enobufs, c.send_errors);
    if (out != stderr) fclose(out);
    mnl_socket_close(c.nl);
    for (int i = 0; i < c.nqueues; i++) dq_free(&c.queues[i]);
    return 0;
}
