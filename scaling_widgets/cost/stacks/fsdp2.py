"""PyTorch FSDP2, as torchtitan runs it.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/config/job_config.py`` (``Compile``, ``Parallelism.pipeline_parallel_schedule``).
.. [3] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/models/llama3/infra/parallelize.py`` (``apply_tp``, ``apply_fsdp``;
   ``parallelize_llama.py`` before June 2025).
.. [4] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/components/loss.py`` (``cross_entropy_loss``).
.. [5] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/distributed/activation_checkpoint.py``
   (``_apply_op_sac``: every other matmul saved).
.. [6] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/components/metrics.py`` (the peak reserved memory).
.. [7] ``pytorch/pytorch, torch/distributed/pipelining/schedules.py`` (``ScheduleGPipe``,
   ``Schedule1F1B``, ``ScheduleInterleaved1F1B``, ``ScheduleZBVZeroBubble``,
   ``ScheduleDualPipeV``).
.. [8] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
   torchtitan/distributed/tensor_parallel.py`` (``maybe_enable_async_tp``: PyTorch's
   micro-pipelined TP, ``torch._inductor.config._micro_pipeline_tp``, under torch.compile).
"""

from . import Feature

NAME, ORDER = "fsdp2", 1
# Its overlap of TP's collectives: async TP, which splits each all-gather and reduce-scatter into
# chunks that run under the matmul they feed (torch.compile's micro-pipelined TP), off by default
# (job_config.py, Parallelism.enable_async_tensor_parallel; its commit 1ec2ece51, 2024-06-26,
# "Add the option to turn on async-TP"). Off, TP's collectives run between the matmuls; on, the
# forward passes' run under their matmuls, only what exceeds them showing [8], and the backward's
# still after theirs: Inductor fuses an all-gather into the matmul it feeds and a matmul into its
# reduce-scatter, and the backward's reduce-scatters take sums of matmuls, which it does not
# (pytorch/pytorch#149946, 2025-03-28: "only valid ... reduce-scatter patterns in the forward
# graph, but not in the backward graph"). So the overlap counts the forward's (and recompute's)
# collectives hidden and none of the backward's. FSDP2's own prefetch of ZeRO-3's gathers is no
# switch: it is always on, and charged as such (MODEL.md §C.2).
FEATURES = {
    "async_tp": Feature(
        "tp_forward", "parallelism.enable_async_tensor_parallel", False, "1ec2ece51 (2024-06-26)",
        "torchtitan/distributed/tensor_parallel.py", compiled=True,
    ),
}  # fmt: skip
# torch.compile per transformer block: torchtitan's job config ``[compile]`` (``training.compile``
# before 2025).
TORCH_COMPILE = True
# Its TP shards the norms over the sequence (``apply_tp`` in parallelize_llama.py: SequenceParallel
# on attention_norm, ffn_norm and norm): no TP without sequence parallelism.
TP_SEQUENCE_PARALLEL = True
# torchtitan's ``parallelism.pipeline_parallel_schedule`` names PyTorch's schedules
# (torch.distributed.pipelining.schedules): GPipe, 1F1B, Interleaved1F1B, ZBVZeroBubble, DualPipeV.
PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zbv", "dualpipev")
# torch.optim's AdamW: fused in torchtitan by default, foreach where a config says (optimizer.py)
TORCH_ADAM = True
# FSDP2's set_requires_gradient_sync(False), FSDP1's no_sync(): microbatches accumulate whole,
# unsharded gradients, reduce-scattered at the last (the Hugging Face Trainer and Accelerate do so
# for gradient accumulation; torchtitan does not)
NO_SYNC = True
# fp32 sharded weights (the master copy), gradients and Adam; bf16 gathered; op-level selective
# recompute saves every other matmul; the loss casts the logits to fp32, and its backward holds the
# saved log-softmax, the loss's gradient and the log-softmax's, all fp32 (12 bytes a logit); under
# pipelining FSDP does not reshard after forward, and the stage syncs gradients at the last
# microbatch only, so they accumulate unsharded (in fp32, FSDP's reduce dtype); its log reports
# peak reserved memory. Without flash attention a PyTorch model's eager softmax runs in fp32 and is
# kept so, beside the copy the next matmul reads (Hugging Face transformers'
# eager_attention_forward: "softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)";
# under autocast softmax is one of the ops cast to fp32). Its gated MLP, uncompiled, keeps the
# SiLU's output for the multiplication (models/llama3/model/model.py, FeedForward:
# "self.w2(F.silu(self.w1(x)) * self.w3(x))"). Compiled, the loss is compiled with the layers
# (loss.py: "loss" in compile.components, by default, since 08b8b244f, 2025-08-20; under
# training.compile from bbb1b616e, 2025-04-02; eager before): it keeps the bf16 logits it is
# handed and returns their bf16 gradient, 4 bytes a logit (its fp32 casts and softmax fused
# away; pytorch/torchtitan#1033: compiled "saved more memory than chunked loss ever could").
# Its MoE weighs the routed copies by their scores in fp32, "routed_output.to(torch.float32) *
# top_scores_experts_sorted" (or the inputs, score_before_experts), and the multiplication keeps
# that fp32 copy for the scores' gradient: 4 bytes a routed element (models/moe.py, MoE.forward).
# Its sequence parallelism is DTensor's: the TP matmuls keep the whole sequence they gathered
# (PrepareModuleInput's Replicate input of ColwiseParallel), not the shard Megatron-LM gathers again
# (parallelize_llama.py, apply_tp). Its context parallelism under FlexAttention all-gathers each
# layer's keys and values (torch's _ContextParallel for FLEX, cplib::flex_cp_allgather), and
# flex_attention keeps the gathered whole sequence for its backward (torchtitan@c3c2f3b20,
# distributed/context_parallel.py); its SDPA ring keeps its own block.
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="alternate-matmuls",
    logits_bytes=12.0,
    compiled_loss_bytes=4.0,
    combine_bytes=4.0,
    softmax_bytes=4.0,
    eager_glu=True,
    pipeline_unsharded=True,
    gathered_inputs=True,
    cp_gathered_kept=True,
    measures="reserved",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on 26 runs on H100 (torchtitan's benchmarks
# and paper: eager and compiled, bf16 and fp8, 8K to 256K tokens a sequence with context
# parallelism, TP with async TP on and off), all on the 500 W HBM2e card, below the preset's
# clocks: kernel_share carries that, so a full-power H100 runs faster than this predicts. kappa =
# 180 bytes eager (counted on a Llama layer's kernels op by op: about 150); compiled, a third of
# that (MODEL.md §F.5). o_tp is not fitted: its FEATURES decide what hides. o_dp reaches only ZeRO
# 0-2, which none of its runs use: ZeRO-3's prefetch hides under all of a layer's compute
# (MODEL.md §C.2).
BEHAVIOUR = dict(
    kernel_share=0.6106,
    kappa=179.7,
    kappa_scores=10.13,
    o_tp=0.1991,
    o_dp=0.7536,
    o_dcn=0.4777,
    layer_overhead=3.072e-07,
    step_overhead=0.1124,
)
# The recompute policies it offers by name: activation_checkpoint.mode none, full, or selective
# by op or every Nth layer (selective_ac_option)
RECOMPUTE = ("selective:op", "selective:2", "full")
