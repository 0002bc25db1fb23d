// nfqdelay_trace: a Mahimahi trace-driven bottleneck in front of a delayer queue. Packets wait
// in a drop-tail byte-limited FIFO and leave at the trace's delivery opportunities (each carries
// up to packet_bytes; several small packets can share one; an opportunity with nothing queued is
// wasted; the trace repeats every period), with the semantics of the simulator's
// CapacityConfig::Trace (crates/mpsched-engine/src/net/capacity.rs). Time is passed in.
#ifndef NFQDELAY_TRACE_H
#define NFQDELAY_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct dq_pkt;

struct dq_trace {
    uint64_t *opportunities_ns; // offsets within one period, non-decreasing
    size_t n;
    uint64_t period_ns;
    uint64_t packet_bytes;
    uint64_t limit_bytes;       // drop-tail limit of the waiting packets
    uint64_t anchor_ns;         // absolute time of the trace's offset 0 (some lap of it)
    uint64_t next_k;            // next opportunity index, counted from the anchor
    uint64_t credit_at_ns, credit_bytes;
    // waiting packets (FIFO ring); `target_ns` of an entry holds its arrival time
    struct dq_pkt *buf;
    size_t cap, head, len;
    uint64_t bytes;
    uint64_t head_done_ns;      // when the head packet's service completes
    uint64_t drops, max_bytes;
};

// Loads `path` (one opportunity in ms per line, as Mahimahi); period 0 = the last timestamp.
int dq_trace_load(struct dq_trace *t, const char *path, uint64_t period_ns, uint64_t packet_bytes,
                  uint64_t limit_bytes, uint64_t now_ns, char *err, size_t errlen);
void dq_trace_free(struct dq_trace *t);
// The trace's offset 0 falls at `origin_ns` (the run's epoch); drops accumulated credit.
void dq_trace_set_origin(struct dq_trace *t, uint64_t origin_ns);
// A packet arrives; 0 if queued, -1 if the drop-tail limit (or memory) refused it.
int dq_trace_enqueue(struct dq_trace *t, uint32_t id, uint32_t len_bytes, uint64_t seq, uint64_t now_ns);
// Pops the head if its service completed by now_ns; *done_ns gets the completion time.
int dq_trace_pop_done(struct dq_trace *t, uint64_t now_ns, struct dq_pkt *out, uint64_t *done_ns);
// Completion time of the head packet, 0 if nothing waits.
uint64_t dq_trace_next_ns(const struct dq_trace *t);
// When a packet of size_bytes whose service starts at now_ns is fully delivered.
uint64_t dq_trace_serve(struct dq_trace *t, uint64_t now_ns, uint64_t size_bytes);

#endif
