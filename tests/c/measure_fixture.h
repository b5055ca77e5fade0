/* measure_fixture.h: what the C tests of the timer's engine share on the fake backend. The clock
 * probe's fake kernel (test_measure.c, test_power.c and the power tests below use it), and the
 * setup of the power tests (test_preload_scope.c, test_exposure_scope.c): a module with the read
 * eviction, the probe and the works below, a stream, the engine's cache, the fake power source's
 * readings and the options they start from. Linked into tbfake (cmake/tests.cmake). */
#ifndef TB_MEASURE_FIXTURE_H
#define TB_MEASURE_FIXTURE_H

#include "fake_backend.h"
#include "measure/measure.h"

/* The clock probe (host/kernels/clock_probe.cu's arguments): it writes (cycles, ns) per SM so the
 * clock reads fixture_probe_mhz (1500 MHz, the fake device's max, after each fixture_setup). */
extern double fixture_probe_mhz;
gpu_status fixture_clock_probe(const fake_launch *l);

/* The works (a run is one launch of one of them): gemm (1 ms, a heavy load's sample), gemm_b
 * (0.5 ms, another heavy load), light (50 us) and long (20 ms, a heavy load of long kernels). */
typedef struct fixture_fns {
  gpu_function *evict, *probe, *gemm, *gemm_b, *light, *long_;
} fixture_fns;
extern fixture_fns fixture;

/* Readings of the fake's 700 W limit: HEAVY (600 W: heavy at heavy_power 0.6, the level these tests
 * were written around) and LIGHT (300 W). */
extern const gpu_power_reading FIXTURE_HEAVY, FIXTURE_LIGHT;

/* Resets the fake backend and the engine's cache, loads the module; the power source reads rd, and
 * the stream stays busy busy_polls queries after each submission (wall time follows GPU time).
 * The env's work is gemm (set env.work.self to another of fixture's functions). */
measure_env fixture_setup(gpu_power_reading rd, int busy_polls);
/* The default options with what the power tests change: small min_time, eager runs (no graph), no
 * sample dropped for its clock, heavy_power 0.6 (FIXTURE_HEAVY is heavy), a generous heavy_gap_s
 * (a loaded test machine must not break the device's streak), timeout 10 s. */
measure_opts fixture_opts(void);
/* A power_fn for fake.power_fn: each reading is what the last work kernel that ran draws (the fake
 * runs a batch's kernels as they are enqueued, before the host reads): LIGHT after light, else
 * HEAVY. Lets one interleaved group hold heavy and light loads. */
void fixture_by_kernel(uint64_t nth, gpu_power_reading *out, void *user);
/* Frees the cache and resets the fake backend (at the end of a test's main). */
void fixture_done(void);

#endif
