"""moe_topk_gating in PyTorch eager (OPERATORS.md 22): (vals, idx) = topk(logits, k, sorted), weights =
softmax(vals.float(), -1).to(logits.dtype), idx.to(int32).
torch.topk does not specify which index comes first among equal values. The grid's rows are
permutations of E distinct values (the generator's, checked on the GPU), so there is nothing to
break and torch's indices are verified exactly like every implementation's; the tie rule (lower
index first) is tested on planted ties with the reference, cuda and triton only
(docs/REDUCTIONS.md)."""
import torch


def forward(logits, case):
    vals, idx = torch.topk(logits, case["k"], dim=-1, largest=True, sorted=True)
    return {"weights": torch.softmax(vals.float(), dim=-1).to(logits.dtype), "indices": idx.to(torch.int32)}
