"""Debian's Chromium, headless, for the view's browser tests: a DOM dump or a screenshot of a page."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from support.real_parts import missing_part

WINDOW = (1400, 1000)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        missing_part("Chromium is not installed (apt-get install chromium; scripts/install-test-parts.sh does as root)")
    return found


def run_chromium(chromium: str, profile: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium headless with its own profile, the window `WINDOW`, and colours exactly as the stylesheet says."""
    command = [
        chromium,
        "--headless",
        "--no-sandbox",  # as root (CI); harmless otherwise
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--force-color-profile=srgb",  # colours on the screenshot exactly as the stylesheet writes them
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-3000:]}"
    return done
