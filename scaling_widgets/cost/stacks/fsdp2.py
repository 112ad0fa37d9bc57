"""PyTorch FSDP2, as torchtitan runs it."""

NAME, ORDER = "fsdp2", 1
# fp32 sharded weights (the master copy), gradients and Adam; bf16 gathered; op-level selective
# recompute saves every other matmul; the loss casts the logits to fp32, and its backward holds the
# saved log-softmax, the loss's gradient and the log-softmax's, all fp32 (12 bytes a logit); under
# pipelining FSDP does not reshard after forward, and the stage syncs gradients at the last
# microbatch only, so they accumulate unsharded (in fp32, FSDP's reduce dtype); its log reports
# peak reserved memory.
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="alternate-matmuls",
    logits_bytes=12.0,
    pipeline_unsharded=True,
    measures="reserved",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-02) on 12 runs on H100 (torchtitan's benchmarks
# and paper, bf16 and fp8), all on the 500 W HBM2e card, below the preset's clocks: kernel_share
# carries that, so a full-power H100 runs faster than this predicts. On a bound: layer_overhead =
# 0.2 ms (upper), the most some tens of launches a pass take: the fit would put more time per layer
# than any measured fixed cost explains (a known gap, MODEL.md §F.2); step_overhead = 0.2 s (upper),
# the host's work a step at most; what the fit would put beyond it (those cards' slower memory-bound
# and communication work) it cannot tell apart.
BEHAVIOUR = dict(
    kernel_share=0.6203,
    kappa=48.83,
    o_tp=0.05606,
    o_dp=0.5359,
    o_dcn=0.5003,
    layer_overhead=0.0001999,
    step_overhead=0.2,
)
