"""The command lines whose output the golden test holds: every strategy, pipeline schedule,
software stack and launch format, through estimate (text and JSON), plan, map, export, compare and
--config. ``refresh.py`` writes what each prints; ``test_golden.py`` checks it is unchanged."""

import shlex
from pathlib import Path

DATA = Path(__file__).parent.parent / "data"
CONFIGS = DATA / "configs"
SAVED = DATA / "golden" / "scenarios"  # scenarios saved from the panel, for compare

TPU_13B = "--model llama-2-13b --hardware tpu-v5p --mesh 16x16x16"
H100_70B = "--model llama-3-70b --hardware h100 --chips 512 --batch 4194304 --seq-len 8k"
MOE = "--model deepseek-v3 --hardware h100 --chips 2048 --batch 16777216 --seq-len 4k"
PLAN = "--model llama-3-70b --hardware h100 --chips 256 --batch 4194304 --seq-len 8192"

ESTIMATES = {
    # the chapter's strategies, at an MFU given and predicted, and what it leaves out
    "chapter_fsdp_tp": f"{TPU_13B} --batch 4194304 --seq-len 4096 --strategy fsdp+tp --mfu 0.4",
    "chapter_dp": f"{TPU_13B} --batch 3M --seq-len 512 --strategy dp --mfu 0.4",
    "chapter_fsdp": f"{TPU_13B} --batch 3M --seq-len 512 --strategy fsdp",
    "chapter_tp": "--model llama-2-7b --hardware tpu-v5e --mesh 4x4 --pods 2 --batch 1M "
    "--seq-len 4096 --strategy tp",
    "tokens_and_run": f"{TPU_13B} --batch 4M --seq-len 4k --tokens 2T --price-per-chip-hour 2.5",
    "exact_corrections": f"{TPU_13B} --batch 2M --seq-len 2k --ring-factor "
    "--halve-without-wraparound --latency 1e-5 --attention-flops",
    # every pipeline schedule, each under a stack
    "gpipe_deepspeed": f"{H100_70B} --pp 4 --schedule gpipe --stack deepspeed --zero 1",
    "1f1b_megatron": f"{H100_70B} --tp 8 --pp 4 --schedule 1f1b --stack megatron-lm "
    "--remat selective --sequence-parallel",
    "interleaved_megatron": f"{H100_70B} --pp 4 --schedule interleaved --virtual-stages 2 "
    "--stack megatron-lm",
    "zb_h1_fsdp2": f"{H100_70B} --tp 8 --pp 4 --zero 1 --schedule zb-h1 --stack fsdp2 --remat full",
    "zb_h2_llm_foundry": f"{H100_70B} --tp 8 --pp 4 --zero 1 --schedule zb-h2 "
    "--stack llm-foundry --remat full",
    "zbv_fsdp2_compile": f"{H100_70B} --tp 8 --pp 4 --zero 1 --schedule zbv --stack fsdp2 "
    "--torch-compile on --remat full",
    "dualpipe_moe": f"{MOE} --ep 64 --pp 16 --zero 1 --schedule dualpipe --tp 1 "
    "--stack megatron-lm --matmul-dtype fp8",
    "dualpipev_moe": f"{MOE} --ep 64 --pp 16 --zero 1 --schedule dualpipev --tp 1 "
    "--stack megatron-lm",
    "megatron_2021": "--model gpt-3-175b --hardware a100 --chips 1024 --batch 3145728 "
    "--seq-len 2048 --tp 8 --pp 8 --zero 0 --schedule interleaved --virtual-stages 4 "
    "--stack megatron-lm-2021 --flash-attention off",
    "nanotron_ddp": "--model llama-3-8b --hardware h100 --chips 256 --batch 1M --seq-len 4k "
    "--tp 8 --zero 0 --stack nanotron",
    "maxtext_tpu": "--model llama-2-70b --hardware tpu-v5e --mesh 16x16 --pods 2 --batch 2M "
    "--seq-len 4k --strategy fsdp --stack maxtext --remat full",
    # expert and context parallelism, racks of GB200, a measured step
    "moe_etp_fold": "--model mixtral-8x7b --hardware h100 --chips 256 --batch 4194304 "
    "--seq-len 4k --ep 8 --etp 1 --tp 4 --ep-overlap --stack megatron-lm",
    "long_context_cp": "--model llama-3-405b --hardware h100 --chips 2048 --batch 16M "
    "--seq-len 128k --dp 16 --cp 16 --tp 8 --cp-kind all-gather",
    "gb200_racks": "--model qwen3-235b-a22b --hardware gb200-nvl72 --chips 128 --batch 2M "
    "--seq-len 4k --ep 16 --zero 1",
    # 4M tokens: rounded to whole sequences, with a note
    "measured_step": "--model llama-3-70b --hardware h100 --chips 512 --batch 4M --seq-len 8k "
    "--tp 8 --measured-step-time 9.5",
}

READ_CONFIGS = {  # a framework's own file, on the hardware it names
    "config_torchtitan_llama3_8b": "torchtitan_llama3_8b.toml --hardware a100 --chips 64",
    "config_megatron_mixtral_8x7b": "megatron_mixtral_8x7b.sh --hardware h100 --chips 64",
    "config_maxtext_v5p_llama2_7b": "maxtext_v5p_llama2_7b.sh --hardware tpu-v5p --mesh 8x8x4",
    "config_llm_foundry_mpt_7b": "llm-foundry_mpt_7b.yaml --hardware a100 --chips 8",
}

OTHERS = {
    "plan_h100": f"plan {PLAN} --top 5",
    "plan_h100_json": f"plan {PLAN} --top 3 --json",
    "plan_tpu_wall": "plan --model llama-3-8b --hardware tpu-v5e --mesh 16x16 --batch 1M "
    "--seq-len 4k --tokens 1T --rank-by wall --top 5",
    "plan_export_torchtitan": f"plan {PLAN} --export-to torchtitan --rank 2",
    "export_megatron": f"export --to megatron {H100_70B} --tp 8 --pp 4 --schedule interleaved "
    "--virtual-stages 2",
    "export_maxtext": "export --to maxtext --model llama-2-70b --hardware tpu-v5p --mesh 16x16x8 "
    "--batch 4194304 --seq-len 4k --strategy fsdp",
    "export_torchtitan_moe": f"export --to torchtitan {MOE} --ep 64 --pp 16 --zero 1 --tp 1",
    "export_llm_foundry": "export --to llm-foundry --model llama-2-7b --hardware a100 --chips 64 "
    "--batch 2097152 --seq-len 2k --strategy fsdp --remat full",
    "map_small": "map --model llama-3-8b --hardware h100 --cells 4x5 --remat none --schedule 1f1b",
    "map_small_json": "map --model llama-3-8b --hardware tpu-v5e --cells 3x3 "
    "--batches 256K..16M --chip-range 16..256 --json",
    "compare": f"compare {SAVED / 'a.json'} {SAVED / 'b.json'}",
    "compare_json": f"compare {SAVED / 'a.json'} {SAVED / 'b.json'} --json",
}


def command_lines() -> dict[str, list[str]]:
    """Every golden command line by file name: each estimate as text and as JSON, then the
    rest."""
    estimates = {**ESTIMATES}
    for name, config in READ_CONFIGS.items():
        estimates[name] = f"--config {CONFIGS / config}"
    lines = {}
    for name, flags in estimates.items():
        lines[f"{name}.txt"] = ["estimate", *shlex.split(flags)]
        lines[f"{name}.json"] = ["estimate", *shlex.split(flags), "--json"]
    for name, argv in OTHERS.items():
        lines[f"{name}.{'json' if '--json' in argv else 'txt'}"] = shlex.split(argv)
    return lines
