"""mul2 in PyTorch eager (OPERATORS.md 2): out = x * 2 (a Python scalar), dtype preserved."""


def forward(x, case):
    return x * 2
