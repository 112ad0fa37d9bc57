"""Hugging Face's nanotron: bf16 weights, an fp32 gradient accumulator, its own ZeRO-1.

References
----------
.. [1] docs/MODEL.md §E.1 (what the peak holds), §E.2 (stacks) and §F.2 (stack behaviour).
.. [2] ``huggingface/nanotron@9055c664, src/nanotron/optim/gradient_accumulator.py``
   (``FP32GradientAccumulator``: "grad buffers for all model's parameters, independently of ZeRO
   sharding"; the fp32 copy of the parameters this rank updates).
.. [3] ``huggingface/nanotron@67c5ebb6, src/nanotron/trainer.py`` (``make_ddp``: torch DDP
   without ZeRO, its ``bucket_cap_mb`` and no ``gradient_as_bucket_view``) and
   ``src/nanotron/helpers.py`` (``init_optimizer_and_grad_accumulator``: torch's AdamW, fused
   by ``torch_adam_is_fused``; ``log_throughput``: world rank 0 writes the peak reserved).
.. [4] ``huggingface/nanotron@9055c664, src/nanotron/models/llama.py`` (``GLUActivation``,
   ``LlamaModel.forward_with_hidden_states``: the logits cast to fp32; ``Loss``) and
   ``src/nanotron/parallel/tensor_parallel/functional.py`` (``_ShardedCrossEntropy``).
.. [5] ``huggingface/nanotron@67c5ebb6, src/nanotron/parallel/pipeline_parallel/engine.py``
   (``AllForwardAllBackwardPipelineEngine``, ``OneForwardOneBackwardPipelineEngine``) and
   ``src/nanotron/models/base.py`` (``build_model``: stages balanced by each block's cost).
.. [6] ``huggingface/nanotron@67c5ebb6, src/nanotron/optim/zero.py``
   (``ZeroDistributedOptimizer._all_gather_params``) and ``src/nanotron/distributed.py``
   (``all_gather_coalesced``: ``_flatten_dense_tensors`` of the input and of each rank's
   outputs, then ``dist.all_gather`` into that list).
"""

NAME, ORDER = "nanotron", 6
# its pipeline engines: all forwards then all backwards (GPipe's), and 1F1B [5]
PIPELINE_SCHEDULES = ("gpipe", "1f1b")
TORCH_ADAM = True  # torch.optim.AdamW [3]
# With accumulate_grad_in_fp32 (its benchmark's and examples' setting; without it DDP wraps ZeRO-1
# too, and there is no fp32 buffer or master copy): bf16 weights; an fp32 buffer that
# accumulates every parameter's gradient, also under ZeRO-1,
# where the fp32 master copy and Adam are the shard's [2] (nanotron's result table: 20.1 bytes a
# parameter allocated at a ZeRO-0 step on 8 GPUs, 1.34B parameters, job 14113488). Without
# ZeRO, torch DDP's buckets copy the bf16 gradients [3]. The loss holds the bf16 logits' fp32
# cast and its shifted copy, which becomes the softmax kept for the backward: 8 bytes a logit at
# its peak [4]. The gated MLP runs eager, "self.act(gate_states) * up_states" [4], so it keeps
# the SiLU's output too. Its benchmark reports the peak reserved on world rank 0 [3]. After Adam,
# its ZeRO-1 all-gathers the updated weights through flattened copies: the output list flattened
# and NCCL's flat output, 2 + 2 bytes a parameter of the stage, and the shard's input [6]; its
# fp32 gradient buffer stays all step. Not counted: each parameter's bf16 .grad, alive from a
# microbatch's backward until it is accumulated [2].
MEMORY = dict(
    weight_bytes=2.0,
    grad_bytes=4.0,
    optimizer_bytes=12.0,
    step_keeps_grads=True,
    step_gather_bytes=4.0,
    selective="attention",
    logits_bytes=8.0,
    eager_glu=True,
    ddp_buckets=True,
    measures="reserved",
)
# parallelism.recompute_layer: each decoder layer recomputed whole
RECOMPUTE = ("full",)
# No runs of its own (its benchmark is held out, ``heldout_runs.json``): the typical stack's
# behaviour, every run pooled by ``benchmarks/fit_stacks.py`` (2026-12-07, 115 runs).
BEHAVIOUR = dict(
    kernel_share=0.7428,
    kappa=16.79,
    kappa_scores=10.13,
    o_tp=0.1991,
    o_dp=0.7536,
    o_dcn=0.4777,
    layer_overhead=3.858e-07,
    step_overhead=0.1265,
)
