import shutil
import tempfile
from pathlib import Path

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


VISIBLE_ROOT = Path(__file__).resolve().parents[3] / "var" / "test" / "checkers"


@pytest.fixture
def readable_dir():
    """A directory the sandbox user can read: not tmp_path, which is 0700 for root.

    It lies in the checkout, which may itself be under /tmp (CI clones anywhere),
    so a checker that is to reach it lists it in ``Sandbox.readable``."""
    VISIBLE_ROOT.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="checker-", dir=VISIBLE_ROOT))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)
