// nfqdelay_core: the delayer's packet-timing logic, free of netlink and of the clock (time is
// passed in as now_ns), so native/test_nfqdelay_core.c can check it without root.
#ifndef NFQDELAY_CORE_H
#define NFQDELAY_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nfqdelay_trace.h"

enum dq_mode {
    DQ_FIFO,    // constant delay (jitter 0), release in arrival order
    DQ_SMOOTH,  // jitter sampled every period, linearly interpolated, never reorders
    DQ_REORDER, // netem-like independent per-packet jitter, packets overtake each other
};

enum dq_dist { DQ_UNIFORM, DQ_NORMAL };

enum dq_verdict { DQ_HOLD, DQ_DROP };

struct dq_pkt {
    uint32_t id;
    uint32_t len_bytes;
    uint64_t target_ns;
    uint64_t seq; // arrival order: breaks ties in the reorder heap
};

// Lateness histogram: bucket 0 is [0, 1024) ns; above that, 4 buckets per power of two
// (each about 19 % wide), up to 2^44 ns.
#define DQ_HIST_BUCKETS (1 + 34 * 4)

// One lateness distribution: its histogram, sum and largest value.
struct dq_late {
    uint64_t sum_ns, max_ns;
    uint64_t hist[DQ_HIST_BUCKETS];
};

struct dq_queue {
    uint16_t qnum;
    enum dq_mode mode;
    enum dq_dist dist;
    uint64_t delay_ns;
    uint64_t jitter_ns;
    uint64_t period_ns;
    double loss_prob;
    // Gilbert-Elliott loss (when ge): per packet, Good->Bad with ge_p_gb, Bad->Good with ge_p_bg,
    // then loss with ge_loss_good / ge_loss_bad in the new state (as the simulator's LossConfig).
    int ge, ge_bad;
    double ge_p_gb, ge_p_bg, ge_loss_good, ge_loss_bad;
    uint64_t rng;
    int gso; // -1: the program's -g setting; 0/1: this queue's (spec key gso=)
    // smooth jitter: segment index and the jitter samples (signed ns) at its two ends
    int smooth_started;
    uint64_t seg_index;
    double seg_j0_ns, seg_j1_ns;
    uint64_t origin_ns;
    uint64_t last_target_ns;
    uint64_t next_seq;
    // Path events, timed from the run's epoch (ev_origin_ns; 0 until the harness gives it, and
    // no event acts before): a loss ramp (extra loss drawn after the loss model, rising from
    // ramp_p0 at ramp_at_ns to ramp_p1 at ramp_at_ns + ramp_len_ns, held until ramp_end_ns)
    // and an RTT spike (spike_extra_ns more delay for packets arriving from spike_at_ns until
    // spike_end_ns); as the simulator's impairments (crates/mpsched-engine/src/net/impairment.rs).
    uint64_t ev_origin_ns;
    int has_ramp, has_spike;
    uint64_t ramp_at_ns, ramp_len_ns, ramp_end_ns;
    double ramp_p0, ramp_p1;
    uint64_t spike_at_ns, spike_end_ns, spike_extra_ns;
    // trace-driven bottleneck in front of the delay (NULL: none; the htb qdisc shapes instead)
    struct dq_trace *trace;
    // FIFO ring (fifo, smooth) or binary min-heap on (target, seq) (reorder)
    struct dq_pkt *buf;
    size_t cap, head, len;
    // statistics
    uint64_t packets, bytes, lost, lost_bytes, released, max_occupancy;
    // Lateness (release minus target) and its two shares: the host's, the time the packet was
    // due while the delayer waited in ppoll (asleep past its deadline, or runnable but not run:
    // the OS's wake-up, a busy or stalled CPU), and the delayer's own, the rest (reading
    // arrivals, issuing verdicts). The sleep window is given by dq_note_sleep.
    struct dq_late late, host_late, own_late;
    uint64_t asleep_from_ns, woke_ns;
};

int dq_parse_spec(struct dq_queue *q, const char *spec, uint64_t seed, char *err, size_t errlen);
void dq_init(struct dq_queue *q, uint16_t qnum, enum dq_mode mode, uint64_t delay_ns,
             uint64_t jitter_ns, uint64_t period_ns, double loss_prob, uint64_t seed);
void dq_free(struct dq_queue *q);
// Extra loss probability and extra delay of the path events at now_ns (0 outside them).
double dq_event_loss(const struct dq_queue *q, uint64_t now_ns);
uint64_t dq_event_delay_ns(const struct dq_queue *q, uint64_t now_ns);
// The delay a packet arriving at now_ns would get (before the no-overtaking rule).
uint64_t dq_delay_at(struct dq_queue *q, uint64_t now_ns);
// A packet arrived: decides loss, computes its release time and holds it.
enum dq_verdict dq_arrive(struct dq_queue *q, uint32_t id, uint32_t len_bytes, uint64_t now_ns);
// The delayer waited in ppoll from asleep_from_ns until woke_ns: lateness of a packet due in
// that window, up to woke_ns, is the host's share.
void dq_note_sleep(struct dq_queue *q, uint64_t asleep_from_ns, uint64_t woke_ns);
// Pops the next packet due at now_ns (records its lateness); 0 when none is due.
int dq_pop_due(struct dq_queue *q, uint64_t now_ns, struct dq_pkt *out);
// Release time of the next held packet, 0 when the queue is empty.
uint64_t dq_next_target(const struct dq_queue *q);
size_t dq_hist_index(uint64_t ns);
uint64_t dq_hist_upper_ns(size_t index);
// Lateness percentile (upper edge of the bucket that holds it), ns.
uint64_t dq_late_percentile_ns(const struct dq_late *l, double pct);
void dq_write_stats(FILE *out, const struct dq_queue *qs, int n, uint64_t enobufs,
                    uint64_t send_errors);

#endif
