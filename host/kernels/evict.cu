// evict.cu: cache eviction between timed runs (tb.timer, flush_mode = "read"). Never inside a
// timed interval; never under a pushed CUPTI correlation id, so never in a kernel sum.
//   tb_evict_read:  reads buf[0 .. n16) with 16-byte loads, grid-stride over every SM. Reading
//     (not writing) leaves the L2 holding clean lines only: the dirty lines of the previous run
//     are written back during the eviction, not during the next timed run.
//   tb_evict_pages: reads one 16-byte word every page_bytes of buf[0 .. n_pages * page_bytes),
//     touching many distinct pages to displace GPU TLB entries (flush_tlb_bytes > 0).
// The loaded words are folded (XOR) into a value stored only when it equals key. The host fills
// the buffers with one repeated 32-bit word, so the XOR of each 16-byte load is 0 and the fold is
// 0 whatever the thread; the host passes key = 1: the store never happens, but the compiler cannot
// know that, so no load is removed.

extern "C" __global__ void tb_evict_read(const uint4 *buf, unsigned long long n16, unsigned *sink,
                                         unsigned key) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  // Four independent 16-byte loads in flight per thread per step.
  for (; i + 3 * stride < n16; i += 4 * stride) {
    uint4 a = buf[i], b = buf[i + stride], c = buf[i + 2 * stride], d = buf[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n16; i += stride) {
    uint4 a = buf[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == key) *sink = acc;
}

extern "C" __global__ void tb_evict_pages(const uint4 *buf, unsigned long long n_pages,
                                          unsigned long long page_bytes, unsigned *sink, unsigned key) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned acc = 0;
  for (unsigned long long p = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; p < n_pages; p += stride) {
    uint4 a = buf[p * (page_bytes / 16)];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == key) *sink = acc;
}
