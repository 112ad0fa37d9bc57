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
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-02) on 20 runs on H100 (torchtitan's benchmarks
# and paper, bf16 and fp8, 8K to 256K tokens a sequence with context parallelism), all on the 500 W
# HBM2e card, below the preset's clocks: kernel_share carries that, so a full-power H100 runs faster
# than this predicts. On a bound: kappa = 4 bytes (lower), the least a layer's fused kernels move:
# 17 of the 20 runs compile the model (torch.compile fuses the norms, activations and residual
# adds), and the long-context runs, whose attention is most of the step, leave the rest no room.
BEHAVIOUR = dict(
    kernel_share=0.5683,
    kappa=4.035,
    o_tp=0.1082,
    o_dp=0.4062,
    o_dcn=0.4748,
    layer_overhead=3.115e-05,
    step_overhead=0.1968,
)
