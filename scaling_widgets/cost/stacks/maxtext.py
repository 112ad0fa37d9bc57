"""MaxText on XLA.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
   src/maxtext/layers/pipeline.py`` (``NNXPipeline``).
.. [3] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
   src/maxtext/configs/base.yml`` (``weight_dtype``, ``grad_dtype``, ``mu_dtype``,
   ``remat_policy``, ``decoder_layer_input``).
.. [4] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
   src/maxtext/layers/decoders.py`` (``Decoder.minimal_policy``, ``Decoder.get_remat_policy``),
   ``src/maxtext/utils/maxtext_utils.py`` (``get_save_and_offload_names``).
"""

NAME, ORDER = "maxtext", 3
# Its activations' embedding axis is sharded over the tensor axis (base.yml, logical_axis_rules:
# activation_embed -> tensor): under TP a layer's input, norms and residuals are split as under
# sequence parallelism.
TP_SEQUENCE_PARALLEL = True
# Its pipeline runs every microbatch's forward through the stages, then the backward by autodiff of
# that loop (layers/pipeline.py): GPipe's order and memory.
PIPELINE_SCHEDULES = ("gpipe",)
# fp32 weights, gradients and Adam (weight_dtype, grad_dtype, mu_dtype); logits cast to fp32; XLA
# plans its buffers ahead, with no caching allocator on top, and reuses a residual's buffer once
# the backward has read it: beside a layer's activations, only the gradients alive at once. Its
# FSDP all-gathers each weight where a matmul reads it (the SPMD partitioner's collectives), not
# a whole layer. Its loss keeps fp32 copies of the logits for the backward
# (max_utils.cross_entropy_with_logits' custom VJP): 6 bytes a logit with the matmul's bf16 output,
# as MaxText's own DeepSeek-V2 16B printout counts it. Over the HBM limit XLA recomputes those
# copies from that output, as its rematerialization pass does only past the limit (openxla/xla,
# hlo_rematerialization.h).
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="attention",
    gradients="mlp-inputs",
    gathered="weight",
    logits_bytes=6.0,
    recomputes_to_fit=True,
    allocator=1.0,
    measures="allocated",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on 29 runs on TPU v5e, v5p, v6e and H100
# (MaxText's READMEs, tpu-recipes). Nothing on a bound. o_dcn = 0.50: the reduction across slices
# hides under half of the backward pass, so the rise of 2-11 % the v5e slices measured comes out
# flatter, though in the measured order.
BEHAVIOUR = dict(
    kernel_share=0.9071,
    kappa=64.93,
    kappa_scores=10.13,
    o_tp=0.09377,
    o_dp=0.7536,
    o_dcn=0.4976,
    layer_overhead=4.203e-07,
    step_overhead=0.08028,
)
# The checkpoint names its layers give their tensors (checkpoint_name: layers/attentions.py L1323-
# 1366, attention_mla.py, linears.py L602-624, moe.py, the decoders' "decoder_layer_input"), as the
# tensors of a layer they are (transformer/recompute.py). "context" tags the flash kernel's output
# and log-sum-exp (attention_op.py L2407, splash_attention_kernel.py L1101); the MLA latents and
# Qwix's quantized copies are small beside the rest and not counted.
CHECKPOINT_NAMES = {
    "decoder_layer_input": ("input",),
    "query_proj": ("query",),
    "key_proj": ("key",),
    "value_proj": ("value",),
    "kv_proj": ("key", "value"),
    "qkv_proj": ("query", "key", "value"),
    "context": ("context",),
    "attention_out": ("context",),
    "out_proj": ("out_proj",),
    "mlpwi": ("mlp_gate", "mlp_up"),
    "mlpwi_0": ("mlp_gate",),
    "mlpwi_1": ("mlp_up",),
    "mlpwo": ("mlp_out",),
    "moe_mlpwi_0": ("mlp_gate",),
    "moe_mlpwi_1": ("mlp_up",),
    "moe_mlpwo": ("mlp_out",),
    "query_wa_proj": (),
    "kv_wa_proj": (),
    "mla_q": (),
    "mla_kv": (),
    "quantization": (),
    "indexer_cutoff_threshold": (),
}
# names the backward pass never reads: saving them is allowed, and XLA holds nothing for them
NOT_RESIDUALS = frozenset({"mlpwo", "moe_mlpwo"})
_DOTS = ("query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj", "out_proj")
_MINIMAL = (*_DOTS, "mlpwi_0", "mlpwi_1", "mlpwi", "mlpwo")
# remat_policy: the names each saves on the device (Decoder.minimal_policy and get_remat_policy,
# layers/decoders.py L326-434); the offloaded ones move theirs to host memory (maxtext_utils.py
# L229-245); "full" saves nothing but the scanned layer's input, which every policy keeps
# (base.yml L361). Since 6426085 (2025-08-20) "minimal" is this list, not every matmul without
# batch dimensions.
SAVED_BY_POLICY = {
    "minimal": _MINIMAL,
    "minimal_with_context": (*_MINIMAL, "context"),
    "minimal_flash": (*_MINIMAL, "context"),
    "minimal_with_quantization": (*_MINIMAL, "quantization"),
    "minimal_with_context_and_quantization": (*_MINIMAL, "context", "quantization"),
    "save_dot_with_context_except_mlp": (*_DOTS, "context"),
    "save_dot_except_mlpwi": (*_DOTS, "mlpwo"),
    "save_dot_except_mlp": _DOTS,
    "save_qkv_proj": ("query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj"),
    "save_out_proj": ("out_proj",),
    "qkv_proj_offloaded": ("query_proj", "value_proj", "key_proj", "kv_proj"),
    "minimal_offloaded": _MINIMAL,
}
# The recompute policies it offers by name: remat_policy's values (custom: "custom:<names>", the
# names on the device)
RECOMPUTE = ("full", "minimal", "minimal_with_context", "save_dot_except_mlpwi",
             "save_dot_except_mlp", "save_dot_with_context_except_mlp", "save_qkv_proj",
             "save_out_proj", "qkv_proj_offloaded", "minimal_offloaded")  # fmt: skip
