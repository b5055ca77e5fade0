#!/usr/bin/env bash
# conv_triton_interpret.sh: the convolutions' Triton kernels (operators/_shared/conv_triton.py)
# in triton's CPU interpreter against a numpy cross-correlation on small odd cases of every rank,
# stride, padding and groups, both input layouts, fp32 and fp16 (conv_triton_interpret.py says
# which). No GPU. Skips (77) without triton or numpy, except where TB_REQUIRE_TRITON is set (CI,
# which installs both).
set -u
: "${TILEBENCH_HOME:?}"
TRITON_INTERPRET=1 python3 "$TILEBENCH_HOME/tests/cli/conv_triton_interpret.py" "$TILEBENCH_HOME"
