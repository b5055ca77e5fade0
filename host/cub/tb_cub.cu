/* tb_cub.cu: libtb_cub.so, CUB's device-wide sorts behind a small C ABI that tilebench opens with
 * dlopen (host/gpu/cub.c): CUB's algorithms are templates dispatched from the host, so they cannot
 * come through NVRTC like the operators' kernels; CMake builds this file with nvcc where nvcc is
 * found (cmake/cub.cmake). It runs on the CUDA context current on the calling thread (tilebench's)
 * and on the stream it is handed.
 *
 * ABI (every function returns a cudaError_t, 0 = success):
 *   int tb_cub_abi(void)                 TB_CUB_ABI (the layout below)
 *   int tb_cub_version(void)             CUB_VERSION of the headers it was built with (300001 = 3.0.1)
 *   const char *tb_cub_error_string(int) cudaGetErrorString
 *   int tb_cub_temp_bytes(int op, long long n, size_t *bytes)   CUB's temporary storage for op at n
 *   int tb_cub_run(int op, void *temp, size_t temp_bytes, const void *in, void *scratch, void *out,
 *                  long long n, long long k, void *stream)
 * op 1 (TB_CUB_SORT_I32): DeviceRadixSort::SortKeys of n int32, in -> out (all 32 bits).
 * op 2 (TB_CUB_TOPK_F32): DeviceRadixSort::SortKeysDescending of n fp32, in -> scratch (n fp32),
 *   then a kernel copies the first k to out: the k largest, descending. CUB orders floats by their
 *   bits (a NaN with the sign bit set sorts below -inf), which torch.topk does not (docs/SORTING.md). */
#include <cub/device/device_radix_sort.cuh>
#include <cub/version.cuh>
#include <cuda_runtime.h>

#define TB_CUB_ABI 1
#define TB_CUB_SORT_I32 1
#define TB_CUB_TOPK_F32 2

extern "C" {
int tb_cub_abi(void);
int tb_cub_version(void);
const char *tb_cub_error_string(int code);
int tb_cub_temp_bytes(int op, long long n, size_t *bytes);
int tb_cub_run(int op, void *temp, size_t temp_bytes, const void *in, void *scratch, void *out, long long n,
               long long k, void *stream);
}

static __global__ void copy_first(const float *__restrict__ src, float *__restrict__ dst, long long k) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < k; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

int tb_cub_abi(void) { return TB_CUB_ABI; }

int tb_cub_version(void) { return CUB_VERSION; }

const char *tb_cub_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

int tb_cub_temp_bytes(int op, long long n, size_t *bytes) {
  *bytes = 0;
  if (n < 0 || n > 0x7FFFFFFFLL) return (int)cudaErrorInvalidValue;
  if (op == TB_CUB_SORT_I32)
    return (int)cub::DeviceRadixSort::SortKeys(nullptr, *bytes, (const int *)nullptr, (int *)nullptr, (int)n);
  if (op == TB_CUB_TOPK_F32)
    return (int)cub::DeviceRadixSort::SortKeysDescending(nullptr, *bytes, (const float *)nullptr, (float *)nullptr,
                                                         (int)n);
  return (int)cudaErrorInvalidValue;
}

int tb_cub_run(int op, void *temp, size_t temp_bytes, const void *in, void *scratch, void *out, long long n,
               long long k, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (n < 0 || n > 0x7FFFFFFFLL) return (int)cudaErrorInvalidValue;
  size_t bytes = temp_bytes;
  if (op == TB_CUB_SORT_I32)
    return (int)cub::DeviceRadixSort::SortKeys(temp, bytes, (const int *)in, (int *)out, (int)n, 0, 32, s);
  if (op == TB_CUB_TOPK_F32) {
    if (k < 1 || k > n) return (int)cudaErrorInvalidValue;
    cudaError_t e = cub::DeviceRadixSort::SortKeysDescending(temp, bytes, (const float *)in, (float *)scratch,
                                                             (int)n, 0, 32, s);
    if (e != cudaSuccess) return (int)e;
    const int blocks = (int)((k + 255) / 256);
    copy_first<<<blocks, 256, 0, s>>>((const float *)scratch, (float *)out, k);
    return (int)cudaGetLastError();
  }
  return (int)cudaErrorInvalidValue;
}
