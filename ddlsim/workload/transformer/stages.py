"""How a decoder's layers split over pipeline stages and their model chunks: Megatron-Core's options.

Chunk c = virtual stage x PP + pipeline stage runs on stage c mod PP and holds the layers after
those of chunks 0 .. c - 1 (Megatron-Core's layer offsets, `get_transformer_layer_offset` in
megatron/core/transformer/transformer_layer.py; `get_num_layers_to_build` in transformer_block.py).
Megatron-Core offers three splits (megatron/core/transformer/transformer_config.py):

- even: L / (PP x v) layers in every chunk;
- ``num_layers_in_first_pipeline_stage`` / ``num_layers_in_last_pipeline_stage`` (our
  `parallel.first_stage_layers` / `parallel.last_stage_layers`): the given stages hold that many
  layers, the other (middle) stages split the rest evenly; every stage's layers must divide by
  v, and each of its chunks holds 1 / v of them;
- ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``: the
  embedding (the loss) counts as one layer, so L + 1 or L + 2 layers split evenly over PP x v
  chunks and the first chunk (the last chunk) builds one transformer layer fewer.

With both keys 0 the split is automatic: even when PP x v divides L; otherwise the embedding and
the loss count as layers (L + 2, as Llama 3 405B's 126 layers on 16 stages: one layer fewer on
the first and the last stage, Llama 3 paper Sec. 3.3.2), else the loss alone (L + 1: of the two
ends, the output layer is the one that costs compute); otherwise first and last stages take
fewer layers than the middle ones (the even share rounded up to a multiple of v), the last the
fewer of the two when they cannot be equal.
"""

from __future__ import annotations

from ddlsim.core.caches import PROCESS_CACHES
from ddlsim.core.errors import ConfigError

FIRST_KEY, LAST_KEY = "parallel.first_stage_layers", "parallel.last_stage_layers"


def split_layers(layers: int, pipeline: int, virtual_stages: int = 1, first: int = 0, last: int = 0
                 ) -> tuple[int, ...]:
    """Layers of every model chunk (PP x v of them, in chunk order); `first`/`last` 0 is automatic.

    Raises `ConfigError` naming the key whose value breaks one of Megatron-Core's rules.
    """
    key = (layers, pipeline, virtual_stages, first, last)
    return PROCESS_CACHES.memo("chunk layers", maxsize=4096).get_or_make(key, lambda: _split(*key))


def _split(layers: int, pipeline: int, virtual_stages: int, first: int, last: int) -> tuple[int, ...]:
    if first or last:
        return _explicit(layers, pipeline, virtual_stages, first, last)
    chunks = pipeline * virtual_stages
    if layers % chunks == 0:
        return (layers // chunks,) * chunks
    for embedding, loss in ((True, True), (False, True)):
        counted = layers + embedding + loss
        if counted % chunks == 0:
            return _accounted(counted // chunks, chunks, embedding, loss)
    fallback = _fewer_at_the_ends(layers, pipeline, virtual_stages)
    if fallback is None:
        key, value = ("parallel.virtual_stages", virtual_stages) if virtual_stages > 1 else \
            ("parallel.pipeline", pipeline)
        raise ConfigError(key, value, f"cannot split the {layers} layers over pipeline {pipeline} x virtual_stages "
                                      f"{virtual_stages} as Megatron-Core can (evenly, with the embedding and loss "
                                      f"counted as layers, or fewer layers on the first and last stages); set "
                                      f"{FIRST_KEY} and {LAST_KEY}")
    return _explicit(layers, pipeline, virtual_stages, *fallback)


def _accounted(per_chunk: int, chunks: int, embedding: bool, loss: bool) -> tuple[int, ...]:
    """account_for_embedding/loss_in_pipeline_split: the first/last chunk builds a layer fewer."""
    counts = [per_chunk] * chunks
    counts[0] -= embedding
    counts[-1] -= loss
    return tuple(counts)


def _fewer_at_the_ends(layers: int, pipeline: int, v: int) -> tuple[int, int] | None:
    """(first, last) stage layers below the middle stages' share, or None when there are none."""
    if pipeline < 3:
        return None
    middle = v * -(-layers // (pipeline * v))
    ends = layers - (pipeline - 2) * middle
    last = v * (ends // (2 * v))
    first = ends - last
    if last < v or first % v or first > middle or first == last == middle:
        return None
    return first, last


def _explicit(layers: int, pipeline: int, v: int, first: int, last: int) -> tuple[int, ...]:
    """num_layers_in_first/last_pipeline_stage: the given ends, the middle stages split the rest."""
    for key, value in ((FIRST_KEY, first), (LAST_KEY, last)):
        if value < 0:
            raise ConfigError(key, value, "must be >= 0 (0: automatic)")
        if value and pipeline < 2:
            raise ConfigError(key, value, "sets the layers of an end pipeline stage, so it needs pipeline > 1")
        if value % v:
            raise ConfigError(key, value, f"must be a multiple of virtual_stages = {v} (each of the stage's model "
                                          "chunks holds the same number of layers, Megatron-Core's rule)")
    middle_layers = layers - first - last
    middle_stages = pipeline - (first > 0) - (last > 0)
    key, value = (LAST_KEY, last) if last else (FIRST_KEY, first)
    if middle_layers < 0 or bool(middle_layers) != bool(middle_stages):
        raise ConfigError(key, value, f"leaves {middle_layers} of the {layers} layers for {middle_stages} middle "
                                      "stages; every stage needs layers and every layer a stage")
    per_stage = middle_layers // middle_stages if middle_stages else 0
    if middle_stages and (middle_layers % middle_stages or per_stage % v):
        raise ConfigError(key, value, f"the middle {middle_stages} stages must split the other {middle_layers} "
                                      f"layers evenly into multiples of virtual_stages = {v} (Megatron-Core's rule)")
    stage = [per_stage] * pipeline
    stage[0] = first or stage[0]
    stage[-1] = last or stage[-1]
    return tuple(stage[c % pipeline] // v for c in range(pipeline * v))


def stage_layers(chunk_layers: tuple[int, ...], pipeline: int) -> tuple[int, ...]:
    """Layers of every pipeline stage (the sum of its chunks)."""
    return tuple(sum(chunk_layers[stage::pipeline]) for stage in range(pipeline))


def chunk_offsets(chunk_layers: tuple[int, ...]) -> tuple[int, ...]:
    """Index of the first layer of every chunk."""
    offsets, total = [], 0
    for count in chunk_layers:
        offsets.append(total)
        total += count
    return tuple(offsets)


def describe(per_stage: tuple[int, ...]) -> str:
    """A compact run-length form of per-stage layers: ``7,8x14,7``; ``8x16`` when even."""
    parts: list[str] = []
    run_value, run = per_stage[0], 0
    for value in (*per_stage, None):
        if value == run_value:
            run += 1
            continue
        parts.append(f"{run_value}x{run}" if run > 1 else str(run_value))
        run_value, run = value, 1
    return ",".join(parts)
