"""Conformance suite for the embedded Armada server (and any Armada, via ARMADA_URL)."""

import armada_flyte  # noqa: F401  (must precede armada_client: it aliases the vendored google.api protos)
