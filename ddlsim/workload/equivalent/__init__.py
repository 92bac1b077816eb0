"""Equivalent models of the workload's shards: real `torch.nn.Module`s with exactly one rank's
shard, for profiling. Each module registers its kinds' builders into compute's registry
(`ddlsim.compute.equivalent_registry`), which imports it, as `ddlsim.core.catalog` lists, the first
time a shard of one of its kinds is built:

- ``"megatron_layer"``: one tensor-parallel shard of one transformer layer (`megatron_layer.py`);
- ``"gpt_layer"``, ``"gpt_embedding"``, ``"adam_shard"``: a decoder-only GPT (`gpt.py`);
- ``"lm_head"``: a transformer's vocab-parallel output layer and loss (`lm_head.py`);
- ``"dlrm_shard"``: one GPU's DLRM shard, torchrec embedding bags plus the MLPs and the
  interaction (`dlrm_shard.py`); ``"ncf_shard"``: an NCF shard (`ncf_shard.py`);
- the image models and ``"mlp"`` (`dense_models.py`).

The registry's names are re-exported here.
"""

from __future__ import annotations

from ddlsim.core.lazy import lazy_exports

_REGISTRY = "ddlsim.compute.equivalent_registry"
__getattr__, __dir__ = lazy_exports(__name__, {
    "EquivalentShard": _REGISTRY,
    "build_equivalent_shard": _REGISTRY,
    "equivalent_kinds": _REGISTRY,
    "register_equivalent": _REGISTRY,
})
__all__ = ["EquivalentShard", "build_equivalent_shard", "equivalent_kinds", "register_equivalent"]
