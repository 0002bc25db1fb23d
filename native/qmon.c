// qmon: samples the router's qdiscs for the kernel testbed's link_series (mpsched, native/).
//
//   qmon --sample-ns S --kind bfifo [--stop-ns ABS]
//
// Every S ns one RTM_GETQDISC dump (rtnetlink, libmnl) of the namespace it runs in; for every
// qdisc of the given kind it prints a JSON line with CLOCK_MONOTONIC time, device, handle, backlog
// (bytes and packets queued, from TCA_STATS2/TCA_STATS_QUEUE) and cumulative drops. A dump is a
// few µs of kernel time, so sampling every 10 ms does not disturb the run. Stops on SIGTERM.

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct sample_ctx {
    const char *kind;
    uint64_t t_ns;
};

static int stats2_cb(const struct nlattr *attr, void *data) {
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type <= TCA_STATS_MAX) tb[type] = attr;
    return MNL_CB_OK;
}

static int tca_cb(const struct nlattr *attr, void *data) {
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);
    if (type <= TCA_MAX) tb[type] = attr;
    return MNL_CB_OK;
}

static int qdisc_cb(const struct nlmsghdr *nlh, void *data) {
    struct sample_ctx *c = data;
    struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
    const struct nlattr *tb[TCA_MAX + 1] = {0};
    mnl_attr_parse(nlh, sizeof *tcm, tca_cb, tb);
    if (!tb[TCA_KIND] || strcmp(mnl_attr_get_str(tb[TCA_KIND]), c->kind) != 0 || !tb[TCA_STATS2])
        return MNL_CB_OK;
    const struct nlattr *st[TCA_STATS_MAX + 1] = {0};
    mnl_attr_parse_nested(tb[TCA_STATS2], stats2_cb, st);
    if (!st[TCA_STATS_QUEUE]) return MNL_CB_OK;
    struct gnet_stats_queue q;
    memcpy(&q, mnl_attr_get_payload(st[TCA_STATS_QUEUE]), sizeof q);
    char dev[IF_NAMESIZE] = "?";
    if_indextoname((unsigned)tcm->tcm_ifindex, dev);
    printf("{\"type\": \"qdisc\", \"t_ns\": %" PRIu64 ", \"dev\": \"%s\", \"handle\": \"%x:\", "
           "\"backlog_bytes\": %u, \"qlen\": %u, \"drops\": %u}\n",
           c->t_ns, dev, tcm->tcm_handle >> 16, q.backlog, q.qlen, q.drops);
    return MNL_CB_OK;
}

static int dump(struct mnl_socket *nl, unsigned portid, uint32_t seq, struct sample_ctx *c) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETQDISC;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = seq;
    struct tcmsg *tcm = mnl_nlmsg_put_extra_header(nlh, sizeof *tcm);
    tcm->tcm_family = AF_UNSPEC;
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) return -1;
    c->t_ns = mono_ns();
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
        if (n <= 0) return -1;
        int r = mnl_cb_run(buf, (size_t)n, seq, portid, qdisc_cb, c);
        if (r <= MNL_CB_STOP) return r;
    }
}

int main(int argc, char **argv) {
    uint64_t sample_ns = 10000000ull;
    const char *kind = "bfifo";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sample-ns")) sample_ns = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--kind")) kind = argv[i + 1];
        else {
            fprintf(stderr, "usage: qmon [--sample-ns S] [--kind bfifo]\n");
            return 2;
        }
    }
    if (sample_ns == 0) return 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
    if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        fprintf(stderr, "qmon: rtnetlink: %s\n", strerror(errno));
        return 1;
    }
    unsigned portid = mnl_socket_get_portid(nl);
    struct sample_ctx c = {.kind = kind};
    uint64_t next = mono_ns();
    for (uint32_t seq = 1; !g_stop; seq++) {
        if (dump(nl, portid, seq, &c) < 0) {
            fprintf(stderr, "qmon: dump failed: %s\n", strerror(errno));
            break;
        }
        next += sample_ns;
        uint64_t now = mono_ns();
        if (next < now) next = now + sample_ns; // fell behind: skip, do not burst
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000000ull), .tv_nsec = (long)(next % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    fflush(stdout);
    mnl_socket_close(nl);
    return 0;
}
