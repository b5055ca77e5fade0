/* host_kernels.h: the host's own kernels (host/kernels/: random fill, poison, compare, eviction,
 * clock probe), embedded in the binary at build time and compiled by the backend's compiler
 * (rtc_compile, cached on disk) for the device in use on first use. Plain C: no Lua, so the
 * verification and timer engines and their C unit tests use them directly. */
#ifndef TB_HOST_KERNELS_H
#define TB_HOST_KERNELS_H

#include <stddef.h>

#include "gpu/gpu.h"

/* The function `kernel` of host/kernels/<file>, compiled for arch and loaded once per process
 * (every embedded header is offered to the compiler). On failure gpu_last_error() says what:
 * a file not embedded, the compiler's log, or the driver's "function not found". */
gpu_status host_kernel(const gpu_backend *b, const char *arch, const char *file, const char *kernel,
                       gpu_function **f);
/* The embedded text of host/kernels/<name> (NULL if absent), for headers shared with users. */
const char *host_kernel_source(const char *name, size_t *size);
/* Forgets the loaded modules without unloading them: for tests whose (fake) backend was reset. */
void host_kernels_forget(void);

#endif
