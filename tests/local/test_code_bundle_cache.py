"""The local code bundle is keyed by what it is made of, so an unchanged project is not re-tarred."""

import importlib
import sys

import pytest

from armada_flyte.local.run import _code_fingerprint

pytestmark = pytest.mark.pure


def test_the_fingerprint_follows_the_loaded_code(tmp_path, monkeypatch):
    (tmp_path / "proj_mod_a.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("proj_mod_a")
    try:
        first = _code_fingerprint(tmp_path)
        assert any(path.endswith("proj_mod_a.py") for path, _, _ in first)
        assert _code_fingerprint(tmp_path) == first  # nothing changed: same key, the cached bundle is used

        (tmp_path / "proj_mod_a.py").write_text("X = 22\n")  # edited code
        edited = _code_fingerprint(tmp_path)
        assert edited != first

        (tmp_path / "proj_mod_b.py").write_text("Y = 1\n")  # another module loaded
        importlib.import_module("proj_mod_b")
        more = _code_fingerprint(tmp_path)
        assert more != edited

        (tmp_path / ".gitignore").write_text("*.csv\n")  # ignore rules change what Flyte bundles
        assert _code_fingerprint(tmp_path) != more
    finally:
        sys.modules.pop("proj_mod_a", None)
        sys.modules.pop("proj_mod_b", None)
