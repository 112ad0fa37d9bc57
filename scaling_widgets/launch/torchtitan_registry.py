"""torchtitan's Python configs: the functions of a ``config_registry.py`` (pytorch/torchtitan#2386
on, 2026) that each build a ``Trainer.Config``, read by walking their syntax tree, never run, into
the keys of the job TOML that came before them (``formats/torchtitan.py`` prices those).

A function is followed as far as a config is plain data: keyword arguments, numbers and their
arithmetic, lists, another config function of the file it starts from, and ``config.a.b = value``
after it. What only code computes is left unread; where the cost needs it, it is refused by name.

References
----------
.. [1] ``pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a``:
   ``torchtitan/models/llama3/config_registry.py`` (a registry), ``torchtitan/config/configs.py``
   (``TrainingConfig``: num_tokens_per_microbatch_per_dp_rank 16384, num_tokens_per_train_step -1,
   max_context_length 2048; ``ParallelismConfig``: num_pp_microbatches 1; ``CompileConfig``),
   ``torchtitan/trainer.py`` (``Trainer.Config``: activation_checkpoint SelectiveAC by default)
   and ``torchtitan/distributed/activation_checkpoint.py`` (``FullAC``, ``SelectiveAC``: every
   op saved but every second matmul, ``MemoryBudgetAC``).
"""

from __future__ import annotations

import ast
import copy
import difflib
import operator

from ..cost.ground.refusals import refuse
from .keys import schema

# the model families torchtitan's registries build, by the prefix of their functions' names, and
# by the model class a registry imports
FAMILIES = ("deepseek_v3", "llama3", "llama4", "qwen3", "gpt_oss")
MODEL_CLASSES = {"Llama3Model": "llama3", "Llama4Model": "llama4", "Qwen3Model": "qwen3",
                 "DeepSeekV3Model": "deepseek_v3", "GptOssModel": "gpt_oss"}  # fmt: skip
# the linear converters, as the job TOML named them (model.converters)
CONVERTERS = {"Float8LinearConverter": "float8", "MXFP8LinearConverter": "mx",
              "NVFP4LinearConverter": "nvfp4", "LoRAConverter": "lora"}  # fmt: skip
AC_MODES = {"FullAC.Config": "full", "SelectiveAC.Config": "selective"}
# settings of the registries' era that the job TOML had no key for and that change the cost:
# refused unless at torchtitan's default
REGISTRY_UNPRICED = {"parallelism.enable_sequence_parallel": True}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv}  # fmt: skip


class Unread(str):
    """A value only code computes: its source, as a refusal shows it."""


def registry_table(text: str, name: str | None) -> tuple[dict, list[str], list[str]]:
    """The config ``name`` of a registry as the job TOML's keys, what of it costs nothing, and what
    was approximated.

    Parameters
    ----------
    text : str
        The registry's Python source.
    name : str or None
        The function that builds the config; None is refused with the list of them.

    Returns
    -------
    table : dict
        The job TOML's keys ("model.name", "training.seq_len", "parallelism.…") -> values.
    ignored : list of str
        The config's settings the job TOML has no key for, none of which changes the cost.
    notes : list of str
        What the reading approximated, one line each.

    Raises
    ------
    InputError
        Without a config's name, or with one the file has not; for a value the cost needs that
        only code computes, or a setting that is not priced.
    """
    functions = _functions(text)
    names = [f.name for f in functions.values() if _builds_config(f)]
    if name not in names:
        near = difflib.get_close_matches(name or "", names, n=1)
        allowed = f"FILE:NAME, NAME one of its configs ({', '.join(names)})"
        raise refuse("config", allowed + (f"; did you mean {near[0]}?" if near else ""), name)
    config = _Walk(functions).built(name)
    notes: list[str] = []
    table = {"model.name": _family(name, text)}
    table |= _model(config.get("model_spec"), notes)
    table |= _batch(_section(config, "training"), _section(config, "parallelism"))
    table |= _recompute(config.get("activation_checkpoint", {"__kind__": "SelectiveAC.Config"}))
    table |= _compiled(_section(config, "compile"))
    if isinstance(config.get("hf_assets_path"), str) and not isinstance(
        config["hf_assets_path"], Unread
    ):
        table["model.hf_assets_path"] = config["hf_assets_path"]
    for key, default in REGISTRY_UNPRICED.items():
        if table.get(key, default) != default:
            raise refuse(key, f"{default!r}: another setting is not priced", table[key])
    known = schema("torchtitan")
    return {k: v for k, v in table.items() if k in known}, sorted(set(table) - set(known)), notes


def _functions(text: str) -> dict:
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        allowed = f"Python torchtitan reads (line {err.lineno}: {err.msg})"
        raise refuse("config", allowed, "a file") from None
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


def _builds_config(function: ast.FunctionDef) -> bool:
    return function.returns is not None and ast.unparse(function.returns) == "Trainer.Config"


class _Walk:
    """A registry's config functions, followed statement by statement as plain data."""

    def __init__(self, functions: dict):
        self.functions = functions

    def built(self, name: str, depth: int = 0) -> dict:
        """The ``Trainer.Config`` function ``name`` returns, as nested dicts."""
        if depth > 8:
            raise refuse("config", "config functions that do not call each other in a loop", name)
        env: dict = {}
        for statement in self.functions[name].body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                targets = getattr(statement, "targets", None) or [statement.target]
                for target in targets:
                    _assign(target, self.value(statement.value, env, depth), env)
            elif isinstance(statement, ast.Return) and statement.value is not None:
                built = self.value(statement.value, env, depth)
                if isinstance(built, dict):
                    return built
                raise refuse(f"config {name}", "a Trainer.Config built from data", _shown(built))
        raise refuse(f"config {name}", "a function that returns its Trainer.Config", None)

    def value(self, node, env: dict, depth: int):
        """A node's value where it is data; ``Unread`` where only code computes it."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, env, depth) for e in node.elts]
        if isinstance(node, ast.Name):
            return env.get(node.id, Unread(node.id))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.value(node.operand, env, depth)
            return -operand if _number(operand) else Unread(ast.unparse(node))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            a, b = self.value(node.left, env, depth), self.value(node.right, env, depth)
            ok = _number(a) and _number(b) and not (b == 0 and type(node.op) is not ast.Mult)
            return _ARITHMETIC[type(node.op)](a, b) if ok else Unread(ast.unparse(node))
        if isinstance(node, ast.Call):
            return self.call(node, env, depth)
        return Unread(ast.unparse(node))

    def call(self, node: ast.Call, env: dict, depth: int):
        """Another config function's config, or a constructor's arguments by name."""
        called = ast.unparse(node.func)
        if called in self.functions and _builds_config(self.functions[called]):
            return copy.deepcopy(self.built(called, depth + 1))
        given = {k.arg: self.value(k.value, env, depth) for k in node.keywords if k.arg}
        args = [self.value(a, env, depth) for a in node.args]
        return {"__kind__": called, "__args__": args, "__source__": ast.unparse(node)} | given


def _assign(target, value, env: dict) -> None:
    """``x = value``, or ``config.a.b = value`` into the config ``config`` names."""
    if isinstance(target, ast.Name):
        env[target.id] = value
        return
    path = []
    while isinstance(target, ast.Attribute):
        path.insert(0, target.attr)
        target = target.value
    if not isinstance(target, ast.Name) or not isinstance(env.get(target.id), dict):
        return  # an attribute of something that is no config: no cost of ours
    node = env[target.id]
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            return
    node[path[-1]] = value


def _section(config: dict, key: str) -> dict:
    """A section of the config (``TrainingConfig(...)`` as its arguments), {} where not given;
    each of its settings data, or refused by name."""
    section = config.get(key, {})
    if not isinstance(section, dict):
        raise refuse(key, "a config built from data", _shown(section))
    for name, value in section.items():
        if not name.startswith("__") and not _plain(value):
            raise refuse(f"{key}.{name}", "a value the file gives (not code)", _shown(value))
    return section


def _plain(value) -> bool:
    """Data: a number, a string, a truth value or None, or a list of them."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return not isinstance(value, (Unread, dict))


def _shown(value) -> str:
    """A value as a refusal shows it: a call by its source, shortened."""
    text = value.get("__source__", str(value)) if isinstance(value, dict) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _family(name: str, text: str) -> str:
    """The model family: by the config's name (llama3_8b), else by the model class imported."""
    for family in FAMILIES:
        if name.startswith(family):
            return family
    for model_class, family in MODEL_CLASSES.items():
        if model_class in text:
            return family
    raise refuse("model.name", f"a family of torchtitan's ({', '.join(FAMILIES)})", name)


def _model(spec, notes: list) -> dict:
    """``model_registry("8B", converters=[…])``: the flavor and the converters."""
    if not isinstance(spec, dict) or spec.get("__kind__") != "model_registry":
        raise refuse("model_spec", 'model_registry("<flavor>") of the file', _shown(spec))
    flavor = (spec.get("__args__") or [None])[0]
    if not isinstance(flavor, str):
        raise refuse("model_spec", "a flavor named as a string", _shown(flavor))
    kinds = [c.get("__kind__", "") for c in spec.get("converters", []) if isinstance(c, dict)]
    converters = [CONVERTERS.get(kind.removesuffix(".Config"), kind) for kind in kinds]
    for option in ("attn_backend", "tp_gemm_backend"):
        if option in spec:
            notes.append(f"model_registry's {option} {spec[option]!r}: charged as the default")
    return {"model.flavor": flavor, **({"model.converters": converters} if converters else {})}


def _batch(training: dict, parallelism: dict) -> dict:
    """Tokens a microbatch and a step as the job TOML's sequences: the local batch (a data rank's
    microbatches of a step under pipelining), the global one, and the pipeline's microbatch."""
    seq = _given(training, "max_context_length", 2048, "training")
    tokens = _given(training, "num_tokens_per_microbatch_per_dp_rank", 16384, "training")
    if tokens % seq:
        key = "training.num_tokens_per_microbatch_per_dp_rank"
        raise refuse(key, f"whole sequences of max_context_length {seq}", tokens)
    micro, step = tokens // seq, _given(training, "num_tokens_per_train_step", -1, "training")
    parallel = {f"parallelism.{k}": v for k, v in parallelism.items() if k[:2] != "__"}
    pipelined = parallel.pop("parallelism.pipeline_parallel_degree", 1) > 1
    microbatches = parallel.pop("parallelism.num_pp_microbatches", 1)
    table = {
        "training.seq_len": seq,
        "training.local_batch_size": micro * (microbatches if pipelined else 1),
        "training.global_batch_size": step // seq if step != -1 else -1,
        "parallelism.pipeline_parallel_degree": parallelism.get("pipeline_parallel_degree", 1),
        **parallel,
        **({"parallelism.pipeline_parallel_microbatch_size": micro} if pipelined else {}),
    }
    read = (
        "num_tokens_per_microbatch_per_dp_rank",
        "max_context_length",
        "num_tokens_per_train_step",
    )
    other = {f"training.{k}": v for k, v in training.items() if k not in read and k[:2] != "__"}
    return table | other


def _given(section: dict, key: str, default, name: str):
    value = section.get(key, default)
    if not _number(value):
        raise refuse(f"{name}.{key}", "a number the file gives (not code)", _shown(value))
    return value


def _recompute(policy) -> dict:
    """The activation checkpointing as the job TOML's mode: FullAC full, SelectiveAC selective by
    op (every op saved but every second matmul), None none."""
    if policy is None:
        return {"activation_checkpoint.mode": "none"}
    kind = policy.get("__kind__") if isinstance(policy, dict) else str(policy)
    if kind not in AC_MODES:
        allowed = "FullAC, SelectiveAC or None (MemoryBudgetAC is not priced)"
        raise refuse("activation_checkpoint", allowed, kind)
    mode = AC_MODES[kind]
    return {"activation_checkpoint.mode": mode} | (
        {"activation_checkpoint.selective_ac_option": "op"} if mode == "selective" else {}
    )


def _compiled(compile_config: dict) -> dict:
    """``CompileConfig(enable, components, enable_async_tensor_parallel)`` as the job TOML's keys
    (async TP was a parallelism key there)."""
    table = {
        f"compile.{k}": compile_config[k] for k in ("enable", "components") if k in compile_config
    }
    if compile_config.get("enable_async_tensor_parallel"):
        table["parallelism.enable_async_tensor_parallel"] = True
    return table
