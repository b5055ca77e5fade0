/* measure_fixture.c: what the C tests of the timer's engine share (measure_fixture.h). */
#include "measure_fixture.h"

#include <string.h>

fixture_fns fixture;
double fixture_probe_mhz = 1500;

const gpu_power_reading FIXTURE_HEAVY = {.power_w = 600, .sm_clock_mhz = 1500};
const gpu_power_reading FIXTURE_LIGHT = {.power_w = 300, .sm_clock_mhz = 1500};

gpu_status fixture_clock_probe(const fake_launch *l) {
  unsigned long long *out = FAKE_PTR(l, 0, unsigned long long);
  unsigned window = FAKE_ARG(l, 1, unsigned);
  for (unsigned sm = 0; sm < l->grid[0]; sm++) {
    out[2 * sm] = (unsigned long long)(fixture_probe_mhz * window / 1e3);
    out[2 * sm + 1] = window;
  }
  return GPU_OK;
}

static const fake_kernel kernels[] = {
  {.name = "tb_evict_read", .duration_ns = 700, .nargs = 4, .arg_bytes = {8, 8, 8, 4}},
  {.name = "tb_clock_probe", .run = fixture_clock_probe, .duration_ns = 2000, .nargs = 2, .arg_bytes = {8, 4}},
  {.name = "gemm", .duration_ns = 1000000},
  {.name = "gemm_b", .duration_ns = 500000},
  {.name = "light", .duration_ns = 50000},
  {.name = "long", .duration_ns = 20000000},
  {NULL},
};

static measure_cache cache;
static gpu_device_props props;

static gpu_status run_fn(void *self, gpu_stream s) {
  unsigned one[3] = {1, 1, 1};
  return fake_backend()->launch((gpu_function *)self, one, one, 0, s, NULL);
}

measure_env fixture_setup(gpu_power_reading rd, int busy_polls) {
  measure_cache_free(&cache, NULL);
  fake_reset();
  props = fake.props;
  fixture_probe_mhz = 1500;
  const gpu_backend *g = fake_backend();
  gpu_module *m = NULL;
  fixture_fns *f = &fixture;
  g->module_load_image(&m, kernels, 0);
  g->function_get(&f->evict, m, "tb_evict_read");
  g->function_get(&f->probe, m, "tb_clock_probe");
  g->function_get(&f->gemm, m, "gemm");
  g->function_get(&f->gemm_b, m, "gemm_b");
  g->function_get(&f->light, m, "light");
  g->function_get(&f->long_, m, "long");
  gpu_stream s = NULL;
  g->stream_create(&s);
  fake.power_reading = rd;
  fake.busy_polls = busy_polls;
  measure_env env = {.gpu = g, .props = &props, .stream = s, .buffer_sync_timeout_s = 1, .cache = &cache,
                     .kernels = {f->evict, NULL, f->probe}, .work = {run_fn, f->gemm, 1}};
  return env;
}

measure_opts fixture_opts(void) {
  measure_opts o = measure_default_opts;
  o.min_time = 0.002;
  o.timeout = 10;
  o.graph = 0;
  o.throttle_threshold = 0;
  o.heavy_power = 0.6;
  o.heavy_gap_s = 1;
  return o;
}

void fixture_by_kernel(uint64_t nth, gpu_power_reading *out, void *user) {
  (void)nth, (void)user;
  const char *last = NULL;
  for (size_t i = fake.n_ops; i-- > 0 && last == NULL;)
    if (fake.ops[i].kind == FAKE_OP_KERNEL && strncmp(fake.ops[i].kernel, "tb_", 3) != 0) last = fake.ops[i].kernel;
  *out = last && strcmp(last, "light") == 0 ? FIXTURE_LIGHT : FIXTURE_HEAVY;
}

void fixture_done(void) {
  measure_cache_free(&cache, NULL);
  fake_reset();
}
