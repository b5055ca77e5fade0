/* launch_plan.h: a launch plan's core: an immutable list of steps (kernel launches with their
 * arguments packed once, or calls into a library such as the vendor BLAS) that the timer and the
 * verifier replay with no set-up and no Lua in between. Plain C on gpu.h: tb_launch.c builds plans
 * from Lua tables; the C unit tests build them directly and run them on the fake backend. */
#ifndef TB_LAUNCH_PLAN_H
#define TB_LAUNCH_PLAN_H

#include "gpu/gpu.h"

#define LAUNCH_PLAN_MAX_ARGS 64
#define LAUNCH_PLAN_SLOT 8 /* bytes per packed argument: every kernel parameter kind fits */

/* A library call step: enqueues its work on s (asynchronously), e.g. blas_matmul_run. */
typedef gpu_status (*launch_plan_call_fn)(void *self, gpu_stream s);

typedef struct launch_plan launch_plan;

typedef struct launch_plan_step_info {
  int native;        /* 1: a library call or a copy; 0: a kernel launch */
  int copy;          /* 1: a device-to-device copy by the driver (native is 1 too) */
  size_t copy_bytes;
  const char *name;  /* the kernel's name, or the library object's */
  unsigned grid[3], block[3], smem;
  int nargs;
} launch_plan_step_info;

/* An empty plan with room for max_steps steps; NULL when host memory is short. */
launch_plan *launch_plan_new(int max_steps);
/* Appends a launch of fn with nargs arguments packed in slots[i * LAUNCH_PLAN_SLOT] (each value
 * at the start of its slot, as the kernel's parameter type lays it out); the plan copies them. */
gpu_status launch_plan_add_kernel(launch_plan *p, gpu_function *fn, const char *name, const unsigned grid[3],
                                  const unsigned block[3], unsigned smem, const void *slots, int nargs);
gpu_status launch_plan_add_call(launch_plan *p, launch_plan_call_fn run, void *self, const char *name);
/* Appends the driver's device-to-device copy of bytes from src to dst (gpu_backend.copy_dtod_async:
 * what `tilebench peaks` measures as the driver's copy rate beside its own kernels'). */
gpu_status launch_plan_add_copy(launch_plan *p, gpu_ptr dst, gpu_ptr src, size_t bytes, const char *name);
/* Enqueues every step on s in order (asynchronously). A failing step stops the run with
 * "plan step <i> ('<name>'): <the backend's message>". */
gpu_status launch_plan_run(const launch_plan *p, const gpu_backend *b, gpu_stream s);
int launch_plan_steps(const launch_plan *p);
int launch_plan_kernels(const launch_plan *p); /* launches per run (a library call counts 1) */
void launch_plan_step(const launch_plan *p, int i, launch_plan_step_info *out); /* 0-based */
void launch_plan_free(launch_plan *p); /* NULL is fine */

#endif
