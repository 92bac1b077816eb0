"""The fields a local transformers config must carry itself, by family.

transformers fills every field a ``config.json`` leaves out with the defaults of its config class
(`LlamaConfig()` is a 6.7 B model), so a file holding only ``{"model_type": "llama"}`` would price
a model nobody gave. ddlsim reads a shape only from what the file says: each field below must be
present and a whole number >= 1. Optional fields keep their documented meaning when absent
(``num_key_value_heads``: as many as the attention heads; ``tie_word_embeddings``: false).
"""

from __future__ import annotations

from typing import Any

from ddlsim.core.errors import ConfigError

_DENSE = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
          "max_position_embeddings")
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "llama": _DENSE,
    "mistral": _DENSE,
    "qwen2": _DENSE,
    "mixtral": (*_DENSE, "num_local_experts", "num_experts_per_tok"),
    "qwen2_moe": (*_DENSE, "num_experts", "num_experts_per_tok", "moe_intermediate_size"),
    "deepseek_v3": (*_DENSE, "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                    "moe_intermediate_size", "n_routed_experts", "num_experts_per_tok"),
    "gpt2": ("n_embd", "n_head", "n_layer", "vocab_size", "n_positions"),
    "bert": _DENSE,
}
REQUIRED_FIELDS["deepseek_v2"] = REQUIRED_FIELDS["deepseek_v3"]
# Widths and counts that, when given, must be whole numbers >= 1 as well.
_OPTIONAL_COUNTS = ("num_key_value_heads", "head_dim", "n_inner")


def check_fields(document: dict[str, Any], given: str) -> None:
    """Raise `ConfigError` (key ``config``) unless `document` carries its family's fields as counts >= 1."""
    family = document["model_type"]
    missing = [key for key in REQUIRED_FIELDS.get(family, ()) if document.get(key) is None]
    if missing:
        raise ConfigError("config", given, f"lacks {', '.join(missing)}: a {family} config must give them "
                                           "(transformers' defaults describe another model)")
    for key in (*REQUIRED_FIELDS.get(family, ()), *_OPTIONAL_COUNTS):
        value = document.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"config.{key}", value, "must be a whole number >= 1")
