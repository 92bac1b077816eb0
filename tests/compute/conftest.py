"""Profiling tests run torch on one thread: stable on a busy shared machine, and restored after."""

import pytest
import torch


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
