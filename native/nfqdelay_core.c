// nfqdelay_core: release-time computation, holding queues and statistics of the delayer.
// Semantics follow the normalized config (crates/mpsched-sim/src/config.rs, JitterConfig):
// smooth = a jitter sample uniform in [-J, +J] every period, linearly interpolated, and no
// packet leaves before the one ahead of it; reorder = netem's independent per-packet jitter.

#include "nfqdelay_core.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// splitmix64 (Steele, Lea, Flood 2014): small, seedable, good enough for loss/jitter draws.
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

static double normal01(uint64_t *s) {
    // Box-Muller; 1 - u keeps the log argument in (0, 1].
    double u1 = 1.0 - uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void dq_init(struct dq_queue *q, uint16_t qnum, enum dq_mode mode, uint64_t delay_ns,
             uint64_t jitter_ns, uint64_t period_ns, double loss_prob, uint64_t seed) {
    memset(q, 0, sizeof *q);
    q->qnum = qnum;
    q->mode = mode;
    q->dist = DQ_UNIFORM;
    q->delay_ns = delay_ns;
    q->jitter_ns = jitter_ns;
    q->period_ns = period_ns;
    q->loss_prob = loss_prob;
    q->gso = -1;
    // Each queue gets its own stream derived from (seed, queue number).
    q->rng = seed * 0x100000001b3ull ^ ((uint64_t)qnum << 32 | 0x5eedu);
    next_u64(&q->rng);
}

void dq_free(struct dq_queue *q) {
    if (q->trace) {
        dq_trace_free(q->trace);
        free(q->trace);
        q->trace = NULL;
    }
    free(q->buf);
    q->buf = NULL;
    q->cap = q->len = q->head = 0;
}

int dq_parse_spec(struct dq_queue *q, const char *spec, uint64_t seed, char *err, size_t errlen) {
    char copy[256];
    if (strlen(spec) >= sizeof copy) {
        snprintf(err, errlen, "too long");
        return -1;
    }
    strcpy(copy, spec);
    char *save = NULL, *tok = strtok_r(copy, ",", &save);
    char *end;
    long qnum = tok ? strtol(tok, &end, 10) : -1;
    if (!tok || *end || qnum < 0 || qnum > 65535) {
        snprintf(err, errlen, "first field must be the queue number (0-65535)");
        return -1;
    }
    double delay_us = 0, jitter_us = 0, period_us = 0, loss = 0;
    int mode = -1, gso = -1, have_ge = 0;
    const char *trace_path = NULL;
    double tpkt = 1500, tperiod_us = 0, qlimit = 1e18;
    double ge[4] = {0}, ramp[5] = {0}, spike[3] = {0};
    int have_ramp = 0, have_spike = 0;
    enum dq_dist dist = DQ_UNIFORM;
    while ((tok = strtok_r(NULL, ",", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "'%s' is not key=value", tok);
            return -1;
        }
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        double x = strtod(v, &end);
        int numeric = *v && !*end;
        if (!strcmp(k, "delay_us") && numeric && x >= 0) delay_us = x;
        else if (!strcmp(k, "jitter_us") && numeric && x >= 0) jitter_us = x;
        else if (!strcmp(k, "period_us") && numeric && x >= 0) period_us = x;
        else if (!strcmp(k, "loss") && numeric && x >= 0 && x <= 1) loss = x;
        else if (!strcmp(k, "mode") && !strcmp(v, "fifo")) mode = DQ_FIFO;
        else if (!strcmp(k, "mode") && !strcmp(v, "smooth")) mode = DQ_SMOOTH;
        else if (!strcmp(k, "mode") && !strcmp(v, "reorder")) mode = DQ_REORDER;
        else if (!strcmp(k, "dist") && !strcmp(v, "uniform")) dist = DQ_UNIFORM;
        else if (!strcmp(k, "dist") && !strcmp(v, "normal")) dist = DQ_NORMAL;
        else if (!strcmp(k, "gso") && numeric && (x == 0 || x == 1)) gso = (int)x;
        else if (!strcmp(k, "trace") && *v) trace_path = v;
        else if (!strcmp(k, "tpkt") && numeric && x >= 1) tpkt = x;
        else if (!strcmp(k, "tperiod_us") && numeric && x >= 0) tperiod_us = x;
        else if (!strcmp(k, "qlimit") && numeric && x >= 0) qlimit = x;
        else if (!strcmp(k, "ramp") || !strcmp(k, "spike")) {
            // ramp=AT_US:LEN_US:END_US:P0:P1, spike=AT_US:END_US:EXTRA_US (times from the epoch)
            int n = !strcmp(k, "ramp") ? 5 : 3;
            double g[5];
            char *p = (char *)v;
            int ok = 1;
            for (int i = 0; i < n && ok; i++) {
                g[i] = strtod(p, &end);
                ok = end != p && g[i] >= 0 && (i == n - 1 ? *end == 0 : *end == ':');
                p = end + 1;
            }
            if (n == 5) ok = ok && g[3] <= 1 && g[4] <= 1 && g[0] + g[1] <= g[2];
            else ok = ok && g[0] <= g[1];
            if (!ok) {
                snprintf(err, errlen, n == 5 ? "ramp needs AT_US:LEN_US:END_US:P0:P1 (AT + LEN <= END, P in [0, 1])"
                                             : "spike needs AT_US:END_US:EXTRA_US (AT <= END)");
                return -1;
            }
            if (n == 5) {
                have_ramp = 1;
                memcpy(ramp, g, sizeof ramp);
            } else {
                have_spike = 1;
                memcpy(spike, g, sizeof spike);
            }
        }
        else if (!strcmp(k, "ge")) {
            // ge=P_GB:P_BG:LOSS_GOOD:LOSS_BAD
            double g[4];
            char *p = (char *)v;
            int ok = 1;
            for (int i = 0; i < 4 && ok; i++) {
                g[i] = strtod(p, &end);
                ok = end != p && g[i] >= 0 && g[i] <= 1 && (i == 3 ? *end == 0 : *end == ':');
                p = end + 1;
            }
            if (!ok) {
                snprintf(err, errlen, "ge needs four probabilities P_GB:P_BG:LOSS_GOOD:LOSS_BAD");
                return -1;
            }
            memcpy(ge, g, sizeof g);
            have_ge = 1;
        }
        else {
            snprintf(err, errlen, "bad setting %s=%s", k, v);
            return -1;
        }
    }
    if (mode < 0) mode = jitter_us > 0 ? DQ_SMOOTH : DQ_FIFO;
    if (mode == DQ_SMOOTH && jitter_us > 0 && period_us <= 0) {
        snprintf(err, errlen, "smooth jitter needs period_us > 0");
        return -1;
    }
    dq_init(q, (uint16_t)qnum, (enum dq_mode)mode, (uint64_t)llround(delay_us * 1e3),
            (uint64_t)llround(jitter_us * 1e3), (uint64_t)llround(period_us * 1e3), loss, seed);
    q->dist = dist;
    q->gso = gso;
    if (trace_path) {
        if (q->mode == DQ_REORDER) {
            snprintf(err, errlen, "a trace bottleneck needs a FIFO mode (fifo or smooth)");
            return -1;
        }
        // trace_path points into `copy` (on the stack): load now.
        q->trace = calloc(1, sizeof *q->trace);
        if (!q->trace || dq_trace_load(q->trace, trace_path, (uint64_t)llround(tperiod_us * 1e3), (uint64_t)tpkt,
                                       (uint64_t)qlimit, 0, err, errlen) < 0) {
            free(q->trace);
            q->trace = NULL;
            return -1;
        }
    }
    if (have_ramp) {
        q->has_ramp = 1;
        q->ramp_at_ns = (uint64_t)llround(ramp[0] * 1e3);
        q->ramp_len_ns = (uint64_t)llround(ramp[1] * 1e3);
        q->ramp_end_ns = (uint64_t)llround(ramp[2] * 1e3);
        q->ramp_p0 = ramp[3];
        q->ramp_p1 = ramp[4];
    }
    if (have_spike) {
        q->has_spike = 1;
        q->spike_at_ns = (uint64_t)llround(spike[0] * 1e3);
        q->spike_end_ns = (uint64_t)llround(spike[1] * 1e3);
        q->spike_extra_ns = (uint64_t)llround(spike[2] * 1e3);
    }
    if (have_ge) {
        q->ge = 1;
        q->ge_p_gb = ge[0];
        q->ge_p_bg = ge[1];
        q->ge_loss_good = ge[2];
        q->ge_loss_bad = ge[3];
    }
    return 0;
}

static double jitter_sample(struct dq_queue *q) {
    double j = (double)q->jitter_ns;
    if (q->dist == DQ_NORMAL) return normal01(&q->rng) * j;
    return (2.0 * uniform01(&q->rng) - 1.0) * j;
}

// Time since the epoch, or -1 before it is known (or before it).
static int64_t since_epoch(const struct dq_queue *q, uint64_t now_ns) {
    return q->ev_origin_ns && now_ns >= q->ev_origin_ns ? (int64_t)(now_ns - q->ev_origin_ns) : -1;
}

double dq_event_loss(const struct dq_queue *q, uint64_t now_ns) {
    int64_t t = since_epoch(q, now_ns);
    if (!q->has_ramp || t < 0 || (uint64_t)t < q->ramp_at_ns || (uint64_t)t >= q->ramp_end_ns) return 0;
    uint64_t in = (uint64_t)t - q->ramp_at_ns;
    if (in >= q->ramp_len_ns) return q->ramp_p1;
    return q->ramp_p0 + (q->ramp_p1 - q->ramp_p0) * (double)in / (double)q->ramp_len_ns;
}

uint64_t dq_event_delay_ns(const struct dq_queue *q, uint64_t now_ns) {
    int64_t t = since_epoch(q, now_ns);
    if (!q->has_spike || t < 0 || (uint64_t)t < q->spike_at_ns || (uint64_t)t >= q->spike_end_ns) return 0;
    return q->spike_extra_ns;
}

static uint64_t jittered_delay(struct dq_queue *q, uint64_t now_ns);

uint64_t dq_delay_at(struct dq_queue *q, uint64_t now_ns) {
    return jittered_delay(q, now_ns) + dq_event_delay_ns(q, now_ns);
}

static uint64_t jittered_delay(struct dq_queue *q, uint64_t now_ns) {
    if (q->jitter_ns == 0 || q->mode == DQ_FIFO) return q->delay_ns;
    double j;
    if (q->mode == DQ_REORDER) {
        j = jitter_sample(q);
    } else {
        if (!q->smooth_started) {
            q->smooth_started = 1;
            q->origin_ns = now_ns;
            q->seg_index = 0;
            q->seg_j0_ns = jitter_sample(q);
            q->seg_j1_ns = jitter_sample(q);
        }
        uint64_t since = now_ns > q->origin_ns ? now_ns - q->origin_ns : 0;
        uint64_t seg = since / q->period_ns;
        if (seg == q->seg_index + 1) {
            q->seg_j0_ns = q->seg_j1_ns;
            q->seg_j1_ns = jitter_sample(q);
        } else if (seg > q->seg_index + 1) {
            // Idle for more than a period: the interpolation restarts from fresh samples.
            q->seg_j0_ns = jitter_sample(q);
            q->seg_j1_ns = jitter_sample(q);
        }
        q->seg_index = seg;
        double frac = (double)(since - seg * q->period_ns) / (double)q->period_ns;
        j = q->seg_j0_ns + (q->seg_j1_ns - q->seg_j0_ns) * frac;
    }
    double d = (double)q->delay_ns + j;
    return d <= 0 ? 0 : (uint64_t)d;
}

static int before(const struct dq_pkt *a, const struct dq_pkt *b) {
    return a->target_ns < b->target_ns || (a->target_ns == b->target_ns && a->seq < b->seq);
}

static int grow(struct dq_queue *q) {
    size_t ncap = q->cap ? q->cap * 2 : 4096;
    struct dq_pkt *nb = malloc(ncap * sizeof *nb);
    if (!nb) return -1;
    for (size_t i = 0; i < q->len; i++) {
        size_t at = q->mode == DQ_REORDER ? i : (q->head + i) % q->cap;
        nb[i] = q->buf[at];
    }
    free(q->buf);
    q->buf = nb;
    q->cap = ncap;
    q->head = 0;
    return 0;
}

// Appends to the FIFO ring; a packet never leaves before the one ahead of it.
static void push_fifo(struct dq_queue *q, struct dq_pkt p) {
    if (p.target_ns < q->last_target_ns) p.target_ns = q->last_target_ns;
    q->last_target_ns = p.target_ns;
    q->buf[(q->head + q->len) % q->cap] = p;
    q->len++;
}

static int lose(struct dq_queue *q, uint64_t now_ns) {
    double p = q->loss_prob;
    if (q->ge) {
        double u = uniform01(&q->rng);
        if (q->ge_bad ? u < q->ge_p_bg : u < q->ge_p_gb) q->ge_bad = !q->ge_bad;
        p = q->ge_bad ? q->ge_loss_bad : q->ge_loss_good;
    }
    if (p > 0 && uniform01(&q->rng) < p) return 1;
    // A loss ramp draws after the loss model, and only while it is in force (as the simulator).
    double e = dq_event_loss(q, now_ns);
    return e > 0 && uniform01(&q->rng) < e;
}

enum dq_verdict dq_arrive(struct dq_queue *q, uint32_t id, uint32_t len_bytes, uint64_t now_ns) {
    q->packets++;
    q->bytes += len_bytes;
    if (lose(q, now_ns)) {
        q->lost++;
        q->lost_bytes += len_bytes;
        return DQ_DROP;
    }
    if (q->len == q->cap && grow(q) < 0) {
        // Out of memory: losing the packet is the only safe answer.
        q->lost++;
        q->lost_bytes += len_bytes;
        return DQ_DROP;
    }
    struct dq_pkt p = {.id = id, .len_bytes = len_bytes, .seq = q->next_seq++};
    if (q->trace) {
        // Through the bottleneck first; dq_pop_due moves it on to the delay when served.
        if (dq_trace_enqueue(q->trace, id, len_bytes, p.seq, now_ns) < 0) return DQ_DROP;
        return DQ_HOLD;
    }
    p.target_ns = now_ns + dq_delay_at(q, now_ns);
    if (q->mode == DQ_REORDER) {
        size_t i = q->len++;
        while (i > 0 && before(&p, &q->buf[(i - 1) / 2])) {
            q->buf[i] = q->buf[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        q->buf[i] = p;
    } else {
        push_fifo(q, p);
    }
    if (q->len > q->max_occupancy) q->max_occupancy = q->len;
    return DQ_HOLD;
}

uint64_t dq_next_target(const struct dq_queue *q) {
    uint64_t t = 0;
    if (q->len) t = q->mode == DQ_REORDER ? q->buf[0].target_ns : q->buf[q->head].target_ns;
    uint64_t served = q->trace ? dq_trace_next_ns(q->trace) : 0;
    if (served && (!t || served < t)) t = served;
    return t;
}

size_t dq_hist_index(uint64_t ns) {
    if (ns < 1024) return 0;
    int msb = 63 - __builtin_clzll(ns);
    size_t sub = (size_t)(ns >> (msb - 2)) & 3;
    size_t idx = 1 + (size_t)(msb - 10) * 4 + sub;
    return idx < DQ_HIST_BUCKETS ? idx : DQ_HIST_BUCKETS - 1;
}

uint64_t dq_hist_upper_ns(size_t index) {
    if (index == 0) return 1024;
    size_t msb = (index - 1) / 4 + 10, sub = (index - 1) % 4;
    return (uint64_t)(4 + sub + 1) << (msb - 2);
}

static void add_late(struct dq_late *l, uint64_t late_ns) {
    l->hist[dq_hist_index(late_ns)]++;
    l->sum_ns += late_ns;
    if (late_ns > l->max_ns) l->max_ns = late_ns;
}

void dq_note_sleep(struct dq_queue *q, uint64_t asleep_from_ns, uint64_t woke_ns) {
    q->asleep_from_ns = asleep_from_ns;
    q->woke_ns = woke_ns;
}

static void record_lateness(struct dq_queue *q, uint64_t now_ns, uint64_t target_ns) {
    uint64_t late_ns = now_ns - target_ns;
    uint64_t due_asleep_ns = target_ns > q->asleep_from_ns ? target_ns : q->asleep_from_ns;
    uint64_t host_ns = q->woke_ns > due_asleep_ns ? q->woke_ns - due_asleep_ns : 0;
    if (host_ns > late_ns) host_ns = late_ns; // a sleep window from before this release's clock
    add_late(&q->late, late_ns);
    add_late(&q->host_late, host_ns);
    add_late(&q->own_late, late_ns - host_ns);
}

int dq_pop_due(struct dq_queue *q, uint64_t now_ns, struct dq_pkt *out) {
    if (q->trace) {
        // Packets the bottleneck has delivered start their propagation delay then.
        struct dq_pkt p;
        uint64_t done;
        while (dq_trace_pop_done(q->trace, now_ns, &p, &done)) {
            if (q->len == q->cap && grow(q) < 0) {
                q->lost++;
                continue;
            }
            p.target_ns = done + dq_delay_at(q, done);
            push_fifo(q, p);
            if (q->len > q->max_occupancy) q->max_occupancy = q->len;
        }
    }
    if (q->len == 0) return 0;
    if (q->mode == DQ_REORDER) {
        if (q->buf[0].target_ns > now_ns) return 0;
        *out = q->buf[0];
        struct dq_pkt last = q->buf[--q->len];
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, m = i;
            const struct dq_pkt *best = &last;
            if (l < q->len && before(&q->buf[l], best)) m = l, best = &q->buf[l];
            if (r < q->len && before(&q->buf[r], best)) m = r;
            if (m == i) break;
            q->buf[i] = q->buf[m];
            i = m;
        }
        if (q->len) q->buf[i] = last;
    } else {
        if (q->buf[q->head].target_ns > now_ns) return 0;
        *out = q->buf[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    q->released++;
    // release_all passes UINT64_MAX: those are not timed releases, keep them out of the stats
    if (now_ns != UINT64_MAX) record_lateness(q, now_ns, out->target_ns);
    return 1;
}

uint64_t dq_late_percentile_ns(const struct dq_late *l, double pct) {
    uint64_t total = 0;
    for (size_t i = 0; i < DQ_HIST_BUCKETS; i++) total += l->hist[i];
    if (total == 0) return 0;
    uint64_t rank = (uint64_t)ceil(pct / 100.0 * (double)total);
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < DQ_HIST_BUCKETS; i++) {
        seen += l->hist[i];
        if (seen >= rank) {
            uint64_t up = dq_hist_upper_ns(i);
            return up < l->max_ns ? up : l->max_ns;
        }
    }
    return l->max_ns;
}

// {"mean": .., "p50": .., "p90": .., "p99": .., "p999": .., "max": ..} of one distribution.
static void write_late(FILE *out, const struct dq_late *l) {
    uint64_t n = 0;
    for (size_t i = 0; i < DQ_HIST_BUCKETS; i++) n += l->hist[i];
    fprintf(out,
            "{\"mean\": %" PRIu64 ", \"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
            ", \"p999\": %" PRIu64 ", \"max\": %" PRIu64 "}",
            n ? l->sum_ns / n : 0, dq_late_percentile_ns(l, 50), dq_late_percentile_ns(l, 90),
            dq_late_percentile_ns(l, 99), dq_late_percentile_ns(l, 99.9), l->max_ns);
}

void dq_write_stats(FILE *out, const struct dq_queue *qs, int n, uint64_t enobufs,
                    uint64_t send_errors) {
    static const char *modes[] = {"fifo", "smooth", "reorder"};
    fprintf(out, "{\"enobufs\": %" PRIu64 ", \"send_errors\": %" PRIu64 ", \"queues\": [",
            enobufs, send_errors);
    for (int k = 0; k < n; k++) {
        const struct dq_queue *q = &qs[k];
        fprintf(out,
                "%s\n {\"qnum\": %u, \"mode\": \"%s\", \"delay_ns\": %" PRIu64
                ", \"jitter_ns\": %" PRIu64 ", \"loss\": %g, \"packets\": %" PRIu64
                ", \"bytes\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_bytes\": %" PRIu64
                ", \"released\": %" PRIu64 ", \"max_occupancy\": %" PRIu64
                ", \"queue_drops\": %" PRIu64 ", \"queue_max_bytes\": %" PRIu64 ", \"lateness_ns\": ",
                k ? "," : "", q->qnum, modes[q->mode], q->delay_ns, q->jitter_ns, q->loss_prob,
                q->packets, q->bytes, q->lost, q->lost_bytes, q->released, q->max_occupancy,
                q->trace ? q->trace->drops : 0, q->trace ? q->trace->max_bytes : 0);
        write_late(out, &q->late);
        fprintf(out, ", \"host_lateness_ns\": ");
        write_late(out, &q->host_late);
        fprintf(out, ", \"own_lateness_ns\": ");
        write_late(out, &q->own_late);
        fprintf(out, ", \"hist\": [");
        int first = 1;
        for (size_t i = 0; i < DQ_HIST_BUCKETS; i++) {
            if (!q->late.hist[i]) continue;
            fprintf(out, "%s[%" PRIu64 ", %" PRIu64 "]", first ? "" : ", ", dq_hist_upper_ns(i),
                    q->late.hist[i]);
            first = 0;
        }
        fprintf(out, "]}");
    }
    fprintf(out, "\n]}\n");
}
