"""matrix_copy in PyTorch eager (OPERATORS.md 38): B = A + 0, a fresh (N, N) tensor in A's dtype."""


def forward(A, case):
    return A + 0
