// Checks of the delayer's timing logic (no root, no netlink): the defining behaviour of each
// mode in a scenario built to show it. Run by `make -C native check` and tests/test_kernel_native.py.
#include "nfqdelay_core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            failures++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, "\n");                                                               \
        }                                                                                        \
    } while (0)

#define MS 1000000ull

// Constant delay: every packet leaves exactly delay after it arrived, in order.
static void fifo_constant_delay(void) {
    struct dq_queue q;
    dq_init(&q, 1, DQ_FIFO, 10 * MS, 0, 0, 0, 1);
    for (uint32_t i = 0; i < 100; i++) dq_arrive(&q, i + 1, 1500, i * 100000ull);
    CHECK(dq_next_target(&q) == 10 * MS, "first target %llu", (unsigned long long)dq_next_target(&q));
    struct dq_pkt p;
    CHECK(!dq_pop_due(&q, 10 * MS - 1, &p), "released before its time");
    uint32_t expect = 1;
    uint64_t now = 10 * MS;
    while (q.len) {
        while (dq_pop_due(&q, now, &p)) {
            CHECK(p.id == expect, "order: got %u want %u", p.id, expect);
            CHECK(p.target_ns == (expect - 1) * 100000ull + 10 * MS, "target of %u", p.id);
            expect++;
        }
        now += 100000ull;
    }
    CHECK(expect == 101, "released %u", expect - 1);
    CHECK(q.late.max_ns == 0, "lateness recorded when popped on time");
    dq_free(&q);
}

// Smooth jitter: the delay stays within d +- J, its mean is d, and packets never overtake.
static void smooth_bounds_mean_order(void) {
    struct dq_queue q;
    dq_init(&q, 3, DQ_SMOOTH, 100 * MS, 75 * MS, 200 * MS, 0, 7);
    double sum = 0, lo = 1e18, hi = 0;
    uint64_t last_target = 0;
    int n = 0, reordered = 0;
    for (uint64_t t = 0; t < 2000000 * MS; t += MS) { // 1 kpkt/s for 2000 s: 10000 periods
        uint64_t d = dq_delay_at(&q, t);
        sum += (double)d;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
        n++;
    }
    double mean = sum / n;
    CHECK(lo >= 25 * MS && hi <= 175 * MS, "range %.1f..%.1f ms", lo / MS, hi / MS);
    CHECK(fabs(mean - 100 * MS) < 3 * MS, "mean %.2f ms", mean / MS);
    CHECK(hi - lo > 100 * MS, "jitter barely used: %.1f..%.1f ms", lo / MS, hi / MS);
    dq_free(&q);
    dq_init(&q, 3, DQ_SMOOTH, 10 * MS, 7 * MS, 20 * MS, 0, 7);
    for (uint32_t i = 0; i < 20000; i++) dq_arrive(&q, i + 1, 1500, i * 50000ull);
    struct dq_pkt p;
    uint32_t prev = 0;
    while (dq_pop_due(&q, UINT64_MAX, &p)) {
        if (p.id != prev + 1) reordered++;
        CHECK(p.target_ns >= last_target, "target went back");
        last_target = p.target_ns;
        prev = p.id;
    }
    CHECK(reordered == 0, "%d reordered", reordered);
    dq_free(&q);
}

// Reorder jitter (netem semantics): independent per-packet delays, so close packets overtake.
static void reorder_overtakes(void) {
    struct dq_queue q;
    dq_init(&q, 2, DQ_REORDER, 100 * MS, 75 * MS, 0, 0, 3);
    for (uint32_t i = 0; i < 10000; i++) dq_arrive(&q, i + 1, 1500, i * 100000ull);
    struct dq_pkt p;
    uint32_t prev = 0, out_of_order = 0, count = 0;
    uint64_t prev_target = 0;
    while (dq_pop_due(&q, UINT64_MAX, &p)) {
        CHECK(p.target_ns >= prev_target, "heap order broken");
        prev_target = p.target_ns;
        if (p.id < prev) out_of_order++;
        prev = p.id;
        count++;
    }
    CHECK(count == 10000, "released %u", count);
    CHECK(out_of_order > 5000, "only %u overtakes at 10 kpkt/s with +-75 ms", out_of_order);
    dq_free(&q);
}

// Bernoulli loss: the loss rate matches p within sampling error, losses are never held.
static void bernoulli_loss(void) {
    struct dq_queue q;
    dq_init(&q, 4, DQ_FIFO, MS, 0, 0, 0.02, 11);
    int dropped = 0;
    for (uint32_t i = 0; i < 100000; i++) dropped += dq_arrive(&q, i + 1, 1000, i) == DQ_DROP;
    // sd of the count = sqrt(n p (1-p)) = 44; allow 5 sd.
    CHECK(abs(dropped - 2000) < 220, "dropped %d of 100000 at p=0.02", dropped);
    CHECK(q.len == (size_t)(100000 - dropped), "held %zu", q.len);
    CHECK(q.lost_bytes == (uint64_t)dropped * 1000, "lost bytes");
    dq_free(&q);
}

// Gilbert-Elliott loss: the long-run rate of the two-state chain, and losses come in bursts.
static void gilbert_elliott_loss(void) {
    struct dq_queue q;
    char err[200];
    CHECK(dq_parse_spec(&q, "5,delay_us=1,ge=0.01:0.2:0:0.5", 3, err, sizeof err) == 0, "%s", err);
    int n = 400000, lost = 0, after_loss = 0, lost_after_loss = 0, prev = 0;
    for (int i = 0; i < n; i++) {
        int l = dq_arrive(&q, (uint32_t)i + 1, 100, 0) == DQ_DROP;
        if (prev) {
            after_loss++;
            lost_after_loss += l;
        }
        lost += l;
        prev = l;
    }
    double rate = (double)lost / n, expect = 0.01 / 0.21 * 0.5;
    CHECK(fabs(rate - expect) < 0.15 * expect, "GE loss rate %.4f, expected %.4f", rate, expect);
    // In the bad state half the packets go, and it lasts 5 packets on average.
    double burst = (double)lost_after_loss / after_loss;
    CHECK(burst > 0.3 && burst < 0.5, "P(loss | previous lost) = %.3f", burst);
    dq_free(&q);
    CHECK(dq_parse_spec(&q, "5,ge=0.1:0.2:0", 3, err, sizeof err) < 0, "ge with three numbers");
    CHECK(dq_parse_spec(&q, "5,ge=0.1:0.2:0:1.5", 3, err, sizeof err) < 0, "ge probability > 1");
}

static const char *write_trace(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/nfqdelay_trace_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

// Trace bottleneck (Mahimahi semantics): one MTU per opportunity, shared by small packets,
// wasted when idle, looping, drop-tail in bytes, aligned on the epoch; then the delay.
static void trace_bottleneck(void) {
    struct dq_queue q;
    char err[200], spec[200];
    const char *path = write_trace("1\n");
    snprintf(spec, sizeof spec, "1,delay_us=5000,trace=%s,qlimit=15000", path);
    CHECK(dq_parse_spec(&q, spec, 1, err, sizeof err) == 0, "%s", err);
    CHECK(q.trace && q.trace->period_ns == MS && q.trace->packet_bytes == 1500, "trace fields");
    dq_trace_set_origin(q.trace, 0);
    for (uint32_t i = 0; i < 12; i++) dq_arrive(&q, i + 1, 1500, 0);
    CHECK(q.trace->drops == 2, "15000-byte limit: %llu drops", (unsigned long long)q.trace->drops);
    struct dq_pkt p;
    uint64_t expect = 1;
    for (uint64_t now = 0; now <= 20 * MS; now += MS / 4)
        while (dq_pop_due(&q, now, &p)) {
            // served at 1, 2, ... ms, then 5 ms of delay
            CHECK(p.target_ns == (expect + 5) * MS, "packet %u target %llu", p.id, (unsigned long long)p.target_ns);
            CHECK(now >= p.target_ns && now < p.target_ns + MS / 4, "released late");
            expect++;
        }
    CHECK(expect == 11, "released %llu", (unsigned long long)expect - 1);
    // Idle since 10 ms: opportunities went by unused. Two 750-byte packets at 30.5 ms share
    // the 31 ms opportunity; a third goes at 32 ms.
    dq_arrive(&q, 100, 750, 30 * MS + MS / 2);
    dq_arrive(&q, 101, 750, 30 * MS + MS / 2);
    dq_arrive(&q, 102, 750, 30 * MS + MS / 2);
    uint64_t t[3] = {0};
    for (int k = 0; k < 3 && dq_pop_due(&q, UINT64_MAX, &p); k++) t[k] = p.target_ns;
    CHECK(t[0] == 36 * MS && t[1] == 36 * MS && t[2] == 37 * MS, "shared opportunity: %llu %llu %llu",
          (unsigned long long)t[0], (unsigned long long)t[1], (unsigned long long)t[2]);
    dq_free(&q);

    // Two opportunities per 10 ms lap, at 5 and 10 ms; the trace's 0 at the epoch (100.3 ms).
    path = write_trace("5\n10\n");
    snprintf(spec, sizeof spec, "2,delay_us=0,trace=%s", path);
    CHECK(dq_parse_spec(&q, spec, 1, err, sizeof err) == 0, "%s", err);
    dq_trace_set_origin(q.trace, 100 * MS + 300000);
    for (uint32_t i = 0; i < 3; i++) dq_arrive(&q, i + 1, 1500, 100 * MS + 300000);
    uint64_t want[3] = {105 * MS + 300000, 110 * MS + 300000, 115 * MS + 300000};
    for (int k = 0; k < 3; k++) {
        CHECK(dq_pop_due(&q, UINT64_MAX, &p) && p.target_ns == want[k], "lap %d: %llu", k,
              (unsigned long long)p.target_ns);
    }
    dq_free(&q);
    CHECK(dq_parse_spec(&q, "3,trace=/nonexistent/trace", 1, err, sizeof err) < 0, "missing trace file");
    CHECK(dq_parse_spec(&q, spec, 1, err, sizeof err) == 0 && (dq_free(&q), 1), "reparse");
    path = write_trace("5\n3\n");
    snprintf(spec, sizeof spec, "4,trace=%s", path);
    CHECK(dq_parse_spec(&q, spec, 1, err, sizeof err) < 0, "decreasing trace accepted");
}

// Histogram buckets: every value falls in a bucket whose upper edge is above it and within 25 %.
static void histogram_edges(void) {
    for (uint64_t v = 1; v < (1ull << 40); v = v * 5 / 4 + 1) {
        size_t i = dq_hist_index(v);
        uint64_t up = dq_hist_upper_ns(i);
        CHECK(v < up, "value %llu upper %llu", (unsigned long long)v, (unsigned long long)up);
        if (i > 0) CHECK(dq_hist_upper_ns(i - 1) <= v, "value %llu below bucket", (unsigned long long)v);
    }
    struct dq_queue q;
    dq_init(&q, 1, DQ_FIFO, 0, 0, 0, 0, 1);
    for (uint32_t i = 0; i < 1000; i++) dq_arrive(&q, i + 1, 100, 0);
    struct dq_pkt p;
    // Pop packet k at time k*1000 ns: lateness is uniform in [0, 1 ms).
    for (uint64_t k = 0; dq_pop_due(&q, k * 1000, &p); k++) {
    }
    uint64_t p50 = dq_late_percentile_ns(&q.late, 50);
    CHECK(p50 >= 500000 && p50 < 650000, "p50 %llu", (unsigned long long)p50);
    dq_free(&q);
}

// Lateness splits into the host's share (due while the delayer waited in ppoll) and its own.
static void lateness_shares(void) {
    struct dq_queue q;
    dq_init(&q, 1, DQ_FIFO, 10 * MS, 0, 0, 0, 1);
    dq_arrive(&q, 1, 1500, 0);       // due at 10 ms
    dq_arrive(&q, 2, 1500, 1 * MS);  // due at 11 ms
    dq_arrive(&q, 3, 1500, 5 * MS);  // due at 15 ms
    struct dq_pkt p;
    // Asleep from 5 ms, woken 2 ms past the first deadline, released 0.3 ms after waking.
    dq_note_sleep(&q, 5 * MS, 12 * MS);
    CHECK(dq_pop_due(&q, 12 * MS + 300000, &p) && p.id == 1, "first");
    CHECK(q.host_late.max_ns == 2 * MS && q.own_late.max_ns == 300000, "host %llu own %llu",
          (unsigned long long)q.host_late.max_ns, (unsigned long long)q.own_late.max_ns);
    CHECK(dq_pop_due(&q, 12 * MS + 300000, &p) && p.id == 2, "second");
    CHECK(q.late.sum_ns == 2300000 + 1300000 && q.host_late.sum_ns == 2 * MS + 1 * MS &&
              q.own_late.sum_ns == 600000, "sums %llu %llu", (unsigned long long)q.host_late.sum_ns,
          (unsigned long long)q.own_late.sum_ns);
    // Due at 15 ms while the delayer was busy (it went to sleep only at 15.4 ms): the 0.4 ms
    // before it slept are its own, the 0.1 ms asleep past that the host's.
    dq_note_sleep(&q, 15 * MS + 400000, 15 * MS + 500000);
    CHECK(dq_pop_due(&q, 15 * MS + 600000, &p) && p.id == 3, "third");
    CHECK(q.host_late.sum_ns == 3 * MS + 100000 && q.own_late.sum_ns == 600000 + 500000, "busy");
    CHECK(q.late.sum_ns == q.host_late.sum_ns + q.own_late.sum_ns, "shares add up");
    dq_free(&q);
}

static void parse_specs(void) {
    struct dq_queue q;
    char err[200];
    CHECK(dq_parse_spec(&q, "3,delay_us=100000,jitter_us=75000,period_us=200000,loss=0.01", 1, err,
                        sizeof err) == 0, "%s", err);
    CHECK(q.qnum == 3 && q.mode == DQ_SMOOTH && q.delay_ns == 100 * MS && q.jitter_ns == 75 * MS &&
              q.period_ns == 200 * MS && q.loss_prob == 0.01, "fields");
    CHECK(dq_parse_spec(&q, "2,delay_us=5,mode=reorder,jitter_us=3,dist=normal", 1, err, sizeof err) == 0,
          "%s", err);
    CHECK(q.mode == DQ_REORDER && q.dist == DQ_NORMAL, "reorder normal");
    CHECK(q.gso == -1, "gso follows -g unless given");
    CHECK(dq_parse_spec(&q, "2,delay_us=5,loss=0.1,gso=0", 1, err, sizeof err) == 0 && q.gso == 0, "gso=0");
    CHECK(dq_parse_spec(&q, "1,delay_us=5,jitter_us=3", 1, err, sizeof err) < 0, "smooth without period");
    CHECK(dq_parse_spec(&q, "1,loss=2", 1, err, sizeof err) < 0, "loss > 1");
    CHECK(dq_parse_spec(&q, "x,delay_us=1", 1, err, sizeof err) < 0, "queue not a number");
    CHECK(dq_parse_spec(&q, "1,colour=blue", 1, err, sizeof err) < 0, "unknown key");
}

// Path events (loss ramp, RTT spike) act only from the epoch on, at their times from it: the
// ramp interpolates and holds, the spike adds its delay to the packets arriving in it, a packet
// after the spike never overtakes one delayed by it, and the ramp's losses follow its level.
static void path_events_from_the_epoch(void) {
    struct dq_queue q;
    char err[256];
    CHECK(dq_parse_spec(&q, "1,delay_us=10000,ramp=1000000:1000000:3000000:0:0.5,spike=500000:700000:50000", 7, err,
                        sizeof err) == 0, "%s", err);
    uint64_t o = 100 * MS;
    CHECK(dq_event_loss(&q, o + 2500 * MS) == 0 && dq_event_delay_ns(&q, o + 600 * MS) == 0, "no epoch: no event");
    q.ev_origin_ns = o;
    CHECK(dq_delay_at(&q, o + 499 * MS) == 10 * MS, "before the spike");
    CHECK(dq_delay_at(&q, o + 600 * MS) == 60 * MS, "in the spike: %llu",
          (unsigned long long)dq_delay_at(&q, o + 600 * MS));
    CHECK(dq_delay_at(&q, o + 700 * MS) == 10 * MS, "after the spike");
    CHECK(dq_event_loss(&q, o + 999 * MS) == 0, "before the ramp");
    CHECK(fabs(dq_event_loss(&q, o + 1500 * MS) - 0.25) < 1e-9, "mid-ramp %g", dq_event_loss(&q, o + 1500 * MS));
    CHECK(dq_event_loss(&q, o + 2500 * MS) == 0.5 && dq_event_loss(&q, o + 3000 * MS) == 0, "held, then lifted");
    // FIFO: a packet arriving just after the spike leaves behind the last one delayed by it.
    dq_arrive(&q, 1, 1500, o + 699 * MS);
    dq_arrive(&q, 2, 1500, o + 700 * MS);
    struct dq_pkt p;
    CHECK(dq_pop_due(&q, o + 800 * MS, &p) && p.id == 1 && p.target_ns == o + 759 * MS, "spiked packet");
    CHECK(dq_pop_due(&q, o + 800 * MS, &p) && p.id == 2 && p.target_ns == o + 759 * MS, "not before it");
    uint64_t lost = 0, n = 20000;
    for (uint32_t i = 0; i < n; i++) lost += dq_arrive(&q, 10 + i, 1500, o + 2500 * MS + i) == DQ_DROP;
    CHECK(fabs((double)lost / (double)n - 0.5) < 0.02, "held ramp loses %llu of %llu", (unsigned long long)lost,
          (unsigned long long)n);
    dq_free(&q);
    CHECK(dq_parse_spec(&q, "1,delay_us=1,ramp=2000000:2000000:3000000:0:1", 1, err, sizeof err) < 0, "ramp past end");
    CHECK(dq_parse_spec(&q, "1,delay_us=1,spike=1:2", 1, err, sizeof err) < 0, "spike needs three fields");
}

int main(void) {
    fifo_constant_delay();
    smooth_bounds_mean_order();
    reorder_overtakes();
    bernoulli_loss();
    gilbert_elliott_loss();
    trace_bottleneck();
    histogram_edges();
    lateness_shares();
    parse_specs();
    path_events_from_the_epoch();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("nfqdelay_core: all checks passed\n");
    return 0;
}
