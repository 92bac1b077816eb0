"""The runs on one collective estimator share the prices of their single calls (`training.run`): a
configuration run after others gives the row it gives in a fresh process state, and `clear_caches` empties them."""

from __future__ import annotations

import ddlsim
from ddlsim.core.caches import _LIVE

SMALL = ["experiment=single", "model=gpt", "model.d_model=2048", "model.heads=16", "model.layers=16",
         "model.global_batch=64", "device=h100_sxm", "fabric=superpod", "parallel.tensor=2", "parallel.pipeline=4",
         "collective=best"]
POINTS = [["parallel.data=2"], ["parallel.data=4"], ["parallel.data=2", "parallel.micro_batch=2"],
          ["parallel.data=8", "parallel.micro_batch=2"]]


def _price_memos():
    return [memo for memo in list(_LIVE) if memo.name == "training.collective prices"]


def test_shared_prices_give_the_rows_of_fresh_runs():
    ddlsim.clear_caches()
    session = ddlsim.Session(SMALL)
    after_others = [session.run(point).rows for point in POINTS]
    assert any(len(memo) for memo in _price_memos())
    fresh = []
    for point in POINTS:
        ddlsim.clear_caches()
        assert not any(len(memo) for memo in _price_memos())
        fresh.append(ddlsim.Session(SMALL).run(point).rows)
    assert after_others == fresh
