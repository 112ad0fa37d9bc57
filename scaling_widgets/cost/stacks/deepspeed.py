"""DeepSpeed ZeRO with bf16.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641,
   deepspeed/runtime/engine.py`` (``DeepSpeedEngine.compile``).
.. [3] ``deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641,
   deepspeed/runtime/pipe/schedule.py`` (``TrainSchedule``).
.. [4] ``deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641,
   deepspeed/runtime/zero/config.py``
   (``DeepSpeedZeroConfig``: ``reduce_bucket_size``, ``allgather_bucket_size``,
   ``overlap_comm`` and its validator ``overlap_comm_valid``) and
   ``deepspeed/runtime/zero/stage_1_and_2.py`` (``average_tensor``: the reduction stream;
   ``buf_1``: "double buffers ... when overlap_comm is enabled").
"""

from . import Feature

NAME, ORDER = "deepspeed", 2
# ZeRO's overlap_comm, "Attempts to overlap the reduction of the gradients with backward
# computation" [4]: off, ZeRO 1 and 2 reduce each bucket on the compute's own stream; on, on a
# stream of their own, with a second bucket to fill while the first is reduced. Its default is on
# under ZeRO-3 alone (overlap_comm_valid), where the scatters hide as prefetched traffic does
# (MODEL.md §C.2); the feature decides ZeRO 0 to 2. Brought by ZeRO-2 (#217).
FEATURES = {
    "overlap_comm": Feature(
        "grad_reduce", "overlap_comm", False, "f2ac7eafd (2020-05-19)",
        "deepspeed/runtime/zero/config.py", on_from_zero=3, memory={"bucket_bytes": 2e9},
    ),
}  # fmt: skip
# torch.compile of the engine's module: DeepSpeed's ``engine.compile()`` (runtime/engine.py).
TORCH_COMPILE = True
# Its pipeline engine trains with 1F1B (runtime/pipe/schedule.py, TrainSchedule).
PIPELINE_SCHEDULES = ("1f1b",)
# Its FusedAdam, or a torch.optim Adam handed to it (the Hugging Face Trainer's)
TORCH_ADAM = True
# Gradients accumulate in bf16; one reduce bucket of reduce_bucket_size, 5e8 elements in bf16, made
# as the backward begins (stage_1_and_2.py: "buf_0 = torch.empty(int(self.reduce_bucket_size)",
# a second only with overlap_comm: FEATURES); the updated weights are all-gathered into their flat
# buffer in place (runtime/utils.py, all_gather_into_tensor_dp_groups), with no bucket of their own;
# Megatron-DeepSpeed's loss; its SwiGLU, uncompiled, keeps the SiLU's output for the multiplication
# (microsoft/Megatron-DeepSpeed, megatron/model/transformer.py: "F.silu(x[0]) * x[1]"). At the
# step ZeRO copies its gradient partition to fp32 before the bf16 gradients are freed
# (runtime/zero/stage_1_and_2.py, step: "single_grad_partition = flat_grad_partition.to(...)";
# stage3.py, _prepare_fp32_grad_for_sub_group; deepspeedai/DeepSpeed at edaa722).
MEMORY = dict(
    weight_bytes=2.0,
    grad_bytes=2.0,
    optimizer_bytes=12.0,
    step_grad_bytes=4.0,
    selective="attention",
    logits_bytes=6.0,
    bucket_bytes=1e9,
    eager_glu=True,
    measures="allocated",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on one run on A100 (BLOOM-176B,
# Megatron-DeepSpeed): one run moves little from the typical stack. Nothing on a bound.
BEHAVIOUR = dict(
    kernel_share=0.7806,
    kappa=16.26,
    kappa_scores=10.13,
    o_tp=0.1991,
    o_dp=0.7536,
    o_dcn=0.4777,
    layer_overhead=3.856e-07,
    step_overhead=0.126,
)
# Its activation checkpointing recomputes each layer whole (Megatron-DeepSpeed's
# --checkpoint-activations, --checkpoint-num-layers N: one input kept for N layers)
RECOMPUTE = ("full", "full:uniform:2")
