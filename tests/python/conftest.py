"""pytest setup for the Python package: imports the build tree's `modescope` (PYTHONPATH set by
ctest and scripts/test) and puts every test back in PyNative mode."""
import pytest

import modescope as ms


@pytest.fixture(autouse=True)
def pynative_after_test():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
