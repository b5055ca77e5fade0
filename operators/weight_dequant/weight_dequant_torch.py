"""weight_dequant in PyTorch eager (OPERATORS.md 12): Y = X * S[i // T, j // T], the scale tiles
expanded to X's shape, the multiply in the input dtype (fp32 math, one rounding)."""


def forward(X, S, case):
    t = case["TILE_SIZE"]
    m, n = X.shape
    full = S.repeat_interleave(t, dim=0).repeat_interleave(t, dim=1)[:m, :n]
    return X * full
