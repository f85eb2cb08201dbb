"""Report files of a scenario run: figures (PNG) and summary.md."""

from ldpsim.report.run_report import png_bytes, render_report

__all__ = ["png_bytes", "render_report"]
