"""The deployment README and the admin-facing docs link only to files that exist."""

from __future__ import annotations

import pathlib
import re

import pytest

pytestmark = pytest.mark.pure

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [
    "deploy/README.md",
    "docs/how-it-works.md",
    "docs/task-authors.md",
    "docs/troubleshooting.md",
    "docs/admins/gke.md",
    "docs/admins/eks-karpenter.md",
    "docs/admins/aks.md",
    "docs/admins/kind.md",
    "docs/flyte-on-armada.md",
    "docs/embedded-server.md",
    "README.md",
]
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_point_at_files_in_the_repository(doc):
    path = ROOT / doc
    targets = [m.group(1) for m in _LINK.finditer(path.read_text()) if "://" not in m.group(1)]
    missing = [t for t in targets if not (path.parent / t).exists()]
    assert not missing, f"{doc} links to missing files: {missing}"
