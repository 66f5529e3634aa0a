"""`armada-flyte doctor`: find the platform settings that would make jobs fail, and say how to fix them.

Config checks (`config_checks`) are pure functions over parsed files; reading the files is in
`inputs`, talking to a live Armada in `live_checks`. Every check returns `Finding` values.
"""

from __future__ import annotations

from armada_flyte.admin.doctor.findings import Finding

__all__ = ["Finding"]
