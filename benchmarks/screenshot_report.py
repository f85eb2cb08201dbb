"""Screenshot of the survey report (report.html) in headless Chromium, for docs/img/.

Runs the shipped survey scenario (scenarios/survey.toml; ``--size`` respondents, default
20,000, so it takes seconds) into a temporary folder, opens its report.html in Debian's
Chromium through Selenium and saves the top of the page (1000 x 1400 pixels) as
docs/img/report-html-survey.png::

    apt-get install chromium chromium-driver && pip install selenium
    python benchmarks/screenshot_report.py [--size N] [--out PATH]
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20_000, help="respondents (default 20,000)")
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--height", type=int, default=1400)
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "img" / "report-html-survey.png")
    args = ap.parse_args()

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from ldpsim.sim import run_scenario

    work = Path(tempfile.mkdtemp(prefix="ldpsim-shot-"))
    try:
        text = (REPO_ROOT / "scenarios" / "survey.toml").read_text()
        text, n = re.subn(r"(?m)^size = .*$", f"size = {args.size}", text)
        assert n == 1, "scenarios/survey.toml: expected one 'size =' line"
        (work / "survey.toml").write_text(text)
        run = run_scenario(work / "survey.toml", out=work / "run", progress=False)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={work / 'profile'}", f"--window-size={args.width},{args.height}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        try:
            driver.set_window_size(args.width, args.height)
            driver.get((run.run_dir / "report.html").resolve().as_uri())
            png = driver.get_screenshot_as_png()
        finally:
            driver.quit()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(_small_png(png))
        print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _small_png(png: bytes) -> bytes:
    """The screenshot quantised to 256 colours (a fraction of the bytes, no visible loss on a
    page of text and line plots), when Pillow is there; else as taken."""
    try:
        import io

        from PIL import Image
    except ImportError:  # pragma: no cover
        return png
    img = Image.open(io.BytesIO(png)).convert("RGB")
    buf = io.BytesIO()
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


if __name__ == "__main__":
    main()
