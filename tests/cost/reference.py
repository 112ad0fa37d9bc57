"""A plain scalar transcription of MODEL.md §A.3, §A.4 and §A.10, one layout at a time.

It is the oracle for the property tests and the baseline of benchmarks/bench_cost.py: the
same formulas as the vectorized model, written as MODEL.md states them, with ``math`` only.
"""


def layer(strategy, B, D, F, X, Y, P, C, W, W_dcn, M_X, M_Y):
    """Per-pass (math, x, y, dcn) times of one layer [s], forward then backward."""
    b = B / P
    math_f, math_b = 4 * b * D * F / (X * Y * C), 8 * b * D * F / (X * Y * C)
    rows = {  # MODEL.md §A.3, summary table: bytes on X (fwd, bwd) and on Y (fwd, bwd)
        "dp": ((0, 8 * D * F), (0, 0)),
        "fsdp": ((4 * D * F, 8 * D * F), (0, 0)),
        "tp": ((0, 0), (4 * b * D, 4 * b * D)),
        "fsdp+tp": ((4 * D * F / Y, 8 * D * F / Y), (4 * b * D / X, 8 * b * D / X)),
    }
    (xf, xb), (yf, yb) = rows[strategy]
    wx = max(M_X, 1) * W
    wy = max(M_Y, 1) * W
    xf, xb = (0.0, 0.0) if X == 1 else (xf / wx, xb / wx)
    yf, yb = (0.0, 0.0) if Y == 1 else (yf / wy, yb / wy)
    dcn_b = 8 * D * F / (X * Y * W_dcn) if P > 1 else 0.0
    return (math_f, xf, yf, 0.0), (math_b, xb, yb, dcn_b)


def compute_bound(passes):
    return all(m >= max(x, y, d) for m, x, y, d in passes)


def lower_bound(passes):
    return sum(max(m, x, y, d) for m, x, y, d in passes)


def memory(params, L, D, F, B, X, Y, Z, P, fsdp, w=2.0, g=0.0, o=8.0, a=2.0):
    shards = (X if fsdp else 1) * Y * Z
    return params * (w + g + o) / shards + a * L * B * (D + 2 * F) / (X * Y * Z * P)


def step_time(B, params, chips, C, mfu, comm):
    return max(6 * B * params / (chips * C * mfu), comm)


def evaluate(strategy, B, D, F, L, params, X, Y, P, C, W, W_dcn, M_X, M_Y, hbm, mfu):
    """One layout: (compute-bound, lower-bound layer time, memory per chip, fits, step time)."""
    passes = layer(strategy, B, D, F, X, Y, P, C, W, W_dcn, M_X, M_Y)
    comm = L * sum(max(x, y, d) for _, x, y, d in passes)
    mem = memory(params, L, D, F, B, X, Y, 1, P, strategy in ("fsdp", "fsdp+tp"))
    return (
        compute_bound(passes),
        lower_bound(passes),
        mem,
        mem <= hbm,
        step_time(B, params, X * Y * P, C, mfu, comm),
    )
