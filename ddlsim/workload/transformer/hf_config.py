"""Decoder shapes from transformers configs, read once, offline, without building the model.

`load_config(name)` returns a config as a plain dict: a shipped shape (``configs/hf_shapes/
<name>.yaml``: the ``config.json`` values of a public checkpoint, written by hand, with their
source), or a local directory / ``config.json`` (read with transformers' `AutoConfig`, no
download; the file itself must give the fields its family needs, `hf_fields.REQUIRED_FIELDS`).
`decoder_shape(config, seq_len)` turns it into a `DecoderShape` by family:

=============================  =====================================================================
``model_type``                 read as
=============================  =====================================================================
llama, mistral                 GQA, SwiGLU, RMSNorm, no biases (untied unless the config ties them)
qwen2                          as llama, plus biases on Q, K and V
mixtral                        as mistral, every MLP an MoE of `num_local_experts`, top-k routing
qwen2_moe                      as qwen2, MoE of `num_experts` with a gated shared expert
deepseek_v3 (and deepseek_v2)  multi-head latent attention, MoE with shared experts after the
                               first `first_k_dense_replace` dense layers
gpt2                           learned positions, tied embeddings, LayerNorm, GeLU, biases, dropout
=============================  =====================================================================

Every family but gpt2 keeps Q, K, V and gate, up as separate projections (as transformers' modules
and checkpoints lay them out: `DecoderShape.fused_projections` False, which the kernel lists
follow); GPT-2's are fused. Parameter counts are arithmetic (`DecoderShape.params`); tests check them against the models
transformers builds from the same configs on the meta device, and against the published totals.
Attention over a sliding window (Mistral 7B v0.1) is counted as full attention.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ddlsim.core.errors import ConfigError
from ddlsim.core.resources import config_file
from ddlsim.workload.transformer.hf_fields import check_fields
from ddlsim.workload.transformer.layer import LayerShape
from ddlsim.workload.transformer.shape import FLASH, DecoderShape, MlaShape, MoeShape

SHAPES_DIR = config_file("hf_shapes")
DECODER_FAMILIES = ("llama", "mistral", "qwen2", "mixtral", "qwen2_moe", "deepseek_v3", "deepseek_v2", "gpt2")
ENCODER_FAMILIES = ("bert",)


def shipped_names() -> list[str]:
    return sorted(path.stem for path in SHAPES_DIR.glob("*.yaml"))


def load_shipped(name: str) -> dict[str, Any]:
    """The whole YAML of a shipped shape: ``source``, ``published_params``, ``config``, ..."""
    import yaml

    with open(SHAPES_DIR / f"{name}.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_config(name: str) -> dict[str, Any]:
    """A shipped shape's ``config`` (with its training `seq_len`), or a local config as a dict."""
    if (SHAPES_DIR / f"{name}.yaml").is_file():
        document = load_shipped(name)
        return {**document["config"], "_seq_len": document.get("seq_len", 0)}
    path = Path(name).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return _read_local_config(path, name)
    raise ConfigError("config", name, f"is neither a shipped shape ({', '.join(shipped_names())}) nor a local "
                                      "directory or config.json")


def _read_local_config(path: Path, given: str) -> dict[str, Any]:
    """The transformers config in the file `path` (given as `given`), as a dict with its defaults filled."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError("config", given, f"is not a readable JSON config ({error})") from None
    family = document.get("model_type") if isinstance(document, dict) else None
    if not family:
        raise ConfigError("config", given, "has no `model_type` key; a transformers config.json names its family")
    check_fields(document, given)
    import transformers
    from huggingface_hub import errors as hub_errors

    # transformers' typed configs raise StrictDataclassError for a value of the wrong type
    wrong_value = (ValueError, KeyError, TypeError, getattr(hub_errors, "StrictDataclassError", TypeError))
    try:
        config = transformers.AutoConfig.for_model(family, **{k: v for k, v in document.items() if k != "model_type"})
    except wrong_value as error:
        reason = (str(error).splitlines() or [type(error).__name__])[0].split(" Should contain")[0][:160]
        raise ConfigError("config", given, f"transformers cannot build model type {family!r}: {reason}") from None
    return config.to_dict()


def _get(config: dict[str, Any], key: str, default: Any = None) -> Any:
    value = config.get(key, default)
    return default if value is None else value


def _require_false(config: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if config.get(key):
            raise ConfigError(f"config.{key}", config[key], f"is not modelled for {config['model_type']} configs")


def _max_positions(config: dict[str, Any]) -> int:
    return int(_get(config, "max_position_embeddings", config.get("n_positions", 0)))


def training_seq_len(config: dict[str, Any], seq_len: int) -> int:
    """`seq_len`, or the shipped shape's training length, or the model's maximum positions."""
    limit = _max_positions(config)
    seq_len = seq_len or int(config.get("_seq_len") or 0) or limit
    if limit and seq_len > limit:
        raise ConfigError("seq_len", seq_len, f"exceeds the {limit} positions of this config")
    return seq_len


def _head_dim_matches(config: dict[str, Any], hidden: int, heads: int) -> None:
    head_dim = config.get("head_dim")
    if head_dim and head_dim * heads != hidden:
        raise ConfigError("config.head_dim", head_dim, f"must be hidden_size / num_attention_heads = "
                                                       f"{hidden // heads} (other head widths are not modelled)")


def decoder_shape(config: dict[str, Any], seq_len: int = 0, capacity_factor: float = 0.0, source: str = "",
                  attention: str = FLASH) -> DecoderShape:
    """A `DecoderShape` from a transformers config dict (see the module docstring); `source` names
    where the config came from (the shipped name or the path given), for error messages;
    `attention` is ``flash`` (what today's training stacks run) or ``materialized``."""
    family = config.get("model_type")
    if family not in DECODER_FAMILIES:
        raise ConfigError("config", source or family, f"model type {family!r} is not supported; use one of "
                                                      f"{', '.join(DECODER_FAMILIES + ENCODER_FAMILIES)}")
    seq = training_seq_len(config, seq_len)
    if family == "gpt2":
        hidden, heads = config["n_embd"], config["n_head"]
        dropout = any(float(_get(config, key, 0.0)) > 0 for key in ("attn_pdrop", "resid_pdrop", "embd_pdrop"))
        layer = LayerShape(hidden, heads, seq, ffn_hidden=_get(config, "n_inner", 4 * hidden), causal=True,
                           dropout=dropout)
        return DecoderShape(layer, config["n_layer"], config["vocab_size"], vocab_multiple=1, tied_embeddings=True,
                            position_embeddings=True, position_rows=_max_positions(config), attention=attention)
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    mla = None
    if family in ("deepseek_v3", "deepseek_v2"):
        mla = MlaShape(int(_get(config, "q_lora_rank", 0)), config["kv_lora_rank"], config["qk_nope_head_dim"],
                       config["qk_rope_head_dim"], config["v_head_dim"])
        kv_heads = heads
    else:
        _head_dim_matches(config, hidden, heads)
        kv_heads = _get(config, "num_key_value_heads", heads)
    _require_false(config, "attention_bias", "mlp_bias")
    layer = LayerShape(hidden, heads, seq, ffn_hidden=config["intermediate_size"], kv_heads=kv_heads, causal=True,
                       gated_mlp=True, bias=False, rmsnorm=True,
                       dropout=float(_get(config, "attention_dropout", 0.0)) > 0)
    moe, dense_layers = _moe(config, family, capacity_factor)
    qkv_bias = family == "qwen2" or (family == "qwen2_moe" and bool(_get(config, "qkv_bias", True)))
    return DecoderShape(layer, config["num_hidden_layers"], config["vocab_size"], vocab_multiple=1,
                        tied_embeddings=bool(_get(config, "tie_word_embeddings", False)), position_embeddings=False,
                        moe=moe, dense_layers=dense_layers, mla=mla, qkv_bias=qkv_bias, attention=attention,
                        fused_projections=False)


def _moe(config: dict[str, Any], family: str, capacity_factor: float) -> tuple[MoeShape | None, int]:
    if family == "mixtral":
        return MoeShape(config["num_local_experts"], config["num_experts_per_tok"], config["intermediate_size"],
                        capacity_factor=capacity_factor), 0
    if family == "qwen2_moe":
        if _get(config, "decoder_sparse_step", 1) != 1 or _get(config, "mlp_only_layers", []):
            raise ConfigError("config.decoder_sparse_step", config.get("decoder_sparse_step"),
                              "only MoE in every layer (decoder_sparse_step 1, no mlp_only_layers) is modelled")
        return MoeShape(config["num_experts"], config["num_experts_per_tok"], config["moe_intermediate_size"],
                        shared_ffn=_get(config, "shared_expert_intermediate_size", 0), shared_gate=True,
                        capacity_factor=capacity_factor), 0
    if family in ("deepseek_v3", "deepseek_v2"):
        if _get(config, "moe_layer_freq", 1) != 1:
            raise ConfigError("config.moe_layer_freq", config["moe_layer_freq"], "only 1 is modelled")
        width = config["moe_intermediate_size"]
        return MoeShape(config["n_routed_experts"], config["num_experts_per_tok"], width,
                        shared_ffn=_get(config, "n_shared_experts", 0) * width,
                        capacity_factor=capacity_factor), int(_get(config, "first_k_dense_replace", 0))
    return None, 0
