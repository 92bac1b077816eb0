"""The one explicit list of every option of every registered config group, and the module that
registers it.

A registry (`ddlsim.core.registry`) imports an option's module the first time the option is asked
for, so building one fabric imports that fabric's module and no other, and `core` imports no room
to know their names. A test (tests/architecture/test_catalog.py) imports every module listed and
checks that it registers exactly the names listed for it.

Two groups are not config groups but model kinds of shard signatures (`ddlsim.core.work.ShardSignature`),
filled by the workload room into registries that compute owns and reads without importing
workload: ``kernels`` (the lister of each kind's kernel list, `ddlsim.compute.kernel_registry`) and
``equivalent`` (the builder of each kind's equivalent `torch.nn.Module`,
`ddlsim.compute.equivalent_registry`).
"""

from __future__ import annotations

from ddlsim.core.datasheets import DATASHEETS

NETWORK = "ddlsim.network"
COLLECTIVES = f"{NETWORK}.collectives"
FABRICS = f"{NETWORK}.fabrics"
KERNEL_LISTERS = "ddlsim.workload.kernels.listers"
FSDP_KERNELS = "ddlsim.workload.kernels.fsdp"
EQUIVALENT = "ddlsim.workload.equivalent"

OPTIONS: dict[str, dict[str, str]] = {
    "fabric": {
        "bcube": f"{FABRICS}.bcube",
        "expander": f"{FABRICS}.topoopt.expander",
        "ideal": f"{FABRICS}.ideal",
        "leaf_spine": f"{FABRICS}.fat_tree.fabric",
        "ocs_reconfig": f"{FABRICS}.topoopt.reconfigurable",
        "opsquare": f"{FABRICS}.opsquare.fabric",
        "optical_ring": f"{FABRICS}.optical_ring.fabric",
        "ramp": f"{FABRICS}.ramp.fabric",
        "sipac": f"{FABRICS}.sipac",
        "sipml": f"{FABRICS}.topoopt.reconfigurable",
        "superpod": f"{FABRICS}.fat_tree.fabric",
        "topoopt": f"{FABRICS}.topoopt.fabric",
        "torus2d": f"{FABRICS}.torus",
    },
    "collective": {
        "best": f"{COLLECTIVES}.best",
        "binary_tree": f"{COLLECTIVES}.trees",
        "binomial_tree": f"{COLLECTIVES}.binomial_tree",
        "bruck": f"{COLLECTIVES}.bruck",
        "direct": f"{COLLECTIVES}.direct",
        "double_binary_tree": f"{COLLECTIVES}.trees",
        "hierarchical": f"{COLLECTIVES}.ring",
        "hring": f"{COLLECTIVES}.wrht_hring",
        "per_op": f"{COLLECTIVES}.per_op",
        "pipelined_tree": f"{COLLECTIVES}.pipelined_tree",
        "rampx": f"{COLLECTIVES}.rampx.algorithm",
        "rampx_ring": f"{COLLECTIVES}.rampx.algorithm",
        "recursive_doubling": f"{COLLECTIVES}.recursive_doubling",
        "rhd": f"{COLLECTIVES}.halving_doubling",
        "ring": f"{COLLECTIVES}.ring",
        "sipco": f"{COLLECTIVES}.sipco",
        "topoopt_ring": f"{COLLECTIVES}.topoopt_ring",
        "torus2d": f"{COLLECTIVES}.ring",
        "wrht": f"{COLLECTIVES}.wrht",
    },
    "model": {
        "chakra": "ddlsim.chakra.model",
        "dlrm": "ddlsim.workload.models.dlrm",
        "gpt": "ddlsim.workload.models.gpt",
        "hf": "ddlsim.workload.models.hf",
        "megatron": "ddlsim.workload.models.megatron",
        "program": "ddlsim.capture.model",
        "topoopt": "ddlsim.workload.models.topoopt",
    },
    "device": {name: "ddlsim.compute.devices" for name in DATASHEETS},  # one option per datasheet
    "task": {
        "alpha_beta": "ddlsim.tasks.alpha_beta",
        "collective": "ddlsim.tasks.collective_sweep",
        "components": "ddlsim.tasks.components",
        "compute_times": "ddlsim.tasks.profile",
        "hybrid": "ddlsim.tasks.hybrid",
        "jobs": "ddlsim.tasks.jobs",
        "packet": "ddlsim.tasks.packet",
        "pattern": "ddlsim.tasks.pattern",
        "profile": "ddlsim.tasks.profile",
        "ramp_cost_tables": "ddlsim.tasks.ramp_cost_tables",
        "ramp_tables": "ddlsim.tasks.ramp_tables",
        "search": "ddlsim.tasks.search",
        "steps": "ddlsim.tasks.steps",
        "topoopt": "ddlsim.tasks.topoopt",
        "topoopt_cost": "ddlsim.tasks.topoopt_cost",
        "topoopt_jobs": "ddlsim.tasks.topoopt_jobs",
        "train": "ddlsim.tasks.train",
        "workload_comm": "ddlsim.tasks.workload_comm",
    },
    "kernels": {
        "adam_shard": KERNEL_LISTERS,
        "attention_core": KERNEL_LISTERS,
        "decoder_attention_core": KERNEL_LISTERS,
        "dense_layer": KERNEL_LISTERS,
        "fsdp_gather_copies": FSDP_KERNELS,
        "fsdp_reduce_copies": FSDP_KERNELS,
        "gpt_embedding": KERNEL_LISTERS,
        "gpt_layer": KERNEL_LISTERS,
        "lm_head": KERNEL_LISTERS,
        "megatron_layer": KERNEL_LISTERS,
        "mla_dense_layer": KERNEL_LISTERS,
        "mla_moe_layer": KERNEL_LISTERS,
        "moe_layer": KERNEL_LISTERS,
    },
    "equivalent": {
        "adam_shard": f"{EQUIVALENT}.gpt",
        "alexnet": f"{EQUIVALENT}.dense_models",
        "beit_large": f"{EQUIVALENT}.dense_models",
        "dlrm_shard": f"{EQUIVALENT}.dlrm_shard",
        "gpt_embedding": f"{EQUIVALENT}.gpt",
        "gpt_layer": f"{EQUIVALENT}.gpt",
        "lm_head": f"{EQUIVALENT}.lm_head",
        "megatron_layer": f"{EQUIVALENT}.megatron_layer",
        "mlp": f"{EQUIVALENT}.dense_models",
        "ncf_shard": f"{EQUIVALENT}.ncf_shard",
        "resnet50": f"{EQUIVALENT}.dense_models",
        "vgg16": f"{EQUIVALENT}.dense_models",
    },
}
