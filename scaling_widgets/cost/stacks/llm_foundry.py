"""MosaicML's llm-foundry on Composer: PyTorch FSDP (the first API), flash attention.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``mosaicml/llm-foundry@8c8dd48f72168c5d51e2f7b151595892a8fba43d,
   llmfoundry/command_utils/train.py`` (``train``: its ``compile_config``, which
   scripts/train/train.py held before July 2024).
"""

NAME, ORDER = "llm-foundry", 5
# torch.compile through Composer: llm-foundry's ``compile_config`` (scripts/train/train.py).
TORCH_COMPILE = True
PIPELINE_SCHEDULES = ()  # FSDP alone: no pipeline
TORCH_ADAM = True  # Composer's DecoupledAdamW, built on torch.optim's
NO_SYNC = True  # PyTorch FSDP's no_sync
# FULL_SHARD with mixed precision: fp32 sharded weights (the master copy), gradients and Adam,
# bf16 gathered for compute (Composer's FSDP defaults, llm-foundry's yamls); the loss in fp32;
# its memory monitor reports the allocator's reserved peak. Its torch attention (attn_impl torch)
# takes torch.softmax under autocast, in fp32, and keeps that beside the bf16 copy its matmul reads
# (llmfoundry/models/layers/attention.py: "attn_weight.to(v.dtype).matmul(v)";
# mosaicml/llm-foundry@8c8dd48). Its GLU, uncompiled, keeps the activation's output for the
# multiplication (llmfoundry/models/layers/ffn.py: "self.act(self.gate_proj(x)) ... *
# self.up_proj(x)").
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="attention",
    logits_bytes=12.0,
    softmax_bytes=4.0,
    eager_glu=True,
    measures="reserved",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-07) on 14 runs on A100 and H100 (llm-foundry's
# benchmarking tables). On a bound: kappa = 200 (upper), its norms and activations unfused (no
# torch.compile in those tables) and FSDP1's copies in and out of its flat buffers.
BEHAVIOUR = dict(
    kernel_share=0.9432,
    kappa=200,
    kappa_scores=10.13,
    o_tp=0.1991,
    o_dp=0.7536,
    o_dcn=0.4777,
    layer_overhead=5.504e-07,
    step_overhead=0.1144,
)
# activation_checkpointing: true recomputes each block whole
RECOMPUTE = ("full",)
