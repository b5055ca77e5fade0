#!/usr/bin/env bash
# GPU: the CUDA backend end to end (tests/c/test_cuda_backend.c, built with the unit tests).
# Exits 77 (skipped) where no device is present.
set -u
exec "$TB_BUILD_DIR/test_cuda_backend"
