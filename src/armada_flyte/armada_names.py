"""Names and limits Armada and Kubernetes define, shared by the connector and the embedded server."""

ARCH_LABEL = "kubernetes.io/arch"
"""The well-known node label carrying a node's CPU architecture."""

GANG_ID = "armadaproject.io/gangId"
GANG_CARDINALITY = "armadaproject.io/gangCardinality"
GANG_UNIFORMITY_LABEL = "armadaproject.io/gangNodeUniformityLabel"

MAX_IDS_PER_CALL = 500
"""Armada answers at most this many job ids per status, errors or details call."""
