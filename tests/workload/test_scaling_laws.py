"""Kaplan et al. 2020 equations and their inverses."""

import math

import pytest

from ddlsim.core.errors import ConfigError, InfeasibleError
from ddlsim.workload import scaling_laws as sl
from ddlsim.workload.transformer.stack import stack_for_params, widen_heads


def test_eq_1_1_and_its_inverse():
    assert sl.loss_for_params(sl.N_C) == pytest.approx(1.0)
    for loss in (3.0, 2.5, 1.7, 1.0):
        assert sl.loss_for_params(sl.params_for_loss(loss)) == pytest.approx(loss)
    assert sl.params_for_loss(2.5) == pytest.approx(8.8e13 / 2.5 ** (1 / 0.076))


def test_eq_1_4_critical_batch():
    assert sl.critical_batch_tokens(1.0) == pytest.approx(2e8)
    assert sl.critical_batch_tokens(2.5) == pytest.approx(2e8 * 2.5 ** (-1 / 0.21))
    budget = sl.TrainingBudget(2.5, 1024)
    assert budget.critical_batch_sequences == round(sl.critical_batch_tokens(2.5) / 1024)


def test_min_steps_from_eq_1_6_and_the_gap():
    # (S_c / S_min)^alpha_S = gap x L
    s_min = sl.min_steps(2.0, 0.1)
    assert (sl.S_C / s_min) ** sl.ALPHA_S == pytest.approx(0.2)
    assert sl.min_steps(2.0, 0.05) > s_min  # closer to convergence takes longer


def test_eq_5_4_steps_trade_off():
    budget = sl.TrainingBudget(2.0, 1024)
    at_critical = budget.steps(budget.critical_batch_sequences)
    assert at_critical == pytest.approx(2 * budget.min_steps, rel=1e-3)
    critical = budget.critical_batch_sequences
    assert budget.steps(10 * critical) < at_critical < budget.steps(critical // 10)
    assert budget.steps(1) == math.ceil(budget.min_steps * (1 + budget.critical_batch_tokens / 1024))


def test_bad_inputs_are_config_errors():
    with pytest.raises(ConfigError, match="target_loss"):
        sl.params_for_loss(0)
    with pytest.raises(ConfigError, match="loss_gap"):
        sl.min_steps(2.0, -1)


def test_target_losses_outside_the_fitted_domain_are_config_errors():
    """Finding 4: ``model.target_loss=100`` planned one GPU and 2.988 ms to accuracy."""
    for loss in (1.0, 2.3, 6.93):
        assert sl.TrainingBudget(loss, 1024).loss == loss
    for loss in (100.0, 6.94, 0.999, 0.5):
        with pytest.raises(ConfigError, match=r"target_loss = .*: must lie in the scaling laws' domain, 1\.0 to "
                                              r"6\.93 nats \(Kaplan et al\. 2020 fitted models of 768 to 1\.5e9"):
            sl.TrainingBudget(loss, 1024)
    assert round(sl.loss_for_params(sl.SMALLEST_FITTED_PARAMS), 2) == sl.MAX_TARGET_LOSS
    assert sl.loss_for_params(sl.LARGEST_FITTED_PARAMS) == pytest.approx(2.30, abs=0.005)


def test_a_given_shape_outside_the_domain_needs_a_target_loss():
    from ddlsim.core.registry import MODELS

    with pytest.raises(ConfigError, match="model.layers = 1: this shape .* outside the scaling laws' domain"):
        MODELS.build({"name": "megatron", "d_model": 4, "heads": 1, "layers": 1, "target_loss": 0})
    assert MODELS.build({"name": "megatron", "d_model": 4, "heads": 1, "layers": 1, "target_loss": 3.0})


def test_shape_from_params_follows_the_rule():
    stack = stack_for_params(1e9, 1024, aspect_ratio=64, head_dim=128)
    layer = stack.layer
    assert layer.d_model == layer.heads * 128 and layer.heads & (layer.heads - 1) == 0
    assert stack.layers == round(1e9 / (12 * layer.d_model**2))
    assert abs(math.log(stack.kaplan_params() / 1e9)) < math.log(1.6)


def test_widen_heads_keeps_the_width():
    layer = stack_for_params(1e9, 1024).layer
    wide = widen_heads(layer, 4 * layer.heads)
    assert wide.d_model == layer.d_model and wide.heads == 4 * layer.heads and wide.params() == layer.params()
    assert widen_heads(layer, 1) is layer
    with pytest.raises(InfeasibleError, match="exceeds d_model"):
        widen_heads(layer, 2 * layer.d_model)


def test_the_default_loss_gap_prints_as_the_ratio_it_is():
    """alpha_N / alpha_S = 0.076 / 0.76 = 0.1; --help and result rows must not show 0.09999999999999999."""
    from ddlsim.workload.scaling_laws import ALPHA_N, ALPHA_S, DEFAULT_LOSS_GAP

    assert repr(DEFAULT_LOSS_GAP) == "0.1" and abs(DEFAULT_LOSS_GAP - ALPHA_N / ALPHA_S) < 1e-15
