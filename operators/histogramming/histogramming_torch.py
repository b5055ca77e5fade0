"""histogramming in PyTorch eager (OPERATORS.md 21): torch.bincount(input.to(int64),
minlength=num_bins).to(int32). bincount on CUDA reads the input's minimum and maximum back to the
host to size its output, so graph capture of this forward fails and tilebench times it eagerly
(docs/MEASUREMENT.md); that host round trip is part of TileBench's run() as well."""
import torch


def forward(input, case):
    return torch.bincount(input.to(torch.int64), minlength=case["num_bins"]).to(torch.int32)
