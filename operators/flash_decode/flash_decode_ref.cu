// flash_decode_ref.cu: the reference. One thread per output element (b, h, d): nb =
// min(ceil(b_seqlen[b] / block_seq), num_blocks) (0 when b_seqlen <= 0), m = the max of
// lse[b, h, 0..nb), then sum_s exp(lse - m) * mid_o[b, h, s, d] and sum_s exp(lse - m) in fp32 in
// block order, out = the first / (the second + 1e-10). nb = 0 gives 0 / 1e-10 = 0. Kernel:
// flash_decode_ref(mid_o, lse, b_seqlen, out, batch, heads, num_blocks, head_dim, block_seq).
extern "C" __global__ void flash_decode_ref(const float *mid_o, const float *lse, const int *b_seqlen, float *out,
                                            int batch, int heads, int num_blocks, int head_dim, int block_seq) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch * heads * head_dim) return;
  const long long bh = i / head_dim;
  const int d = (int)(i % head_dim), b = (int)(bh / heads);
  const int len = b_seqlen[b];
  int nb = len <= 0 ? 0 : (len - 1) / block_seq + 1;
  if (nb > num_blocks) nb = num_blocks; // b_seqlen beyond the allocation: only the blocks that exist
  const float *l = lse + bh * num_blocks;
  const float *v = mid_o + bh * num_blocks * head_dim + d;
  float m = -__int_as_float(0x7f800000);
  for (int s = 0; s < nb; ++s) m = fmaxf(m, l[s]);
  float acc = 0.0f, sum = 0.0f;
  for (int s = 0; s < nb; ++s) {
    const float w = expf(l[s] - m);
    sum += w;
    acc += w * v[(long long)s * head_dim];
  }
  out[i] = acc / (sum + 1e-10f);
}
