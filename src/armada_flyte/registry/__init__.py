"""Reading which platforms an image supports: from a registry's HTTP API (`client`), or from a
Docker daemon (`docker_platforms`). Used by the connector's submission check and by admin tools.
"""
