"""Helpers of the web console's browser tests: Debian's Chromium driven by playwright, and
screenshots compared against the baselines in tests/ui_baselines/.

The browser is ``/usr/bin/chromium`` (the Makefile's ``chromium`` target installs it with
apt-get; playwright never downloads a browser), headless, sandbox and GPU off, nothing
fetched in the background (no QUIC, component updates, sync, first-run pages), a fresh
profile per use. Pages are drawn at a fixed viewport and scale, in UTC, with reduced motion;
the console uses only the machine's DejaVu fonts and no animation, so two runs draw the same
pixels.

:func:`check_screenshot` compares a PNG with ``tests/ui_baselines/<name>.png``: same size, and
at most :data:`MAX_DIFF_RATIO` of the pixels differing by more than :data:`CHANNEL_TOLERANCE`
in some channel (anti-aliasing noise passes, a moved column or a new row does not). A missing
baseline fails, saying how to make it: ``UPDATE_UI_BASELINES=1`` writes every screenshot as
the new baseline (then look at the images, and commit them). A failed comparison leaves the
screenshot and a diff image beside the test's tmp path for inspection.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
BASELINES = Path(__file__).resolve().parent.parent / "ui_baselines"
VIEWPORT = {"width": 1280, "height": 900}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--font-render-hinting=none",
    "--hide-scrollbars",
]
#: A pixel differs when one channel differs by more than this (of 255).
CHANNEL_TOLERANCE = 24
#: The share of differing pixels a screenshot may have.
MAX_DIFF_RATIO = 0.002
UPDATE_ENV = "UPDATE_UI_BASELINES"


@contextmanager
def chromium(tmp: Path) -> Iterator[Any]:
    """A playwright browser context of Debian's Chromium with a fresh profile under ``tmp``."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    profile = tmp / "chromium-profile"
    profile.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=VIEWPORT,
            device_scale_factor=1,
            locale="en-US",
            timezone_id="UTC",
            reduced_motion="reduce",
            color_scheme="light",
        )
        try:
            yield context
        finally:
            context.close()


def pixel_diff_ratio(actual: Any, expected: Any) -> tuple[float, Any]:
    """The share of pixels differing by more than :data:`CHANNEL_TOLERANCE`, and a mask image
    of them (white where they differ)."""
    from PIL import ImageChops

    diff = ImageChops.difference(actual.convert("RGB"), expected.convert("RGB"))
    channel_max = ImageChops.lighter(ImageChops.lighter(*diff.split()[:2]), diff.split()[2])
    mask = channel_max.point(lambda v: 255 if v > CHANNEL_TOLERANCE else 0)
    differing = mask.histogram()[255]
    return differing / (mask.width * mask.height), mask


def check_screenshot(png: bytes, name: str, out_dir: Path) -> None:
    """Compare ``png`` with the baseline ``name`` (see the module doc)."""
    from PIL import Image

    baseline = BASELINES / f"{name}.png"
    if os.environ.get(UPDATE_ENV) == "1":
        BASELINES.mkdir(parents=True, exist_ok=True)
        baseline.write_bytes(png)
        return
    if not baseline.exists():
        pytest.fail(f"no baseline {baseline}: run `{UPDATE_ENV}=1 .venv/bin/python -m pytest "
                    f"tests/web/test_console_browser.py`, look at the images and commit them")
    actual = Image.open(io.BytesIO(png))
    expected = Image.open(baseline)
    out_dir.mkdir(parents=True, exist_ok=True)
    if actual.size != expected.size:
        (out_dir / f"{name}.png").write_bytes(png)
        pytest.fail(f"{name}: screenshot is {actual.size}, baseline {expected.size} (saved in {out_dir})")
    ratio, mask = pixel_diff_ratio(actual, expected)
    if ratio > MAX_DIFF_RATIO:
        (out_dir / f"{name}.png").write_bytes(png)
        mask.save(out_dir / f"{name}-diff.png")
        pytest.fail(f"{name}: {ratio:.4%} of the pixels differ from {baseline} (at most {MAX_DIFF_RATIO:.2%}); "
                    f"screenshot and diff in {out_dir}; if the change is meant, regenerate with {UPDATE_ENV}=1")
