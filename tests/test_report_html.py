"""report.html of runs and reproductions, and index.html of a folder of them (``ldpsim report``).

Without a browser: the pages are self-contained (no network address, images as PNG data
URIs, no script), the user's text is escaped, the tables hold the numbers of results.csv
(of summary.csv, for a reproduction), the index links every run and reproduction
(summary.md for a run without report.html, summary.csv for a reproduction without
summary.md), and rebuilding gives the same bytes. In headless Chromium (Debian's chromium
and chromium-driver, through Selenium; skipped only where /usr/bin/chromium is absent, and
``.ci/run`` installs it): the pages load without console errors, every figure renders,
every link resolves, the tables hold the numbers of results.csv and summary.csv.
"""

from __future__ import annotations

import base64
import html.parser
import json
import math
import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest

from ldpsim.browse import (
    rebuild,
    rebuild_reproduction,
    rebuild_run,
    refresh_index,
    write_index,
)
from ldpsim.errors import LdpSimError
from ldpsim.report.html import report_key
from ldpsim.report.survey_tables import read_results
from ldpsim.reproduce import reproduce
from ldpsim.sim import run_scenario
from tests.sim.helpers import scenario_text
from tests.sim.test_collection import collection_text

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
NASTY = "<script>alert(1)</script> & <b>co</b>"


# ------------------------------------------------------------------------ the runs
@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A folder of runs: a survey (2 replications, 3 checkpoints) and a collection with a
    shuffler, as ``ldpsim run`` lays them out under reports/, and its index.html."""
    base = tmp_path_factory.mktemp("html")
    text = scenario_text(
        size=3000,
        replications=2,
        arrivals='{ kind = "poisson", duration = 3.0 }',
        checkpoints="{ every = 1.0 }",
        labels=f'["a", "b", "c", "{NASTY}"]',
    )
    text = text.replace('name = "test"', f'name = "test"\ndescription = "{NASTY}"')
    (base / "survey.toml").write_text(text)
    reports = base / "reports"
    run_scenario(base / "survey.toml", out=reports / "test" / "20260101T000000Z-seed7", progress=False)
    pol = (
        '[[policies]]\nname = "plain"\nkind = "plain"\n[[policies]]\nname = "memo"\nkind = '
        '"memoise"\neps_permanent = 2.0'
    )
    (base / "c.toml").write_text(collection_text(size=800, periods=3, policies=pol, shuffler="[shuffler]\nbatch = 300"))
    run_scenario(base / "c.toml", out=reports / "collection_test" / "20260102T000000Z-seed17", progress=False)
    write_index(reports)
    return reports


def survey_dir(root: Path) -> Path:
    return root / "test" / "20260101T000000Z-seed7"


def collection_dir(root: Path) -> Path:
    return root / "collection_test" / "20260102T000000Z-seed17"


class Page(html.parser.HTMLParser):
    """What a test needs of a page: the URLs it names, its images, tables and text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.images: list[str] = []
        self.tags: set[str] = set()
        self.tables: list[list[list[str]]] = []
        self.ids: set[str] = set()
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "poster", "data") and value is not None:
                self.urls.append((tag, name, value))
            if name == "id" and value:
                self.ids.add(value)
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None


def table_with(tables: list[list[list[str]]], *columns: str) -> pd.DataFrame:
    """The first table whose header has ``columns``, as text."""
    for t in tables:
        if t and all(c in t[0] for c in columns):
            return pd.DataFrame(t[1:], columns=t[0])
    raise AssertionError(f"no table with columns {columns}")


def final_estimates(run_dir: Path) -> pd.DataFrame:
    """Replication 0's frequency estimates at the last checkpoint, from results.csv."""
    df = read_results(run_dir / "results.csv")  # as ldpsim reads it: labels stay text
    f = df[(df["replication"] == 0) & (df["quantity"] == "frequency")]
    return f[f["time"] == f["time"].max()]


def shows(text: str, x: float) -> bool:
    """Whether a table cell ``text`` shows the number ``x`` as the reports do: to 4
    significant digits (trailing zeros kept), whole units from 1,000 up, 0 as ``0``."""
    if x == 0:
        return text == "0"
    value = float(text.replace(",", ""))
    if abs(x) >= 1000:
        return abs(value - x) <= 0.5 and "." not in text
    digits = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return abs(value - x) <= 0.5 * 10 ** (math.floor(math.log10(abs(x))) - 3) * (1 + 1e-9) and len(digits) == 4


def check_final_estimates(tables: list[list[list[str]]], run_dir: Path) -> None:
    shown = table_with(tables, "category", "truth", "estimate", "ci_low", "ci_high").set_index("category")
    final = final_estimates(run_dir)
    assert len(final) == 4 and set(final["category"]) == set(shown.index)
    for row in final.itertuples():
        for col in ("estimate", "ci_low", "ci_high", "truth"):
            assert shows(shown.loc[row.category, col], getattr(row, col)), (
                row.category,
                col,
                shown.loc[row.category, col],
            )


def check_collection_privacy(tables: list[list[list[str]]], run_dir: Path) -> None:
    """The privacy spent after every period, as results.csv has it (replication 0)."""
    shown = table_with(tables, "arm", "period", "max", "median")
    df = pd.read_csv(run_dir / "results.csv", dtype={"category": str, "policy": str})
    p = df[(df["quantity"] == "privacy") & (df["category"] == "max") & (df["replication"] == 0) & ~df["shuffled"]]
    assert len(p) == 6  # 2 policies x 3 periods
    for row in p.itertuples():
        hit = shown[(shown["arm"] == row.policy) & (shown["period"] == str(row.period))]
        assert len(hit) == 1 and shows(hit["max"].iloc[0], row.estimate), (row.policy, row.period, list(hit["max"]))


def local_target(page: Path, url: str) -> Path:
    return (page.parent / unquote(urlparse(url).path)).resolve()


# ------------------------------------------------------------------------ without a browser
def test_run_pages_are_self_contained_and_escape_the_users_text(root):
    for run_dir in (survey_dir(root), collection_dir(root)):
        path = run_dir / "report.html"
        text = path.read_text(encoding="utf-8")
        page = Page(text)
        assert "script" not in page.tags and "<script>" not in text
        assert "&lt;script&gt;" in text or run_dir == collection_dir(root)
        for tag, attr, url in page.urls:
            parsed = urlparse(url)
            assert parsed.scheme in ("", "data"), (tag, attr, url[:80])
            assert not url.startswith("//"), url
            if parsed.scheme == "" and not url.startswith("#"):
                assert local_target(path, url).exists(), url
            elif url.startswith("#"):
                assert url[1:] in page.ids, url
        pngs = [name for name in (p.name for p in run_dir.glob("*.png"))]
        assert len(page.images) == len(pngs) >= 2
        embedded = set()
        for src in page.images:
            assert src.startswith("data:image/png;base64,")
            embedded.add(base64.b64decode(src.split(",", 1)[1]))
        assert embedded == {(run_dir / n).read_bytes() for n in pngs}  # the very bytes of the PNG files
        assert len(page.tables) >= 3
        assert "http://" not in text and "https://" not in text


def test_run_pages_show_the_numbers_of_results_csv(root):
    survey = Page((survey_dir(root) / "report.html").read_text(encoding="utf-8"))
    check_final_estimates(survey.tables, survey_dir(root))
    # the exact standard error beside the measured one; the scenario and the metadata
    assert {"std_error", "theory_se"} <= set(table_with(survey.tables, "rmse", "theory_se").columns)
    text = (survey_dir(root) / "report.html").read_text(encoding="utf-8")
    assert "size = 3000" in text and "[simulation]" in text
    assert any(row[:2] == ["seed", "7"] for t in survey.tables for row in t)
    check_collection_privacy(
        Page((collection_dir(root) / "report.html").read_text(encoding="utf-8")).tables, collection_dir(root)
    )


def test_index_lists_every_run_with_relative_links_and_falls_back_to_summary_md(root, tmp_path):
    index = root / "index.html"
    page = Page(index.read_text(encoding="utf-8"))
    hrefs = [url for tag, attr, url in page.urls if tag == "a"]
    assert sorted(hrefs) == [
        "collection_test/20260102T000000Z-seed17/report.html",
        "test/20260101T000000Z-seed7/report.html",
    ]
    rows = table_with(page.tables, "scenario", "kind", "seed")
    assert list(rows["kind"]) == ["collection", "survey"]  # newest first
    assert "interval coverage" in rows.iloc[1]["key numbers"]
    # a run from before report.html: linked by its summary.md; a stray folder is no run
    old = tmp_path / "reports"
    shutil.copytree(survey_dir(root), old / "old" / "run1")
    (old / "old" / "run1" / "report.html").unlink()
    (old / "notes").mkdir()
    (old / "notes" / "metadata.json").write_text("{}")
    page = Page(write_index(old).read_text(encoding="utf-8"))
    assert [url for tag, attr, url in page.urls if tag == "a"] == ["old/run1/summary.md"]


def test_rebuild_writes_the_same_bytes_and_refuses_what_is_no_run(root, tmp_path):
    copy = tmp_path / "reports"
    shutil.copytree(root, copy)
    run = copy / "test" / "20260101T000000Z-seed7"
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"}
    for name in ("report.html", "summary.md", "error_vs_n.png"):
        (run / name).unlink()
    done = rebuild(copy, quiet=True)
    assert sorted(done.runs) == sorted([run, copy / "collection_test" / "20260102T000000Z-seed17"]) and not done.skipped
    assert done.page == copy / "index.html"
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != ".lock"} == before
    with pytest.raises(LdpSimError, match="a run directory made by ldpsim run"):
        rebuild_run(copy / "test")
    with pytest.raises(LdpSimError, match="a run directory, a reproduction folder or a folder of them"):
        rebuild(tmp_path / "nowhere")
    (run / "scenario.toml").write_text((run / "scenario.toml").read_text() + "\n# edited\n")
    with pytest.raises(LdpSimError, match="scenario.toml unchanged"):
        rebuild_run(run)
    assert rebuild(copy, quiet=True).skipped[0][0] == run  # skipped, the index still written


# ------------------------------------------------------------------------ reproductions
REPRODUCTION = Path("reproduce") / "kov-fig5" / "20260103T000000Z-seed2014"


@pytest.fixture(scope="module")
def mixed(root, tmp_path_factory) -> Path:
    """The folder of runs with a reproduction (kov-fig5, 3 instances) where ``ldpsim
    reproduce`` puts it, and its index.html."""
    reports = tmp_path_factory.mktemp("mixed") / "reports"
    shutil.copytree(root, reports)
    run = reproduce("kov-fig5", instances=3, out=reports / REPRODUCTION)
    assert run.index is None  # not under ./reports: the index is not this command's to write
    write_index(reports)
    return reports


def summary_csv(folder: Path) -> pd.DataFrame:
    """summary.csv as text."""
    return pd.read_csv(folder / "summary.csv", dtype=str, keep_default_na=False)


def check_summary_table(tables: list[list[list[str]]], folder: Path) -> None:
    shown = table_with(tables, "quantity", "k", "eps", "paper", "ours", "agrees", "criterion")
    expected = summary_csv(folder)
    assert list(shown.columns) == list(expected.columns)
    text = [c for c in expected.columns if c not in ("paper", "ours")]
    assert shown[text].values.tolist() == expected[text].values.tolist()
    for col in ("paper", "ours"):  # the numbers as the reports show them
        for got, want in zip(shown[col], expected[col]):
            assert (got == want == "") or (want != "" and shows(got, float(want))), (col, got, want)


def check_self_contained(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert "script" not in page.tags and "<script" not in text
    assert "http://" not in text and "https://" not in text
    for tag, attr, url in page.urls:
        parsed = urlparse(url)
        assert parsed.scheme in ("", "data") and not url.startswith("//"), (tag, attr, url[:80])
        if url.startswith("#"):
            assert url[1:] in page.ids, url
        elif parsed.scheme == "":
            assert local_target(path, url).is_file(), url
    return page


def test_a_reproduction_writes_a_self_contained_page_with_the_numbers_of_summary_csv(mixed):
    folder = mixed / REPRODUCTION
    names = {p.name for p in folder.iterdir()}
    assert {"summary.csv", "metadata.json", "summary.md", "report.html", "kov-fig5.png"} <= names
    page = check_self_contained(folder / "report.html")
    assert [base64.b64decode(src.split(",", 1)[1]) for src in page.images] == [(folder / "kov-fig5.png").read_bytes()]
    check_summary_table(page.tables, folder)
    meta = table_with(page.tables, "kind", "reproduction")  # the metadata: a table of name, value
    rows = dict(zip(meta.iloc[:, 0], meta.iloc[:, 1])) | {meta.columns[0]: meta.columns[1]}
    assert (
        rows["seed"] == "2014"
        and rows["instances"] == "3"
        and rows["source"] == "Kairouz et al. 2014, Sec. 6, Figure 5"
    )
    summary = pd.read_csv(folder / "summary.csv", keep_default_na=False)
    compared = summary[summary["agrees"].isin(["yes", "no"])]
    agree = f"{(compared['agrees'] == 'yes').sum()} of {len(compared)}"
    assert report_key(folder / "report.html") == {"agree with the paper": agree, "instances": "3"}
    md = (folder / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("# kov-fig5\n") and "Kairouz et al. 2014" in md and "![kov-fig5.png](kov-fig5.png)" in md
    assert "| binary: log-log slope of D(M0\\|\\|M1) vs TV | 6 | 0.1 | 2.000 |" in md  # a | in a cell is escaped
    assert f"within its criterion ({agree})" in md
    assert all(f"- `{n}`" in md for n in names)


def test_the_index_lists_reproductions_beside_runs(mixed, tmp_path):
    page = check_self_contained(mixed / "index.html")
    rows = table_with(page.tables, "scenario", "kind", "seed")
    assert sorted(rows["kind"]) == ["collection", "reproduction", "survey"]
    row = rows[rows["kind"] == "reproduction"].iloc[0]
    assert row["scenario"] == "kov-fig5" and row["seed"] == "2014" and row["replications"] == "3 instances"
    assert "agree with the paper: 3 of 3" in row["key numbers"]
    assert f"{REPRODUCTION.as_posix()}/report.html" in [url for tag, attr, url in page.urls if tag == "a"]
    # a reproduction from before summary.md: linked by its summary.csv; rebuilt, by its report.html
    old = tmp_path / "reports"
    shutil.copytree(mixed / REPRODUCTION, old / "kov-fig5" / "old")
    folder = old / "kov-fig5" / "old"
    for name in ("summary.md", "report.html"):
        (folder / name).unlink()
    meta = json.loads((folder / "metadata.json").read_text())
    del meta["files"]
    (folder / "metadata.json").write_text(json.dumps(meta))
    links = [url for tag, attr, url in Page(write_index(old).read_text(encoding="utf-8")).urls if tag == "a"]
    assert links == ["kov-fig5/old/summary.csv"]
    assert rebuild(old, quiet=True).reproductions == [folder]
    links = [url for tag, attr, url in check_self_contained(old / "index.html").urls if tag == "a"]
    assert links == ["kov-fig5/old/report.html"]
    check_summary_table(check_self_contained(folder / "report.html").tables, folder)


def test_rebuilding_a_reproduction_gives_the_same_bytes_and_skips_what_it_cannot(mixed, tmp_path):
    copy = tmp_path / "reports"
    shutil.copytree(mixed / REPRODUCTION, copy / REPRODUCTION)
    folder = copy / REPRODUCTION
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "notes.txt").write_text("my notes\n")  # a file of the user's is not the reproduction's
    for name in ("summary.md", "report.html"):
        (folder / name).unlink()
    done = rebuild(folder, quiet=True)  # the folder itself
    assert done.runs == done.reproductions == [folder] and done.page == folder / "report.html" and done.index is None
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "notes.txt"} == before
    (folder / "report.html").unlink()
    done = rebuild(copy.parent, quiet=True)  # a folder holding it
    assert done.runs == done.reproductions == [folder] and not done.skipped
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "notes.txt"} == before
    with pytest.raises(LdpSimError, match="a reproduction folder made by ldpsim reproduce"):
        rebuild_reproduction(folder.parent)
    (folder / "summary.csv").write_text("quantity,ours\nx,1\n")
    with pytest.raises(LdpSimError, match="summary.csv: got columns quantity, ours, expected quantity, k, eps"):
        rebuild_reproduction(folder)
    done = rebuild(copy, quiet=True)
    assert [f for f, _ in done.skipped] == [folder] and done.index == copy / "index.html"
    assert (folder / "report.html").read_bytes() == before["report.html"]  # skipped: left as it was


def test_reproduce_under_reports_refreshes_the_index(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = reproduce("kov-fig5", instances=1)  # the default folder, under ./reports
    assert run.index == Path("reports") / "index.html"
    links = [url for tag, attr, url in check_self_contained(run.index).urls if tag == "a"]
    assert links == [f"{run.out_dir.relative_to('reports').as_posix()}/report.html"]
    assert refresh_index(tmp_path / "elsewhere", "reports") is None


# ------------------------------------------------------------------------ in a browser
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            "/usr/bin/chromium is absent (Debian: apt-get install chromium chromium-driver; .ci/run installs them)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ldpsim-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1000,1400",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def load(driver, path: Path) -> None:
    driver.get(path.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == [], severe


def check_images_and_links(driver, path: Path) -> int:
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt])"
    )
    for complete, width, height, alt in images:
        assert complete and width > 0 and height > 0, alt
    links = driver.execute_script("return Array.from(document.links).map(a => a.getAttribute('href'))")
    assert links
    for href in links:
        if href.startswith("#"):
            assert driver.execute_script("return document.getElementById(arguments[0]) !== null", href[1:]), href
        else:
            assert urlparse(href).scheme == "", href
            assert local_target(path, href).exists(), href
    return len(images)


def browser_tables(driver) -> list[list[list[str]]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('table')).map(t => Array.from(t.rows).map("
        "r => Array.from(r.cells).map(c => c.textContent.trim())))"
    )


def test_pages_render_in_headless_chromium(browser, root):
    survey = survey_dir(root) / "report.html"
    load(browser, survey)
    assert check_images_and_links(browser, survey) == 2
    check_final_estimates(browser_tables(browser), survey_dir(root))
    assert NASTY in browser.find_element("tag name", "body").text  # shown as text, not run

    collection = collection_dir(root) / "report.html"
    load(browser, collection)
    assert check_images_and_links(browser, collection) == 3
    check_collection_privacy(browser_tables(browser), collection_dir(root))

    index = root / "index.html"
    load(browser, index)
    check_images_and_links(browser, index)
    assert len(browser.find_elements("css selector", "tbody tr")) == 2
    for href in browser.execute_script("return Array.from(document.links).map(a => a.href)"):
        browser.get(href)  # follow each run's link: its report opens
        assert browser.title in ("test", "collection_test")
        severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe


def test_reproduction_pages_render_in_headless_chromium(browser, mixed):
    page = mixed / REPRODUCTION / "report.html"
    load(browser, page)
    assert check_images_and_links(browser, page) == 1
    check_summary_table(browser_tables(browser), mixed / REPRODUCTION)
    index = mixed / "index.html"
    load(browser, index)
    check_images_and_links(browser, index)
    assert len(browser.find_elements("css selector", "tbody tr")) == 3
    titles = []
    for href in browser.execute_script("return Array.from(document.links).map(a => a.href)"):
        browser.get(href)  # each run's and the reproduction's report opens
        titles.append(browser.title)
        severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe
    assert sorted(titles) == ["collection_test", "kov-fig5", "test"]
