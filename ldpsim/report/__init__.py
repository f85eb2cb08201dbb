"""Reports of runs: result tables, figures (PNG) and summary.md, as pure functions of the
scenario, the seed and the results frame, so a report can be re-rendered from results.csv
alone. Nothing here knows how the frames were produced (it never imports the simulation).

- :mod:`ldpsim.report.survey_tables` and :mod:`ldpsim.report.survey`: survey runs;
- :mod:`ldpsim.report.multiparty`: multi-party runs;
- :mod:`ldpsim.report.compose`: the tables, figure and folder of ``ldpsim compose`` (the
  numbers are the accounting's, :mod:`ldpsim.privacy`, which writes no files), and
  :mod:`ldpsim.report.regions`: the privacy regions of any guarantees on one set of axes;
- :mod:`ldpsim.report.figures`: PNG bytes and figure helpers (matplotlib);
- :mod:`ldpsim.report.tables`: Markdown tables, reading results files (pandas only).

The names below are imported on first use (PEP 562): matplotlib is loaded only when a
report is rendered.
"""

from ldpsim._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"png_bytes": ".figures", "md_table": ".tables", "read_csv": ".tables", "render_report": ".survey"},
)

__all__ = ["md_table", "png_bytes", "read_csv", "render_report"]
