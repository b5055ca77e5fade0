/* cupti.h: kernel durations from CUPTI activity records, grouped by an external correlation id
 * the caller pushes around its launches, so one run of a multi-kernel plan sums as one unit.
 * libcupti is opened with dlopen; no Lua here. CUPTI is process-wide, so this is a singleton.
 * Internal to the CUDA backend: everything else reaches it as gpu_backend.timestamps (gpu.h). */
#ifndef TB_GPU_CUPTI_H
#define TB_GPU_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

/* Loads libcupti ($TILEBENCH_CUPTI_LIB if set, else libcupti.so.13/.12/.so by gpu_dlopen_first,
 * else the toolkit's extras/CUPTI), registers the buffer callbacks and enables kernel, external
 * correlation and launch-API records. Idempotent: later calls return the first outcome.
 * GPU_ERR_NO_LIBRARY when libcupti is absent; GPU_ERR_BUSY when another profiler holds CUPTI
 * (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED under ncu / nsys); the message says which. */
gpu_status cupti_start(void);
/* Where libcupti was found ("" before a successful cupti_start). */
const char *cupti_library_path(void);

/* Every launch API call between push and pop is tagged with id (CUSTOM0 external correlation). */
gpu_status cupti_push(uint64_t id);
gpu_status cupti_pop(void);

/* Traces every driver and runtime API call instead of the launch calls alone; the fallback for
 * a CUPTI that tags no launch when only those are enabled. */
gpu_status cupti_trace_all_api(void);

/* Delivers every buffered record (a forced flush). Synchronize the streams first. */
gpu_status cupti_flush(void);
/* Delivers the records of finished work: a plain flush, and a forced one only when no complete
 * kernel record tagged last_id (the last launch waited for) came with it. Synchronize first. */
gpu_status cupti_flush_until(uint64_t last_id);
/* How many plain and forced flushes this process has made (diagnostics). */
void cupti_flush_counts(unsigned long *plain, unsigned long *forced);

/* For each id in [first_id, first_id + n): the time (ns) covered by the kernels launched under it
 * (the union of their intervals: a kernel's part that overlaps the ones before it is not counted
 * twice, tb_clip_next), how many there were, and how many had no complete timestamps. Forgets every record
 * gathered so far (call after cupti_flush). GPU_ERR_OTHER when CUPTI dropped records. */
gpu_status cupti_collect(uint64_t first_id, size_t n, double *kernel_ns, int *kernels,
                         int *incomplete);
/* Kernels whose function name starts with prefix are markers (the timer's eviction kernels,
 * which open each sample of a graph group). Applies to records kept from then on. */
void cupti_set_marker(const char *prefix);

/* For graph launches tagged first_id .. first_id + groups - 1, each holding `per` samples laid out
 * as [marker kernels, other kernels] in stream order: for sample j = g * per + s (j < N = groups
 * * per) the time the other kernels cover (ns; each launch's kernels as the union of their
 * intervals) in kernel_ns[j], their count in kernels[j], and
 * the markers' in kernel_ns[N + j], kernels[N + j]. A launch whose records do not split into `per`
 * samples, or lack timestamps, marks each of its samples incomplete (incomplete[j] = 1). Forgets
 * every record gathered so far. Arrays hold 2 * N entries. */
gpu_status cupti_collect_groups(uint64_t first_id, size_t groups, size_t per, double *kernel_ns, int *kernels,
                                int *incomplete);

/* Forgets every record gathered so far. */
void cupti_discard(void);

/* The functions above as the CUDA backend's gpu_timestamps table. */
extern const gpu_timestamps gpu_cupti_timestamps;

/* Kernel time (ns) the collects of this process removed as overlap with the kernel before. */
double cupti_clipped_ns(void);

#endif
