"""dropout in PyTorch eager (OPERATORS.md 6): out = (x * x_keep) * (1 / (1 - p)) in x's dtype; the
keep-mask x_keep is an input (no RNG here), p the case's parameter."""


def forward(x, x_keep, case):
    return (x * x_keep) * (1.0 / (1.0 - case["p"]))
