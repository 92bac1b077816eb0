"""(b) A Mixtral-style mixture-of-experts decoder with expert-parallel all-to-all.

    program = ddlsim.capture(build, mesh_shape=(2, 8), mesh_dim_names=("dp", "ep"))

Each layer: attention, then a top-k router over `experts` SwiGLU experts, sharded over the
``ep`` dimension (experts / ep per rank). Tokens travel to their experts' ranks and back with
``all_to_all_single`` (autograd-aware, so backward sends the gradients back the same way):

- ``dispatch="capacity"`` (default): every expert takes at most capacity = ceil(tokens x top_k /
  experts x capacity_factor) tokens from each rank; the buffers have static shapes and every
  rank sends the same bytes to every other (uniform splits);
- ``dispatch="dropless"``: tokens are sorted by expert and sent in uneven splits whose sizes come
  from the routing; under a capture they come from ``ddlsim.capture.splits`` (uniform, or the
  ``expert_load`` given to ``ddlsim.capture``).

After backward, the dense parameters' gradients are all-reduced over every rank and the
experts' over ``dp`` (the ranks holding the same experts), in one piece each; then AdamW.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed._functional_collectives import all_to_all_single_autograd


class Experts(nn.Module):
    """This rank's experts, as stacked SwiGLU weights."""

    def __init__(self, local: int, hidden: int, ffn: int) -> None:
        super().__init__()
        self.gate_up = nn.Parameter(torch.randn(local, hidden, 2 * ffn) / math.sqrt(hidden))
        self.down = nn.Parameter(torch.randn(local, ffn, hidden) / math.sqrt(ffn))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (local experts, tokens each, hidden)
        gate, up = torch.bmm(tokens, self.gate_up).chunk(2, dim=-1)
        return torch.bmm(F.silu(gate) * up, self.down)


class MoELayer(nn.Module):
    def __init__(self, hidden: int, ffn: int, experts: int, top_k: int, ep_group, capacity_factor: float,
                 dispatch: str) -> None:
        super().__init__()
        self.group, self.ep = ep_group, dist.get_world_size(ep_group)
        self.experts_total, self.top_k, self.capacity_factor, self.dispatch = experts, top_k, capacity_factor, dispatch
        self.router = nn.Linear(hidden, experts, bias=False)
        self.experts = Experts(experts // self.ep, hidden, ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, chosen = torch.topk(F.softmax(self.router(x).float(), dim=-1), self.top_k, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        route = self._capacity if self.dispatch == "capacity" else self._dropless
        return route(x, chosen, weights).view(shape)

    def _capacity(self, x, chosen, weights):
        tokens, hidden = x.shape
        capacity = math.ceil(tokens * self.top_k / self.experts_total * self.capacity_factor)
        flat = chosen.reshape(-1)  # (tokens x top_k,) expert of each assignment
        slot = (F.one_hot(flat, self.experts_total).cumsum(0) - 1).gather(1, flat[:, None]).squeeze(1)
        kept = slot < capacity
        position = torch.where(kept, flat * capacity + slot, self.experts_total * capacity)  # overflow row
        buffer = x.new_zeros(self.experts_total * capacity + 1, hidden)
        buffer = buffer.index_copy(0, position, x.repeat_interleave(self.top_k, dim=0))[:-1]
        received = all_to_all_single_autograd(buffer, None, None, self.group)  # equal splits
        local = self.experts_total // self.ep
        out = self.experts(received.view(self.ep, local, capacity, hidden).transpose(0, 1)
                           .reshape(local, self.ep * capacity, hidden))
        out = out.view(local, self.ep, capacity, hidden).transpose(0, 1).reshape(-1, hidden)
        back = torch.cat([all_to_all_single_autograd(out, None, None, self.group), out.new_zeros(1, hidden)])
        combined = back[position] * (weights.reshape(-1, 1) * kept[:, None])
        return combined.view(tokens, self.top_k, hidden).sum(1)

    def _dropless(self, x, chosen, weights):
        from ddlsim.capture import splits

        tokens, hidden = x.shape
        flat = chosen.reshape(-1)
        order = torch.argsort(flat, stable=True)
        sorted_tokens = x.repeat_interleave(self.top_k, dim=0)[order]
        per_rank = torch.histc(flat.float(), bins=self.ep, min=0, max=self.experts_total).long()
        received_counts = all_to_all_single_autograd(per_rank, None, None, self.group)
        send = splits(per_rank, tokens * self.top_k)
        receive = splits(received_counts, tokens * self.top_k)
        received = all_to_all_single_autograd(sorted_tokens, receive, send, self.group)
        local = self.experts_total // self.ep
        rows = received.shape[0] // local
        out = self.experts(received[: rows * local].view(local, rows, hidden)).reshape(-1, hidden)
        back = all_to_all_single_autograd(out, send, receive, self.group)
        unsorted = torch.empty_like(back).index_copy(0, order, back)
        return (unsorted.view(tokens, self.top_k, hidden) * weights[..., None]).sum(1)


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, moe: MoELayer) -> None:
        super().__init__()
        self.heads = heads
        self.attention_norm, self.moe_norm = nn.RMSNorm(hidden), nn.RMSNorm(hidden)
        self.qkv, self.out = nn.Linear(hidden, 3 * hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.moe = moe

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).view(batch, seq, 3, self.heads, -1).unbind(2)
        attention = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   is_causal=True)
        x = x + self.out(attention.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.moe(self.moe_norm(x))


def build(mesh, *, hidden: int = 256, heads: int = 8, ffn: int = 512, layers: int = 2, experts: int = 8,
          top_k: int = 2, vocab: int = 4096, batch: int = 4, seq_len: int = 128, capacity_factor: float = 1.25,
          dispatch: str = "capacity", dtype: torch.dtype = torch.bfloat16):
    ep_group, dp_group = mesh["ep"].get_group(), mesh["dp"].get_group()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        embedding, head = nn.Embedding(vocab, hidden), nn.Linear(hidden, vocab, bias=False)
        blocks = nn.ModuleList(Block(hidden, heads, ffn, MoELayer(hidden, ffn, experts, top_k, ep_group,
                                                                  capacity_factor, dispatch))
                               for _ in range(layers))
    finally:
        torch.set_default_dtype(previous)
    model = nn.ModuleDict({"embedding": embedding, "blocks": blocks, "head": head})
    expert_params = [p for name, p in model.named_parameters() if ".experts." in name]
    dense_params = [p for name, p in model.named_parameters() if ".experts." not in name]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

    def all_reduce(params, group) -> None:
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, group=group)
        pieces = flat.split([p.numel() for p in params])
        torch._foreach_copy_([p.grad for p in params], [piece.view_as(p) for piece, p in zip(pieces, params)])

    def step() -> None:
        tokens = torch.randint(0, vocab, (batch, seq_len))
        x = embedding(tokens)
        for block in blocks:
            x = block(x)
        F.cross_entropy(head(x).flatten(0, 1).float(), tokens.flatten()).backward()
        all_reduce(dense_params, None)
        if dist.get_world_size(dp_group) > 1:
            all_reduce(expert_params, dp_group)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step
