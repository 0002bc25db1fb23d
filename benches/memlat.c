/* benches/memlat.c: the host's load latency now, beside a scale-bench timing.
 *
 *   cc -O2 -o /tmp/memlat benches/memlat.c && /tmp/memlat [MILLION_LOADS]
 *
 * prints one line: ns a dependent load when chasing pointers through a random cycle of cache
 * lines in a 1 MiB, 8 MiB and 128 MiB buffer (L2-sized, inside the 32 MiB L3, far beyond it).
 * The scale rows that outgrow the caches (10 000 flows, FatTree k=16) move with the last two
 * while the small rows do not: on a host whose L3 and memory are shared with other guests, run
 * it in the same minutes as a timing to say which memory the ratios were measured against
 * (benches/RESULTS.md, Session 19 lead). Each buffer's cycle is the same every run (fixed seed).
 * MILLION_LOADS (default 20) sets the loads timed per buffer: benches/scale_ratio.py uses 2, a
 * probe of about a second, so that it reads the minute of the row it stands beside.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LINE 64

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void) {
    /* xorshift64: a fixed, portable sequence */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ns a load over a random cycle through `bytes` of lines, `loads` dependent loads. */
static double chase_ns(size_t bytes, size_t loads) {
    size_t lines = bytes / LINE;
    char *buf = aligned_alloc(LINE, lines * LINE);
    size_t *order = malloc(lines * sizeof *order);
    if (!buf || !order) {
        fprintf(stderr, "memlat: cannot allocate %zu bytes\n", bytes);
        exit(2);
    }
    for (size_t i = 0; i < lines; i++) order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) { /* Fisher-Yates: one cycle in a random order */
        size_t j = next_random() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(char **)(buf + order[i] * LINE) = buf + order[(i + 1) % lines] * LINE;
    char *p = buf + order[0] * LINE;
    for (size_t i = 0; i < lines; i++) p = *(char **)p; /* touch every line once */
    double start = now_s();
    for (size_t i = 0; i < loads; i++) p = *(char **)p;
    double ns = (now_s() - start) / loads * 1e9;
    if (p == NULL) puts(""); /* keeps the chase from being optimised away */
    free(order);
    free(buf);
    return ns;
}

int main(int argc, char **argv) {
    char *end = "";
    long million = argc > 1 ? strtol(argv[1], &end, 10) : 20;
    if (argc > 2 || *end != '\0' || million < 1 || million > 1000) {
        fprintf(stderr, "memlat: the one argument, MILLION_LOADS, is a whole number from 1 to 1000\n");
        return 2;
    }
    size_t loads = (size_t)million << 20;
    double l2 = chase_ns(1u << 20, loads);
    double l3 = chase_ns(8u << 20, loads);
    double dram = chase_ns(128u << 20, loads);
    printf("load latency ns: 1 MiB %.1f, 8 MiB %.1f, 128 MiB %.1f\n", l2, l3, dram);
    return 0;
}
