-- tb.timer on a GPU: eviction before every run makes a 16 MB copy (32 MB of traffic, which fits in
-- the L2 of an H100/H200) measurably slower than without eviction. Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skip: ', tostring(why), '\n') os.exit(77) end
local kernel, launch, tensor, timer = require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer')

local SRC = [[
extern "C" __global__ void copy4(const float4 *src, float4 *dst, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]
local props = device.props()
local n = 16 * 1024 * 1024 // 4
if props.l2_bytes < 2 * n * 4 then
  io.stderr:write(string.format('skip: L2 of %d MiB cannot hold 32 MB, so there is nothing to evict\n', props.l2_bytes >> 20))
  os.exit(77)
end
local mod = assert(kernel.compile(SRC, { name = 'timer_flush.cu' }))
local copy = mod:get('copy4', { 'ptr', 'ptr', 'i64' })
local src, dst = tensor.empty({ n }, 'fp32'), tensor.empty({ n }, 'fp32')
local plan = launch.plan({ { fn = copy, grid = { props.sm_count * 4 }, block = { 512 }, args = { src, dst, n // 4 } } })

local failures = 0
local function check(cond, what)
  print((cond and 'ok   ' or 'FAIL ') .. what)
  if not cond then failures = failures + 1 end
end

local cold = assert(timer.measure(plan, { max_noise = 0.01 }))
local warm = assert(timer.measure(plan, { flush = false, max_noise = 0.01 }))
local sized = assert(timer.measure(plan, { flush_bytes = 64 << 20, max_noise = 0.01 }))
print(string.format('evicted %.2f us (noise %.2f %%, %d MiB)  not evicted %.2f us (noise %.2f %%)  ratio %.2f',
  cold.median * 1e3, cold.noise * 100, cold.flush_bytes >> 20, warm.median * 1e3, warm.noise * 100, cold.median / warm.median))
check(cold.median > 1.05 * warm.median, 'eviction makes the 16 MB copy measurably slower (> 5 %)')
check(cold.q1 > warm.q3, 'the interquartile ranges do not overlap')
check(cold.flush_bytes == 2 * props.l2_bytes or props.family == 'cdna3', 'default eviction is 2 x L2')
check(warm.flush_bytes == 0 and warm.evict_s == 0, 'flush = false evicts nothing')
check(cold.evict_s > 0 and cold.gpu_busy_s > cold.evict_s, 'eviction time is counted as GPU busy time, apart from the kernel')
check(sized.flush_bytes == 64 << 20, 'flush_bytes overrides the size')
-- The eviction never lands inside the timed interval: the events clock of an evicted run is far
-- below the time a 2 x L2 memset takes on its own (at least bytes / peak bandwidth).
local memset_ms = cold.flush_bytes / (props.peak_dram_gbs * 1e9) * 1e3
check(cold.events_median < cold.median + 0.5 * memset_ms, 'events exclude the eviction')
-- The read eviction (default) and the old memset (flush_mode = 'write') both evict; the eviction
-- kernel is never counted as a kernel of the plan, in graph or eager mode; the TLB page sweep
-- runs inside the eviction interval.
local write = assert(timer.measure(plan, { flush_mode = 'write', max_noise = 0.01 }))
local eager = assert(timer.measure(plan, { graph = false, max_noise = 0.01 }))
local tlb = assert(timer.measure(plan, { flush_tlb_bytes = 1 << 30, max_noise = 0.01 }))
print(string.format('read eviction %.2f us (evict %.1f us/run)  write eviction %.2f us (evict %.1f us/run)  +TLB sweep %.2f us',
  cold.median * 1e3, cold.evict_s / (cold.n + cold.warmup) * 1e6, write.median * 1e3,
  write.evict_s / (write.n + write.warmup) * 1e6, tlb.median * 1e3))
check(cold.flush_mode == 'read' and write.flush_mode == 'write', 'flush_mode is reported (read by default)')
check(write.median > 1.05 * warm.median, 'the write eviction also makes the copy slower')
if cold.clock == 'cupti' then
  check(cold.kernels_per_run == 1 and eager.kernels_per_run == 1 and tlb.kernels_per_run == 1,
    'the eviction kernels are not counted (kernels_per_run == 1, graph and eager)')
end
check(tlb.flush_tlb_bytes == 1 << 30 and tlb.evict_s > 0, 'flush_tlb_bytes is reported')
check(not pcall(timer.measure, plan, { flush_mode = 'write', flush_tlb_bytes = 1 << 30 }), 'the TLB sweep needs the read eviction')
print(failures == 0 and 'PASS' or ('FAILED: ' .. failures))
os.exit(failures == 0 and 0 or 1)
