/* How often, and for how long, the host takes this CPU away: a loop reading the
 * monotonic clock for 2 s counts the gaps between two reads longer than 2 us, by size.
 * The tail of the latency benches (p99 against p50) comes from these gaps.
 *
 *     cc -O2 -o /tmp/host_gaps benches/host_gaps.c && /tmp/host_gaps
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}

int main(void) {
    const uint64_t edges[] = {5000, 10000, 20000, 40000, 80000, 160000, 1000000};
    const char *names[] = {"2-5", "5-10", "10-20", "20-40", "40-80", "80-160", "160-1000", ">1000"};
    long counts[8] = {0}, gaps = 0;
    double total = 0;
    uint64_t prev = now(), end = prev + 2000000000ull;
    for (uint64_t t = now(); t < end; prev = t, t = now()) {
        uint64_t d = t - prev;
        if (d <= 2000) continue;
        int b = 0;
        while (b < 7 && d >= edges[b]) b++;
        counts[b]++, gaps++, total += d;
    }
    printf("gaps > 2 us in 2 s: %ld (%.0f/s), %.1f ms in all\n", gaps, gaps / 2.0, total / 1e6);
    for (int b = 0; b < 8; b++) printf("  %s us: %ld\n", names[b], counts[b]);
    return 0;
}
