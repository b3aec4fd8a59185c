"""The real `lyre` server on the fixture model, started as the end-to-end tests start it."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("lyre_e2e_server", ROOT / "tests" / "e2e" / "conftest.py")
assert _spec and _spec.loader
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)


@pytest.fixture(scope="session")
def server():
    s = e2e.Server()
    yield s
    s.stop()
