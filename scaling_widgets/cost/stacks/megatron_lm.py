"""Megatron-LM with its distributed optimizer.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/pipeline_parallel/schedules.py``
   (``forward_backward_pipelining_without_interleaving``,
   ``forward_backward_pipelining_with_interleaving``).
.. [3] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/pipeline_parallel/combined_1f1b.py``.
.. [4] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/transformer/transformer_config.py``
   (``TransformerConfig.__post_init__``).
.. [5] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/training/theoretical_memory_usage.py``
   (``compute_weight_and_optimizer_memory``: 6 + 12/DP bytes a parameter).
.. [6] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/tensor_parallel/cross_entropy.py`` (``VocabParallelCrossEntropy``).
.. [7] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/training/utils/common_utils.py`` (``report_memory``).
.. [8] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/transformer/transformer_config.py`` (``recompute_granularity``,
   ``recompute_method``, ``recompute_num_layers``, ``recompute_modules``) and
   ``megatron/core/recompute.py`` (``checkpointed_forward``: uniform and block).
.. [9] ``NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
   megatron/core/distributed/distributed_data_parallel_config.py`` (``overlap_grad_reduce``,
   ``overlap_param_gather``), ``megatron/core/model_parallel_config.py`` (``tp_comm_overlap``,
   ``overlap_p2p_comm``) and ``megatron/training/arguments.py`` (their flags and defaults).
.. [10] NVIDIA, "Communication Overlap", NeMo Framework User Guide (24.12 and 25.09): the
   distributed optimizer's reduce-scatter and all-gather "chunked by the granularity of a
   Transformer layer", which "exposes only one DP communication chunk".
"""

from . import Feature

NAME, ORDER = "megatron-lm", 0
# Its overlaps, as flags of megatron/training/arguments.py (defaults at the commit of [9]; the
# commit and date that brought each, from the repository's history; the file it lives in at [9]).
# tp_comm_overlap is TransformerEngine's userbuffers; overlap_p2p_comm is the interleaved
# schedule's. Off, the traffic runs after the compute it could hide under; on, only what exceeds
# that compute shows, and at least one chunk (a layer's) of the data-parallel traffic [10].
FEATURES = {
    "overlap_grad_reduce": Feature(
        "grad_reduce", "--overlap-grad-reduce", False, "2d5220a424 (2023-08-16)",
        "megatron/core/distributed/distributed_data_parallel_config.py",
    ),
    "overlap_param_gather": Feature(
        "param_gather", "--overlap-param-gather", False, "f048bf8c08 (2023-11-17)",
        "megatron/core/distributed/distributed_data_parallel_config.py",
    ),
    "tp_comm_overlap": Feature(
        "tp", "--tp-comm-overlap", False, "e19dcb6ae9 (2023-10-11)",
        "megatron/core/model_parallel_config.py",
    ),
    "overlap_p2p_comm": Feature(
        "p2p", "--no-overlap-p2p-communication", True, "f9283c5a8a (2023-05-31)",
        "megatron/core/model_parallel_config.py",
    ),
}  # fmt: skip
# Its pipeline schedules: 1F1B and interleaved 1F1B (core/pipeline_parallel/schedules.py,
# forward_backward_pipelining_without_interleaving and with_interleaving).
PIPELINE_SCHEDULES = ("1f1b", "interleaved")
# Combined 1F1B, --overlap-moe-expert-parallel-comm (Megatron Core 0.14+; core/pipeline_parallel/
# combined_1f1b.py): a forward paired with another microbatch's backward, opt-in (a layout's
# ``ep_overlap``). Its config refuses full recompute and, with PP, a schedule without virtual
# stages (transformer_config.py, __post_init__).
EP_OVERLAP = True
# bf16 weights, fp32 main gradients unsharded below ZeRO-2, fp32 master and Adam sharded (its own
# estimate: 6 + 12/DP bytes a parameter); gradients kept in 16 bits are copied to fp32 at the
# step (core/optimizer/optimizer.py, _copy_model_grads_to_main_grads at d98e8a64dd); the loss
# keeps the fp32 softmax beside the bf16 logits; gradients reduced in place; report_memory:
# allocated. Under fp8, TransformerEngine's linear layers keep the fp8 copies of their inputs for
# the backward (core/extensions/transformer_engine.py, set_save_original_input: "Some
# transformer-engine modules would save the quantized tensors by default in fp8 training"). Its
# unfused attention (no flash) takes its scores' input buffer from a global memory buffer held
# all step, one layer's scores of a microbatch (core/transformer/dot_product_attention.py:
# "matmul_input_buffer = parallel_state.get_global_memory_buffer().get_tensor(").
MEMORY = dict(
    weight_bytes=2.0,
    grad_bytes=4.0,
    optimizer_bytes=12.0,
    step_grad_bytes=4.0,
    step_keeps_grads=True,
    selective="attention",
    logits_bytes=6.0,
    bucket_bytes=0.0,
    scores_buffer=True,
    measures="allocated",
    fp8_inputs_kept=True,
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on 27 runs: 6 on B200 (SimuMax's measured
# Megatron-LM runs on one node, every overlap off) and 21 on H100 (the Megatron-LM README's
# weak-scaling table and NeMo 24.07, the overlaps on), drawn towards the typical stack. Nothing on
# a bound. o_tp and o_dp are not fitted: its FEATURES decide what hides (MODEL.md §F.2).
BEHAVIOUR = dict(
    kernel_share=0.8083,
    kappa=9.06,
    kappa_scores=10.13,
    o_tp=0.1991,
    o_dp=0.7536,
    o_dcn=0.4777,
    layer_overhead=0.0001309,
    step_overhead=0.08954,
)
# --recompute-modules (default core_attn): what recomputing each stops keeping of a layer's
# tensors (transformer/recompute.py), and which forward work it runs again
# (transformer_config.py L560-582; attention.py _checkpointed_attention_forward;
# transformer_layer.py _run_mlp; moe/moe_layer.py; moe/experts.py; multi_latent_attention.py).
# Under flash attention core_attn drops only the kernel's log-sum-exp; with TransformerEngine's
# fused LayerNorm-Linear the norms are no modules of their own, so layernorm drops nothing; the
# gated-delta-net and mHC modules are parts our models do not have.
RECOMPUTE_MODULES = {
    "core_attn": (("scores",), ("core",)),
    "mlp": (("mlp_gate", "mlp_up", "mlp_activation"), ("mlp",)),
    "moe": (("mlp_gate", "mlp_up", "mlp_activation", "dispatch", "combine"), ("mlp",)),
    "moe_act": (("mlp_activation",), ()),
    "layernorm": ((), ()),
    "mla_up_proj": (("query", "key", "value"), ("dense",)),
    "shared_experts": ((), ()),
    "gdn_norm_out": ((), ()),
    "gdp_in_proj": ((), ()),
    "gdp_qkv": ((), ()),
    "mhc": ((), ()),
}
# the layers a module is part of: "mlp" is recomputed on dense layers only
# (transformer_layer.py: ``if not self.is_moe_layer``), the MoE's modules on MoE layers
DENSE_ONLY = ("mlp",)
MOE_ONLY = ("moe", "moe_act", "shared_experts")
# The recompute policies it offers by name (--recompute-granularity, --recompute-modules,
# --recompute-method and --recompute-num-layers); any set of RECOMPUTE_MODULES is one too.
RECOMPUTE = ("selective:core_attn", "selective:core_attn,mlp", "selective:core_attn,moe_act",
             "selective:core_attn,moe", "full", "full:uniform:1", "full:block:1")  # fmt: skip
