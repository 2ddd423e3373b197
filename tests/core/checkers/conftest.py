import pytest

from reviewapp.core.checkers import CheckInput
from reviewapp.core.signing import Signer


@pytest.fixture
def inputs():
    return CheckInput(
        content="fix the off-by-one",
        thought_process="the loop bound is inclusive",
        metadata={"ticket": 42},
    )


@pytest.fixture(scope="module")
def key():
    return Signer.from_seed(bytes([7]) * 32)
