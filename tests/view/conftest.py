"""The view's tests: Chromium for those in a real browser."""

from support.chromium import chromium  # noqa: F401  (a fixture)
