"""Fixtures shared by the DFlash tests of this directory: real safetensors headers of the tiny drafters."""
import os
import sys

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import read_checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope="module")
def v1_header(tmp_path_factory):
    """The header of a tiny DFlash v1 drafter written by the tests."""
    return read_checkpoint(fx.write_tiny_drafter(tmp_path_factory.mktemp("v1") / "model.safetensors"))


@pytest.fixture(scope="module")
def dflash2_header(tmp_path_factory):
    """The header of a tiny DFlash2 drafter written by the tests."""
    return read_checkpoint(fx.write_tiny_dflash2(tmp_path_factory.mktemp("d2") / "model.safetensors"))
