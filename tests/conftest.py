"""Shared fixtures: real offline models loaded once per session, an isolated cache per test."""

import os

import pytest

# Keep progress bars out of test output and of notebook outputs checked by nbval.
os.environ.setdefault("ISOLIB_PROGRESS", "0")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def minilm():
    from isolib.models import load_model

    return load_model("minilm")


@pytest.fixture(scope="session")
def smollm2():
    from isolib.models import load_model

    return load_model("smollm2")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty isolib cache for one test."""
    monkeypatch.setenv("ISOLIB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
