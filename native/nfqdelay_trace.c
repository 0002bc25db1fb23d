// nfqdelay_trace: trace-driven bottleneck (see nfqdelay_trace.h).

#include "nfqdelay_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfqdelay_core.h"

#define NS_PER_MS 1000000ull

int dq_trace_load(struct dq_trace *t, const char *path, uint64_t period_ns, uint64_t packet_bytes,
                  uint64_t limit_bytes, uint64_t now_ns, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "trace %s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1024;
    t->opportunities_ns = malloc(cap * sizeof *t->opportunities_ns);
    unsigned long long ms, prev = 0;
    while (t->opportunities_ns && fscanf(f, "%llu", &ms) == 1) {
        if (ms < prev) {
            snprintf(err, errlen, "trace %s: timestamps must not decrease (%llu after %llu)", path, ms, prev);
            fclose(f);
            dq_trace_free(t);
            return -1;
        }
        prev = ms;
        if (t->n == cap) {
            cap *= 2;
            uint64_t *nb = realloc(t->opportunities_ns, cap * sizeof *nb);
            if (!nb) break;
            t->opportunities_ns = nb;
        }
        t->opportunities_ns[t->n++] = (uint64_t)ms * NS_PER_MS;
    }
    fclose(f);
    if (t->n == 0 || packet_bytes == 0) {
        snprintf(err, errlen, "trace %s: no opportunities (or packet bytes 0)", path);
        dq_trace_free(t);
        return -1;
    }
    uint64_t last = t->opportunities_ns[t->n - 1];
    t->period_ns = period_ns ? period_ns : (last ? last : NS_PER_MS);
    t->packet_bytes = packet_bytes;
    t->limit_bytes = limit_bytes;
    t->anchor_ns = now_ns;
    return 0;
}

void dq_trace_free(struct dq_trace *t) {
    free(t->opportunities_ns);
    free(t->buf);
    memset(t, 0, sizeof *t);
}

void dq_trace_set_origin(struct dq_trace *t, uint64_t origin_ns) {
    // Offset 0 at origin_ns: the anchor becomes the earliest lap start (origin minus whole
    // periods) not before the old anchor, so it never underflows. Packets served before the
    // origin (the warm-up) just see the trace's phase shift once.
    uint64_t back = origin_ns > t->anchor_ns ? (origin_ns - t->anchor_ns) / t->period_ns : 0;
    t->anchor_ns = origin_ns - back * t->period_ns;
    t->next_k = 0;
    t->credit_at_ns = t->credit_bytes = 0;
}

static uint64_t at(const struct dq_trace *t, uint64_t k) {
    return t->anchor_ns + (k / t->n) * t->period_ns + t->opportunities_ns[k % t->n];
}

uint64_t dq_trace_serve(struct dq_trace *t, uint64_t now_ns, uint64_t size_bytes) {
    uint64_t need = size_bytes;
    if (t->credit_at_ns == now_ns && t->credit_bytes > 0) {
        uint64_t take = need < t->credit_bytes ? need : t->credit_bytes;
        t->credit_bytes -= take;
        need -= take;
        if (need == 0) return now_ns;
    }
    if (now_ns > t->anchor_ns && at(t, t->next_k) < now_ns) {
        // Opportunities that went by with nothing queued are wasted: jump to the first at or
        // after now.
        uint64_t rel = now_ns - t->anchor_ns, lap = rel / t->period_ns, off = rel - lap * t->period_ns;
        size_t lo = 0, hi = t->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (t->opportunities_ns[mid] < off) lo = mid + 1;
            else hi = mid;
        }
        uint64_t k = lap * t->n + lo;
        if (k > t->next_k) t->next_k = k;
    }
    for (;;) {
        uint64_t when = at(t, t->next_k++);
        if (t->packet_bytes >= need) {
            t->credit_at_ns = when;
            t->credit_bytes = t->packet_bytes - need;
            return when;
        }
        need -= t->packet_bytes;
    }
}

int dq_trace_enqueue(struct dq_trace *t, uint32_t id, uint32_t len_bytes, uint64_t seq, uint64_t now_ns) {
    if (t->bytes + len_bytes > t->limit_bytes) {
        t->drops++;
        return -1;
    }
    if (t->len == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        struct dq_pkt *nb = malloc(ncap * sizeof *nb);
        if (!nb) {
            t->drops++;
            return -1;
        }
        for (size_t i = 0; i < t->len; i++) nb[i] = t->buf[(t->head + i) % t->cap];
        free(t->buf);
        t->buf = nb;
        t->cap = ncap;
        t->head = 0;
    }
    struct dq_pkt p = {.id = id, .len_bytes = len_bytes, .target_ns = now_ns, .seq = seq};
    t->buf[(t->head + t->len) % t->cap] = p;
    t->len++;
    t->bytes += len_bytes;
    if (t->bytes > t->max_bytes) t->max_bytes = t->bytes;
    // An arrival into an empty queue starts service at once.
    if (t->len == 1) t->head_done_ns = dq_trace_serve(t, now_ns, len_bytes);
    return 0;
}

uint64_t dq_trace_next_ns(const struct dq_trace *t) { return t->len ? t->head_done_ns : 0; }

int dq_trace_pop_done(struct dq_trace *t, uint64_t now_ns, struct dq_pkt *out, uint64_t *done_ns) {
    if (t->len == 0 || t->head_done_ns > now_ns) return 0;
    *out = t->buf[t->head];
    *done_ns = t->head_done_ns;
    t->head = (t->head + 1) % t->cap;
    t->len--;
    t->bytes -= out->len_bytes;
    if (t->len) {
        // The next packet's service starts when this one is done, or when it arrived if later.
        const struct dq_pkt *n = &t->buf[t->head];
        uint64_t start = n->target_ns > *done_ns ? n->target_ns : *done_ns;
        t->head_done_ns = dq_trace_serve(t, start, n->len_bytes);
    }
    return 1;
}
