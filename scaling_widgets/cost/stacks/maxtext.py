"""MaxText on XLA.

References
----------
.. [1] docs/MODEL.md §B.6 (where each schedule runs), §E.1 (what the peak holds), §E.2
   (stacks) and §F.2 (stack behaviour).
.. [2] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
   src/maxtext/layers/pipeline.py`` (``NNXPipeline``).
.. [3] ``AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8,
   src/maxtext/configs/base.yml`` (``weight_dtype``, ``grad_dtype``, ``mu_dtype``).
"""

NAME, ORDER = "maxtext", 3
# Its pipeline runs every microbatch's forward through the stages, then the backward by autodiff of
# that loop (layers/pipeline.py): GPipe's order and memory.
PIPELINE_SCHEDULES = ("gpipe",)
# fp32 weights, gradients and Adam (weight_dtype, grad_dtype, mu_dtype); logits cast to fp32; XLA
# plans its buffers ahead, with no caching allocator on top.
MEMORY = dict(
    weight_bytes=4.0,
    grad_bytes=4.0,
    optimizer_bytes=8.0,
    selective="attention",
    logits_bytes=6.0,
    allocator=1.0,
    measures="allocated",
)
# Fitted by ``benchmarks/fit_stacks.py`` (2026-12-02) on 29 runs on TPU v5e, v5p, v6e and H100
# (MaxText's READMEs, tpu-recipes). On a bound: layer_overhead = 0.2 ms (upper), the most some
# tens of kernels a pass take; its runs cannot tell a layer's fixed cost from the step's (at a
# bound of 1 ms the fit takes 1 ms and lowers step_overhead to match), and it is at most 0.9 % of
# any of its runs' step. o_dcn = 0.52: the reduction across slices hides under half of the backward
# pass, so the rise of 2-11 % the v5e slices measured comes out flatter, though in the
# measured order.
BEHAVIOUR = dict(
    kernel_share=0.9359,
    kappa=58.11,
    o_tp=0.2508,
    o_dp=0.1595,
    o_dcn=0.521,
    layer_overhead=0.0001999,
    step_overhead=0.1381,
)
