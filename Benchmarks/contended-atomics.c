// Cost of an atomic increment and decrement (a retain and release pair, as Swift makes for
// every reference it copies) on a cache line that another core also writes, against the same
// on a line of its own, with FILLER steps of dependent arithmetic between them:
//   cc -O2 -pthread -o /tmp/contended-atomics Benchmarks/contended-atomics.c
//   /tmp/contended-atomics [ITERATIONS] [FILLER] [CPU_A] [CPU_B]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { _Alignas(64) _Atomic long count; char pad[56]; } line_t;
static line_t shared_line, own_lines[64];
static int iterations, filler, use_shared;
static _Atomic int ready;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void *worker(void *arg) {
    long cpu = (long)arg;
    cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpu, &set); pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    _Atomic long *target = use_shared ? &shared_line.count : &own_lines[cpu].count;
    volatile uint64_t sink = 0; uint64_t x = cpu + 1;
    atomic_fetch_add(&ready, 1); while (atomic_load(&ready) < 2) {}
    double start = now();
    for (int i = 0; i < iterations; i++) {
        atomic_fetch_add_explicit(target, 1, memory_order_relaxed);
        for (int k = 0; k < filler; k++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
        atomic_fetch_sub_explicit(target, 1, memory_order_acq_rel);
        for (int k = 0; k < filler; k++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    }
    sink = x;
    double *elapsed = malloc(sizeof *elapsed); *elapsed = now() - start; (void)sink;
    return elapsed;
}

int main(int argc, char **argv) {
    iterations = argc > 1 ? atoi(argv[1]) : 2000000;
    filler = argc > 2 ? atoi(argv[2]) : 100;
    int cpu_a = argc > 3 ? atoi(argv[3]) : 0, cpu_b = argc > 4 ? atoi(argv[4]) : 1;
    for (use_shared = 0; use_shared <= 1; use_shared++) {
        pthread_t a, b; ready = 0;
        pthread_create(&a, 0, worker, (void *)(long)cpu_a); pthread_create(&b, 0, worker, (void *)(long)cpu_b);
        double *ea, *eb; pthread_join(a, (void **)&ea); pthread_join(b, (void **)&eb);
        printf("%s line: %.1f ns per pair (with %d filler steps twice)\n", use_shared ? "shared" : "own   ",
               (*ea + *eb) / 2 / iterations * 1e9, filler);
    }
    return 0;
}
