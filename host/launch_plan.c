/* launch_plan.c: the launch plan core of launch_plan.h. A kernel step keeps its argument pointers
 * and the packed bytes they point into in one allocation, ready for gpu_backend.launch. */
#include "launch_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_step {
  int native;
  int copy;                 /* a driver copy (native too): dst <- src, bytes */
  gpu_ptr dst, src;
  size_t bytes;
  launch_plan_call_fn run;  /* native: the library's entry point and its object */
  void *self;
  gpu_function *fn;         /* kernel: function, geometry, packed arguments */
  unsigned grid[3], block[3], smem;
  int nargs;
  void **argv;              /* argv[i] points into the packed bytes that follow argv */
  char name[128];
} plan_step;

struct launch_plan {
  int nsteps, max_steps;
  plan_step *steps;
};

launch_plan *launch_plan_new(int max_steps) {
  if (max_steps < 1) max_steps = 1;
  launch_plan *p = calloc(1, sizeof *p);
  if (p && (p->steps = calloc((size_t)max_steps, sizeof *p->steps)) == NULL) {
    free(p);
    p = NULL;
  }
  if (p) p->max_steps = max_steps;
  return p;
}

static plan_step *next_step(launch_plan *p, const char *name) {
  if (p->nsteps == p->max_steps) return NULL;
  plan_step *st = &p->steps[p->nsteps];
  memset(st, 0, sizeof *st);
  snprintf(st->name, sizeof st->name, "%s", name ? name : "?");
  return st;
}

gpu_status launch_plan_add_kernel(launch_plan *p, gpu_function *fn, const char *name, const unsigned grid[3],
                                  const unsigned block[3], unsigned smem, const void *slots, int nargs) {
  if (nargs < 0 || nargs > LAUNCH_PLAN_MAX_ARGS || (nargs > 0 && slots == NULL))
    return gpu_set_error(GPU_ERR_INVALID, "launch plan: %d arguments (at most %d)", nargs, LAUNCH_PLAN_MAX_ARGS);
  plan_step *st = next_step(p, name);
  if (st == NULL) return gpu_set_error(GPU_ERR_INVALID, "launch plan: more than %d steps", p->max_steps);
  st->argv = calloc(1, (size_t)nargs * (sizeof(void *) + LAUNCH_PLAN_SLOT) + LAUNCH_PLAN_SLOT);
  if (st->argv == NULL) return gpu_set_error(GPU_ERR_OOM, "launch plan: out of host memory");
  unsigned char *bytes = (unsigned char *)(st->argv + nargs);
  if (nargs > 0) memcpy(bytes, slots, (size_t)nargs * LAUNCH_PLAN_SLOT);
  for (int i = 0; i < nargs; i++) st->argv[i] = bytes + LAUNCH_PLAN_SLOT * i;
  st->fn = fn;
  memcpy(st->grid, grid, sizeof st->grid);
  memcpy(st->block, block, sizeof st->block);
  st->smem = smem;
  st->nargs = nargs;
  p->nsteps++;
  return GPU_OK;
}

gpu_status launch_plan_add_call(launch_plan *p, launch_plan_call_fn run, void *self, const char *name) {
  plan_step *st = next_step(p, name);
  if (st == NULL) return gpu_set_error(GPU_ERR_INVALID, "launch plan: more than %d steps", p->max_steps);
  st->native = 1;
  st->run = run;
  st->self = self;
  p->nsteps++;
  return GPU_OK;
}

gpu_status launch_plan_add_copy(launch_plan *p, gpu_ptr dst, gpu_ptr src, size_t bytes, const char *name) {
  plan_step *st = next_step(p, name);
  if (st == NULL) return gpu_set_error(GPU_ERR_INVALID, "launch plan: more than %d steps", p->max_steps);
  st->native = st->copy = 1;
  st->dst = dst, st->src = src, st->bytes = bytes;
  p->nsteps++;
  return GPU_OK;
}

gpu_status launch_plan_run(const launch_plan *p, const gpu_backend *b, gpu_stream s) {
  for (int i = 0; i < p->nsteps; i++) {
    const plan_step *st = &p->steps[i];
    gpu_status r = st->copy     ? b->copy_dtod_async(st->dst, st->src, st->bytes, s)
                   : st->native ? st->run(st->self, s)
                                : b->launch(st->fn, st->grid, st->block, st->smem, s, st->argv);
    if (r != GPU_OK) {
      char why[2048], api[64];
      snprintf(why, sizeof why, "%s", gpu_last_error());
      snprintf(api, sizeof api, "%s", gpu_last_error_api());
      return gpu_set_api_error(r, api, "plan step %d ('%s'): %s", i + 1, st->name, why);
    }
  }
  return GPU_OK;
}

int launch_plan_steps(const launch_plan *p) { return p->nsteps; }
int launch_plan_kernels(const launch_plan *p) { return p->nsteps; }

void launch_plan_step(const launch_plan *p, int i, launch_plan_step_info *out) {
  const plan_step *st = &p->steps[i];
  out->native = st->native;
  out->copy = st->copy;
  out->copy_bytes = st->bytes;
  out->name = st->name;
  memcpy(out->grid, st->grid, sizeof out->grid);
  memcpy(out->block, st->block, sizeof out->block);
  out->smem = st->smem;
  out->nargs = st->nargs;
}

void launch_plan_free(launch_plan *p) {
  if (p == NULL) return;
  for (int i = 0; i < p->nsteps; i++) free(p->steps[i].argv);
  free(p->steps);
  free(p);
}
