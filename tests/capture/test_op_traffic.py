"""Bytes one op moves (`accounting.tensor_traffic`): what it reads and what it writes, tensor by tensor."""

from __future__ import annotations

import torch

from ddlsim.capture.accounting import span_bytes, tensor_traffic, traffic_bytes

aten = torch.ops.aten
FLOAT = 4


def _sizes(traffic):
    return sorted(size for _, size in traffic)


def test_foreach_updates_write_the_tensors_they_update():
    params, grads = [torch.zeros(10), torch.zeros(20)], [torch.ones(10), torch.ones(20)]
    reads, writes = tensor_traffic(aten._foreach_add_.List, (params, grads), {}, None)
    assert _sizes(reads) == [10 * FLOAT, 10 * FLOAT, 20 * FLOAT, 20 * FLOAT]
    assert [tensor for tensor, _ in writes] == params and _sizes(writes) == [10 * FLOAT, 20 * FLOAT]


def test_out_arguments_and_overwrites_are_written_not_read():
    source, out = torch.ones(8, 4), [torch.empty(4, 4), torch.empty(4, 4)]
    assert traffic_bytes(aten.split_with_sizes_copy.out, (source, [4, 4]), {"out": out}, None) == (32 * FLOAT,
                                                                                                  32 * FLOAT)
    destination = torch.empty(16)
    assert traffic_bytes(aten.copy_.default, (destination, torch.ones(16)), {}, destination) == (16 * FLOAT,
                                                                                                16 * FLOAT)


def test_template_factories_read_nothing():
    template = torch.ones(1000, 1000)
    result = torch.zeros(10, 10)
    assert traffic_bytes(aten.new_zeros.default, (template, [10, 10]), {}, result) == (0, 100 * FLOAT)
    assert traffic_bytes(aten.zeros_like.default, (template,), {}, torch.zeros_like(template))[0] == 0


def test_an_expanded_operand_is_read_once():
    row = torch.ones(1, 64)
    expanded = row.expand(32, 64)  # stride 0: no copy is made
    assert span_bytes(expanded) == 64 * FLOAT
    reads, writes = tensor_traffic(aten.add.Tensor, (torch.ones(32, 64), expanded), {}, torch.ones(32, 64))
    assert _sizes(reads) == [64 * FLOAT, 32 * 64 * FLOAT] and _sizes(writes) == [32 * 64 * FLOAT]


def test_a_gather_reads_the_rows_it_selects():
    weight, indices = torch.ones(1000, 16), torch.zeros(5, dtype=torch.long)
    out = weight[indices]
    reads, writes = tensor_traffic(aten.index.Tensor, (weight, [indices]), {}, out)
    assert reads[0] == (weight, 5 * 16 * FLOAT)  # the selected rows, not the table
    assert _sizes(writes) == [5 * 16 * FLOAT]


def test_fused_adam_leaves_the_gradients_alone_without_a_scale():
    params, grads, moments = [torch.zeros(8)], [torch.ones(8)], ([torch.zeros(8)], [torch.zeros(8)])
    args = (params, grads, *moments, [], [torch.tensor(1.0)])
    kwargs = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    reads, writes = tensor_traffic(aten._fused_adam_.default, args, kwargs, None)
    assert len(writes) == 3 and all(tensor is not grads[0] for tensor, _ in writes)
    assert sum(size for _, size in reads) == 4 * 8 * FLOAT + FLOAT  # weights, gradients, moments, step
