// clock_probe.cu: estimates the SM clock. One block per SM; thread 0 of each block counts SM
// cycles (clock64) across a window of the global nanosecond timer (%globaltimer), measured from
// one timer tick edge to another so the timer's update granularity (up to 1 us on some parts)
// does not blur the estimate. out[2*b] = cycles, out[2*b+1] = nanoseconds for block b.
// tb.timer launches it between timed runs (never inside one); the rate is cycles/ns = GHz.

__device__ __forceinline__ unsigned long long tb_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void tb_clock_probe(unsigned long long *out, unsigned int window_ns) {
  if (threadIdx.x != 0) return;
  // Wait for the timer to tick, so the window starts on an edge.
  unsigned long long first = tb_globaltimer(), t0, t1;
  long long c0, c1;
  do {
    t0 = tb_globaltimer();
    c0 = clock64();
  } while (t0 == first);
  // The first reading at or past the end of the window is the first one after a tick: an edge.
  do {
    t1 = tb_globaltimer();
    c1 = clock64();
  } while (t1 < t0 + window_ns);
  out[2 * blockIdx.x] = (unsigned long long)(c1 - c0);
  out[2 * blockIdx.x + 1] = t1 - t0;
}
