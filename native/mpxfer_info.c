// mpxfer_info: per-subflow kernel state of an MPTCP (or plain TCP) socket as JSON lines.
// MPTCP: getsockopt(SOL_MPTCP, MPTCP_TCPINFO / MPTCP_SUBFLOW_ADDRS) return one tcp_info and one
// address pair per subflow, in the connection's subflow-list order (Linux >= 5.16,
// net/mptcp/sockopt.c). Plain TCP or an MPTCP connection that fell back: TCP_INFO.

#define _GNU_SOURCE
#include "mpxfer.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <linux/mptcp.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_SUBFLOWS 8

// struct tcp_info as of Linux 6.7, whose fields the Debian 12 uapi header lacks
// (include/uapi/linux/tcp.h: tcpi_rcv_wnd, tcpi_rehash, tcpi_total_rto...). The kernel copies
// min(its size, ours), so on an older kernel the extra fields stay zero and `valid_bytes` says so.
struct xtcp_info {
    struct tcp_info base;
    uint32_t tcpi_rcv_wnd;
    uint32_t tcpi_rehash;
    uint16_t tcpi_total_rto;
    uint16_t tcpi_total_rto_recoveries;
    uint32_t tcpi_total_rto_time;
};

struct sf_addrs {
    struct sockaddr_storage local, remote;
};

uint64_t mpx_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit(FILE *out, uint64_t flow_id, uint64_t now_ns, int final,
                 const struct xtcp_info *ti, size_t valid_bytes, const struct sockaddr_storage *c) {
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (c->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)c;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
        port = ntohs(s->sin_port);
    }
    const struct tcp_info *t = &ti->base;
    uint64_t mss = t->tcpi_snd_mss;
    // Linux tcp_packets_in_flight(): packets_out - (sacked_out + lost_out) + retrans_out.
    int64_t in_flight = (int64_t)t->tcpi_unacked - t->tcpi_sacked - t->tcpi_lost + t->tcpi_retrans;
    if (in_flight < 0) in_flight = 0;
    int have_rto = valid_bytes >= offsetof(struct xtcp_info, tcpi_total_rto) + sizeof(uint16_t);
    char rto[24] = "null";
    if (have_rto) snprintf(rto, sizeof rto, "%u", ti->tcpi_total_rto);
    fprintf(out,
            "{\"type\": \"%s\", \"flow_id\": %" PRIu64 ", \"t_ns\": %" PRIu64
            ", \"caddr\": \"%s\", \"cport\": %u, \"cwnd_bytes\": %" PRIu64
            ", \"srtt_ns\": %" PRIu64 ", \"in_flight_bytes\": %" PRIu64
            ", \"bytes_sent\": %llu, \"bytes_acked\": %llu, \"bytes_retrans\": %llu"
            ", \"bytes_received\": %llu, \"total_retrans\": %u, \"rto_count\": %s"
            ", \"ca_state\": %u}\n",
            final ? "subflow" : "sample", flow_id, now_ns, ip, port,
            (uint64_t)t->tcpi_snd_cwnd * mss, (uint64_t)t->tcpi_rtt * 1000,
            (uint64_t)in_flight * mss, (unsigned long long)t->tcpi_bytes_sent,
            (unsigned long long)t->tcpi_bytes_acked, (unsigned long long)t->tcpi_bytes_retrans,
            (unsigned long long)t->tcpi_bytes_received, t->tcpi_total_retrans, rto,
            t->tcpi_ca_state);
}

// Reads every subflow's tcp_info (and addresses); returns the count, or -1 if not MPTCP.
static int read_subflows(int fd, struct xtcp_info *ti, struct sf_addrs *ad, size_t *valid) {
    struct {
        struct mptcp_subflow_data d;
        struct xtcp_info ti[MAX_SUBFLOWS];
    } infos;
    struct {
        struct mptcp_subflow_data d;
        struct sf_addrs a[MAX_SUBFLOWS];
    } addrs;
    memset(&infos, 0, sizeof infos);
    memset(&addrs, 0, sizeof addrs);
    infos.d.size_subflow_data = sizeof infos.d;
    infos.d.size_user = sizeof(struct xtcp_info);
    addrs.d.size_subflow_data = sizeof addrs.d;
    addrs.d.size_user = sizeof(struct sf_addrs);
    socklen_t l1 = sizeof infos, l2 = sizeof addrs;
    if (getsockopt(fd, SOL_MPTCP, MPTCP_TCPINFO, &infos, &l1) < 0 ||
        getsockopt(fd, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, &addrs, &l2) < 0 || infos.d.num_subflows == 0)
        return -1;
    unsigned n = infos.d.num_subflows;
    if (addrs.d.num_subflows < n) n = addrs.d.num_subflows;
    if (n > MAX_SUBFLOWS) n = MAX_SUBFLOWS;
    *valid = infos.d.size_kernel < sizeof(struct xtcp_info) ? infos.d.size_kernel : sizeof(struct xtcp_info);
    memcpy(ti, infos.ti, n * sizeof *ti);
    memcpy(ad, addrs.a, n * sizeof *ad);
    return (int)n;
}

uint64_t mpx_unacked_segments(int fd) {
    struct xtcp_info ti[MAX_SUBFLOWS];
    struct sf_addrs ad[MAX_SUBFLOWS];
    size_t valid;
    uint64_t sum = 0;
    int n = read_subflows(fd, ti, ad, &valid);
    if (n < 0) {
        socklen_t tl = sizeof ti[0];
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti[0], &tl) < 0) return 0;
        n = 1;
    }
    for (int i = 0; i < n; i++) sum += ti[i].base.tcpi_unacked;
    return sum;
}

int mpx_report_subflows(FILE *out, int fd, uint64_t flow_id, uint64_t now_ns, int final,
                        int client_side) {
    struct xtcp_info tis[MAX_SUBFLOWS];
    struct sf_addrs ads[MAX_SUBFLOWS];
    size_t valid;
    int n = read_subflows(fd, tis, ads, &valid);
    if (n > 0) {
        for (int i = 0; i < n; i++)
            emit(out, flow_id, now_ns, final, &tis[i], valid, client_side ? &ads[i].local : &ads[i].remote);
        return n;
    }
    // Plain TCP, or an MPTCP socket that fell back to TCP.
    struct xtcp_info ti;
    memset(&ti, 0, sizeof ti);
    socklen_t tl = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0) return 0;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (client_side) getsockname(fd, (struct sockaddr *)&ss, &sl);
    else getpeername(fd, (struct sockaddr *)&ss, &sl);
    emit(out, flow_id, now_ns, final, &ti, tl, &ss);
    return 1;
}
