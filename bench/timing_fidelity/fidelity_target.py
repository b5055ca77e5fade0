"""fidelity_target.py: the fidelity target of issue 19 (section 2), one definition for merge.py
(the kernels of kernels.cu) and operators.py (the suite's own kernels).

ncu's gpu__time_duration includes ~1 us of front-end launch processing that CUPTI's kernel record
leaves out (docs/MEASUREMENT.md, "Small kernels"). So tilebench is compared with ncu's time minus
that excess, the excess being ncu's time of the empty kernel minus tilebench's, both measured in
the same run:

    ref = ncu_us - launches * (ncu_nop_us - tilebench_nop_us)
    kernels with ref >= 20 us:      |tilebench_us / ref - 1| <= 3 %
    kernels with 2 <= ref < 20 us:  |tilebench_us / ref - 1| <= 10 %
    shorter kernels and the empty kernel itself: no target (diagnostics).

ncu_us is the sum of gpu__time_duration over a run's kernels; each of its `launches` carries the
excess (it is per launch), so a plan of several kernels has it subtracted once per kernel.
"""

LONG_US, SHORT_US = 20.0, 2.0
LONG_TOL, SHORT_TOL = 0.03, 0.10


def excess(ncu_nop_us, tb_nop_us):
    """ncu's launch excess in us, or None when either empty-kernel time is missing."""
    if ncu_nop_us is None or tb_nop_us is None:
        return None
    return ncu_nop_us - tb_nop_us


def tolerance(ref_us):
    """The target's tolerance for a kernel whose corrected ncu time is ref_us (None: no target)."""
    if ref_us is None:
        return None
    if ref_us >= LONG_US:
        return LONG_TOL
    if ref_us >= SHORT_US:
        return SHORT_TOL
    return None


def judge(ncu_us, tb_us, exc, launches=1):
    """{ref, ratio, tol, verdict}: verdict is 'ok' or 'FAIL' against the target, '-' where the
    kernel has no target (under 2 us), 'missing' where a number is (the note says which).
    launches: kernels in the run ncu_us sums."""
    out = {"ref": None, "ratio": None, "tol": None, "verdict": "missing"}
    if ncu_us is None or tb_us is None or exc is None:
        return out
    ref = ncu_us - max(1, launches) * exc
    out["ref"] = ref
    out["tol"] = tolerance(ref)
    if ref <= 0:
        out["verdict"] = "-"
        return out
    out["ratio"] = tb_us / ref
    if out["tol"] is None:
        out["verdict"] = "-"
    else:
        out["verdict"] = "ok" if abs(out["ratio"] - 1) <= out["tol"] else "FAIL"
    return out


def target_text(tol):
    return "-" if tol is None else f"{tol * 100:.0f} %"
