"""Local runs: a laptop's `flyte.run` through the connector, and the local stack it runs on."""
