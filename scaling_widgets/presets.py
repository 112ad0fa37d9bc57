"""Hardware, model and precision presets: data only, one cited source per number.

Keys are lowercase-hyphen names. Your own chip or model is a ``Chip(...)`` or ``Model(...)``
passed where a preset would go, or a JSON file (see ``scaling_widgets.catalog``).
"""

from __future__ import annotations

from .cost.hardware.chip import Chip
from .cost.transformer.shapes import BOOK_PRECISION, MLA, Model, MoE, Precision

# TPU numbers: MODEL.md §A.7, from the Scaling Book's TPU chapter and Google Cloud's TPU pages.
# ici_bw is W_ici, bidirectional per axis = 2 x the one-way link bandwidth. hbm_bytes is the
# chapter's; hbm_limit what XLA lets a program allocate (the device's bytes_limit): v5p 95.74 GiB
# (MaxText's docs/guides/monitoring_and_debugging/understand_logs_and_metrics.md, "Using (GB)
# 44.63 / 95.74"), v6e 31.25 GiB and v5e 15.75 GiB (XLA's "Used ...G of 31.25G hbm" and "of
# 15.75G hbm" in public compile errors, e.g. EnzymeAD/Enzyme-JAX#2422), v4 30.75 GiB ("Used
# 87.08G of 30.75G hbm", young-geng/EasyLM#98).
_TPUS = (
    Chip(
        "TPU v4p",
        id="tpu-v4p",
        flops=2.75e14,  # bf16
        hbm_bytes=32e9,
        hbm_limit=30.75 * 2**30,
        hbm_bw=1.2e12,
        ici_bw=2 * 4.5e10,
        pod_shape=(16, 16, 16),
        dcn_bw=6.25e9,  # not in the book; MODEL.md §A.7 assumes v5p's
        wraparound="cube",
    ),
    Chip(
        "TPU v5e",
        id="tpu-v5e",
        flops=1.97e14,
        hbm_bytes=16e9,
        hbm_limit=15.75 * 2**30,
        hbm_bw=8.2e11,
        ici_bw=2 * 4.5e10,
        pod_shape=(16, 16),
        dcn_bw=3.125e9,
        wraparound="full-axis",
    ),
    Chip(
        "TPU v5p",
        id="tpu-v5p",
        flops=4.59e14,  # MODEL.md §A.7: not the superseded 4.46e14 of older text
        hbm_bytes=96e9,
        hbm_limit=95.74 * 2**30,
        hbm_bw=2.8e12,
        ici_bw=2 * 9e10,
        pod_shape=(16, 20, 28),  # 8960 chips
        dcn_bw=6.25e9,  # 25 GB/s per host over 4 chips (the chapter, "Scaling Across Pods")
        wraparound="cube",
    ),
    Chip(
        "TPU v6e",
        id="tpu-v6e",
        flops=9.20e14,
        hbm_bytes=32e9,
        hbm_limit=31.25 * 2**30,
        hbm_bw=1.6e12,
        ici_bw=2 * 9e10,
        pod_shape=(16, 16),
        dcn_bw=1.25e10,
        wraparound="full-axis",
    ),
)
# GPUs: MODEL.md §A.7 and §B.5, from NVIDIA's datasheets (H100/H200 SXM, B200, A100 SXM 80GB, GB200
# NVL72, GB300 NVL72 with Verda's per-GPU table (verda.com/blog/gb300-nvl72-architecture), V100
# SXM2 32GB) and DGX system guides; the H800 is an H100 SXM whose NVLink is cut to 400 GB/s, as
# DeepSeek trained V3 on it (DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.1:
# NVLink within a node, 400 Gb/s InfiniBand across, 50 GB/s a GPU). HBM as the frameworks see it
# (nvidia-smi, CUDA's total memory): the "80 GB" H100 has 81,559 MiB, the A100 81,920 MiB
# (modal-labs/modal-client#2797), the B200 178.35 GiB (pytorch/ao#4002); the H200 and GB200 as
# NVIDIA states them. hbm_limit is CUDA's total as PyTorch reports it where an error message says
# it: 79.11 GiB on an H100 (NVIDIA-NeMo/Automodel#2673), 79.35 GiB on an A800, an A100 80GB
# (hiyouga/LlamaFactory#1158). runtime_bytes is what a process holds outside PyTorch's allocator,
# CUDA's context and NCCL's buffers: total less reserved less free in two such messages, 1.03 GiB
# on a V100 (tatsu-lab/stanford_alpaca#223) and 1.38 GiB on an A800 (LlamaFactory#1158); every
# GPU preset takes their mean, 1.2 GiB. ici_bw is the NVLink egress per GPU (half the bidirectional
# figure), scaleout_bw the NIC per GPU, pod_shape (nodes, GPUs per node) with room for 32,768 GPUs
# (18,432 for NVL72). Between "pods" the NIC is the DCN too.
_DGX = dict(pod_shape=(4096, 8), node_size=8, wraparound="switched", runtime_bytes=1.2 * 2**30)
# PyTorch's cuBLAS workspace of a handle on Hopper and Blackwell, 4096 KiB x 8
# (CublasHandlePool.cpp, getChosenWorkspaceSize: "32MiB for Hopper and Blackwell"); the A100
# takes the default of the GPUs before them
_FROM_HOPPER = dict(blas_workspace=32 * 2**20)
_GPUS = (
    Chip(
        "A100",
        id="a100",
        flops=3.12e14,
        hbm_bytes=81_920 * 2**20,
        hbm_limit=79.35 * 2**30,
        hbm_bw=2.039e12,
        ici_bw=3e11,  # NVLink 3: 600 GB/s bidirectional
        scaleout_bw=2.5e10,
        dcn_bw=2.5e10,  # DGX A100: one 200 Gb/s HDR NIC per GPU
        **_DGX,
        power=400.0,  # A100 SXM datasheet: 400 W TDP
    ),
    Chip(
        "A100 40GB",
        id="a100-40gb",
        flops=3.12e14,
        hbm_bytes=40_960 * 2**20,  # nvidia-smi's 40,960 MiB
        hbm_limit=39.59 * 2**30,  # PyTorch's out-of-memory message: "39.59 GiB total capacity"
        hbm_bw=1.555e12,  # A100 SXM4 40GB datasheet: HBM2, 1,555 GB/s
        ici_bw=3e11,
        scaleout_bw=2.5e10,
        dcn_bw=2.5e10,  # DGX A100 (the 320 GB system): one 200 Gb/s HDR NIC per GPU
        **_DGX,
        power=400.0,
    ),
    Chip(
        "H100",
        id="h100",
        flops=9.9e14,
        flops_fp8=1.979e15,  # dense fp8, the datasheet's 3,958 TFLOP/s with sparsity halved
        hbm_bytes=81_559 * 2**20,
        hbm_limit=79.11 * 2**30,
        hbm_bw=3.35e12,
        ici_bw=4.5e11,  # NVLink 4: 900 GB/s bidirectional
        scaleout_bw=5e10,
        dcn_bw=5e10,  # DGX H100: one 400 Gb/s NIC per GPU, 400 GB/s per node
        **_DGX,
        **_FROM_HOPPER,
        power=700.0,  # H100 SXM datasheet: up to 700 W
    ),
    Chip(
        "H100 96GB",
        id="h100-96gb",
        flops=9.9e14,
        flops_fp8=1.979e15,
        hbm_bytes=96 * 2**30,  # torchtitan's Qwen3 32B config: "8 H100 GPUs (with 96GiB memory)"
        hbm_limit=95.0 * 2**30,  # its runs' logs: 70.20 GiB is 73.89 % of 95.0 GiB (PR #1690)
        hbm_bw=2.4e12,  # HBM2e, as Meta's Grand Teton H100s carry it
        ici_bw=4.5e11,
        scaleout_bw=5e10,
        dcn_bw=5e10,
        **_DGX,
        **_FROM_HOPPER,
        power=500.0,  # the HBM2e card's 500 W (torchtitan's H100 runs; stacks/fsdp2.py)
    ),
    Chip(
        "H800",
        id="h800",
        flops=9.9e14,
        flops_fp8=1.979e15,
        hbm_bytes=81_559 * 2**20,
        hbm_limit=79.11 * 2**30,
        hbm_bw=3.35e12,
        ici_bw=2e11,  # NVLink cut to 400 GB/s bidirectional (DeepSeek measured 160 GB/s of it)
        scaleout_bw=5e10,
        dcn_bw=5e10,  # eight 400 Gb/s InfiniBand NICs a node, one a GPU
        **_DGX,
        **_FROM_HOPPER,
        power=700.0,
    ),
    Chip(
        "H200",
        id="h200",
        flops=9.9e14,
        flops_fp8=1.979e15,
        hbm_bytes=141e9,
        hbm_bw=4.8e12,
        ici_bw=4.5e11,
        scaleout_bw=5e10,
        dcn_bw=5e10,
        **_DGX,
        **_FROM_HOPPER,
        power=700.0,  # H200 SXM datasheet: up to 700 W
    ),
    Chip(
        "B200",
        id="b200",
        flops=2.25e15,
        flops_fp8=4.5e15,  # dense fp8
        hbm_bytes=178.35 * 2**30,
        hbm_bw=8e12,
        ici_bw=9e11,  # NVLink 5: 1.8 TB/s bidirectional
        scaleout_bw=5e10,
        dcn_bw=5e10,  # MODEL.md §A.7: the same 400 GB/s per node
        **_DGX,
        **_FROM_HOPPER,
        power=1000.0,  # HGX B200 datasheet: 1,000 W a GPU
    ),
    Chip(
        "GB200 NVL72",
        id="gb200-nvl72",
        flops=2.5e15,  # 180 PFLOP/s dense bf16 over 72 GPUs
        flops_fp8=5e15,  # 360 PFLOP/s dense fp8 over 72 GPUs
        hbm_bytes=186e9,
        hbm_bw=8e12,  # 13.4 TB over 72 GPUs
        ici_bw=9e11,  # one NVLink domain of 72 GPUs at 900 GB/s each (MODEL.md §A.7)
        scaleout_bw=5e10,
        dcn_bw=5e10,  # assumed: a 400 Gb/s NIC per GPU, as on DGX
        pod_shape=(256, 72),
        node_size=72,
        wraparound="switched",
        runtime_bytes=1.2 * 2**30,
        **_FROM_HOPPER,
        power=1200.0,  # GB200 NVL72 datasheet: up to 1,200 W a GPU
    ),
    Chip(
        "GB300 NVL72",
        id="gb300-nvl72",
        flops=2.5e15,  # 360 PFLOP/s bf16 over 72 GPUs, the datasheet's sparse figure halved
        flops_fp8=5e15,  # 720 PFLOP/s fp8 over 72 GPUs, halved
        hbm_bytes=279e9,  # the 288 GB HBM3e as a GB300 node reports it (Verda's per-GPU table)
        hbm_bw=8e12,  # 576 TB/s over 72 GPUs
        ici_bw=9e11,  # NVLink 5 as the GB200's: 130 TB/s over 72 GPUs, bidirectional
        scaleout_bw=1e11,
        dcn_bw=1e11,  # a ConnectX-8 SuperNIC of 800 Gb/s a GPU
        pod_shape=(256, 72),
        node_size=72,
        wraparound="switched",
        runtime_bytes=1.2 * 2**30,
        **_FROM_HOPPER,
        power=1400.0,  # Blackwell Ultra: up to 1,400 W a GPU
    ),
    Chip(
        "V100 32GB",
        id="v100",
        flops=1.25e14,  # tensor cores in fp16 (no bf16 on Volta)
        hbm_bytes=32_510 * 2**20,  # nvidia-smi's 32,510 MiB
        hbm_limit=31.75 * 2**30,  # PyTorch's out-of-memory message: "31.75 GiB total capacity"
        hbm_bw=9e11,  # HBM2, 900 GB/s
        ici_bw=1.5e11,  # NVLink 2: 300 GB/s bidirectional
        scaleout_bw=6.25e9,
        dcn_bw=6.25e9,  # DGX-1: four 100 Gb/s EDR InfiniBand ports for 8 GPUs
        **_DGX,
        power=300.0,  # V100 SXM2 datasheet: 300 W
    ),
)
HARDWARE = {chip.id: chip for chip in (*_TPUS, *_GPUS)}
"""Chips by their id (MODEL.md §A.7, §B.5); a chip's name is for display only."""

# Dimensions from each model's published config.json (Hugging Face hub) and paper.
MODELS = {
    # Touvron et al. 2023, "Llama 2", Table 1; meta-llama/Llama-2-*-hf config.json
    "llama-2-7b": Model(
        "LLaMA-2 7B",
        layers=32,
        d_model=4096,
        d_ff=11008,
        heads=32,
        kv_heads=32,
        head_dim=128,
        vocab=32000,
    ),
    "llama-2-13b": Model(
        "LLaMA-2 13B",
        layers=40,
        d_model=5120,
        d_ff=13824,
        heads=40,
        kv_heads=40,
        head_dim=128,
        vocab=32000,
    ),
    "llama-2-70b": Model(
        "LLaMA-2 70B",
        layers=80,
        d_model=8192,
        d_ff=28672,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=32000,
    ),
    # Grattafiori et al. 2024, "The Llama 3 Herd of Models", Table 3; meta-llama/Meta-Llama-3*-*B
    # config.json
    "llama-3-8b": Model(
        "LLaMA-3 8B",
        layers=32,
        d_model=4096,
        d_ff=14336,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
    ),
    "llama-3-70b": Model(
        "LLaMA-3 70B",
        layers=80,
        d_model=8192,
        d_ff=28672,
        heads=64,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
    ),
    "llama-3-405b": Model(
        "LLaMA-3 405B",
        layers=126,
        d_model=16384,
        d_ff=53248,
        heads=128,
        kv_heads=8,
        head_dim=128,
        vocab=128256,
    ),
    # Gemma Team 2024, "Gemma", Table 1; google/gemma-7b config.json. The paper's "feedforward
    # hidden dims 49152" counts the gate and up projections together (2 x 24576), and the
    # chapter's TP example (MODEL.md §A.8 example 7) uses that 49152.
    "gemma-7b": Model(
        "Gemma 7B",
        layers=28,
        d_model=3072,
        d_ff=24576,
        heads=16,
        kv_heads=16,
        head_dim=256,
        vocab=256000,
        tied_embeddings=True,
    ),
    # Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1 (d_ff = 4 d_model,
    # GPT-2's 50257-token BPE vocabulary and tied embeddings); ungated GELU MLP.
    "gpt-3-175b": Model(
        "GPT-3 175B",
        layers=96,
        d_model=12288,
        d_ff=49152,
        heads=96,
        kv_heads=96,
        head_dim=128,
        vocab=50257,
        gated=False,
        tied_embeddings=True,
    ),
    # Mixtures of experts (MODEL.md §D.1), each from its config.json on the Hugging Face hub.
    # mistralai/Mixtral-8x7B-v0.1: 8 experts of 14336, top 2; 46.7B in total, 12.9B active.
    "mixtral-8x7b": Model(
        "Mixtral 8x7B",
        layers=32,
        d_model=4096,
        d_ff=14336,
        heads=32,
        kv_heads=8,
        head_dim=128,
        vocab=32000,
        moe=MoE(experts=8, top_k=2, d_ff=14336),
    ),  # fmt: skip
    # mistralai/Mixtral-8x22B-v0.1: 8 experts of 16384, top 2; 141B in total, 39B active.
    "mixtral-8x22b": Model(
        "Mixtral 8x22B",
        layers=56,
        d_model=6144,
        d_ff=16384,
        heads=48,
        kv_heads=8,
        head_dim=128,
        vocab=32000,
        moe=MoE(experts=8, top_k=2, d_ff=16384),
    ),  # fmt: skip
    # Qwen/Qwen3-30B-A3B: 128 experts of 768, top 8, every layer MoE; 30.5B in total, 3.3B active.
    "qwen3-30b-a3b": Model(
        "Qwen3-30B-A3B",
        layers=48,
        d_model=2048,
        d_ff=6144,
        heads=32,
        kv_heads=4,
        head_dim=128,
        vocab=151936,
        moe=MoE(experts=128, top_k=8, d_ff=768),
    ),  # fmt: skip
    # Qwen/Qwen3-235B-A22B: 128 experts of 1536, top 8, every layer MoE; 235B in total, 22B active.
    "qwen3-235b-a22b": Model(
        "Qwen3-235B-A22B",
        layers=94,
        d_model=4096,
        d_ff=12288,
        heads=64,
        kv_heads=4,
        head_dim=128,
        vocab=151936,
        moe=MoE(experts=128, top_k=8, d_ff=1536),
    ),  # fmt: skip
    # deepseek-ai/DeepSeek-V3 (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", sec. 4.2): 61
    # layers, the first 3 dense (18432), then 256 routed experts of 2048, top 8, and 1 shared;
    # multi-head latent attention. 671B in total, 37B active; one multi-token-prediction module
    # (sec. 2.2), 11.6B of its own beside them (13.5B with the copies of the embeddings and output
    # layer the hub stores with it: its 685B). head_dim: the mean of the query-key (192) and value
    # (128) widths. Node-limited routing: a token's experts on at most 4 nodes (sec. 3.2.2).
    "deepseek-v3": Model(
        "DeepSeek-V3",
        layers=61,
        d_model=7168,
        d_ff=18432,
        heads=128,
        kv_heads=128,
        head_dim=160,
        vocab=129280,
        moe=MoE(experts=256, top_k=8, d_ff=2048, shared=1, dense_layers=3, routed_nodes=4),
        mla=MLA(
            kv_lora_rank=512,
            qk_rope_head_dim=64,
            qk_nope_head_dim=128,
            v_head_dim=128,
            q_lora_rank=1536,
        ),
        mtp_layers=1,
    ),  # fmt: skip
}
"""Models by name."""

PRECISIONS = {
    "book": BOOK_PRECISION,  # MODEL.md §A.4: bf16 weights + two fp32 Adam moments = 10 bytes/param
    # MODEL.md §B.2 after Rajbhandari et al. 2020 (ZeRO), sec. 3.1: bf16 weights and gradients,
    # fp32 master copy, momentum and variance = 2 + 2 + 12 = 16 bytes/param
    "mixed-adam": Precision("mixed-adam", weight_bytes=2, grad_bytes=2, optimizer_bytes=12),
}
"""Precision and optimizer policies by name."""
