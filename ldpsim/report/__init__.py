"""Report files of a scenario run: figures (PNG) and summary.md."""

from ldpsim.report.run_report import write_report

__all__ = ["write_report"]
