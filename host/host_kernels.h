/* host_kernels.h: the host's own kernels (host/kernels/: random and pattern fill, compare,
 * eviction, clock probe, peaks; their shared tb_host.cuh), embedded in the binary at build time and compiled by the backend's compiler
 * (rtc_compile, cached on disk) for the device in use on first use. Plain C: no Lua, so the
 * verification and timer engines and their C unit tests use them directly. */
#ifndef TB_HOST_KERNELS_H
#define TB_HOST_KERNELS_H

#include <stddef.h>

#include "gpu/gpu.h"

/* The function `kernel` of host/kernels/<file>, compiled for arch and loaded once per process
 * (with the embedded headers it includes: host_kernel_headers). On failure gpu_last_error()
 * says what: a file not embedded, the compiler's log, or the driver's "function not found". */
gpu_status host_kernel(const gpu_backend *b, const char *arch, const char *file, const char *kernel,
                       gpu_function **f);
/* Compiles every embedded host kernel source (the .cu files) for arch into the compile cache
 * without loading it (no device needed), as host_kernel would: a run's precompile phase does this
 * so that no worker compiles them inside a case's time limit. Counts what was compiled and what
 * the cache already held. */
gpu_status host_kernels_compile(const char *arch, int *compiled, int *cached);
/* The embedded text of host/kernels/<name> (NULL if absent): the one copy the host kernels
 * compile from. */
const char *host_kernel_source(const char *name, size_t *size);
/* The embedded headers (the .cuh files of host/kernels) that source includes by a line
 * `#include "name"`, directly or through one another, into headers[0..max); returns how many.
 * Only these are handed to the compiler and so hashed into the cache key: an edit to a header
 * recompiles the kernels that include it and no others. The preprocessor is not run (an include
 * under #if 0 counts), so a kernel never misses a header it can see. */
int host_kernel_headers(const char *source, rtc_header *headers, int max);
/* Forgets the loaded modules without unloading them: for tests whose (fake) backend was reset. */
void host_kernels_forget(void);

#endif
