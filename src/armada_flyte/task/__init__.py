"""The task side: what runs at `flyte run` / `flyte deploy` and inside task images.

Public Flyte only (private APIs go through `flyte_internals`), and never the connector's heavy
parts, so task images stay lean.
"""
