"""Scenario texts for the simulation tests."""

from __future__ import annotations

from pathlib import Path

from ldpsim.sim import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def scenario_text(
    *,
    size: int = 10_000,
    arrivals: str = '{ kind = "all_at_once" }',
    latency: str = '{ kind = "constant", value = 0.0 }',
    loss: float = 0.0,
    checkpoints: str = "{ every = 1.0 }",
    mode: str = "individual",
    end: float | None = None,
    tick: float | None = None,
    mechanism: str = 'kind = "randomized_response"\neps = 1.0',
    labels: str = '["a", "b", "c", "d"]',
    distribution: str = "[0.4, 0.3, 0.2, 0.1]",
    extra_server: str = "",
    replications: int = 1,
) -> str:
    sim = [f'mode = "{mode}"', f"replications = {replications}", "seed = 7"]
    if end is not None:
        sim.append(f"end = {end}")
    if tick is not None:
        sim.append(f"tick = {tick}")
    return f"""
name = "test"
[population]
labels = {labels}
distribution = {distribution}
size = {size}
[mechanism]
{mechanism}
[arrivals]
{_inline_table_body(arrivals)}
[network]
latency = {latency}
loss = {loss}
[server]
{extra_server}
[analyst]
checkpoints = {checkpoints}
[simulation]
{chr(10).join(sim)}
"""


def _inline_table_body(inline: str) -> str:
    body = inline.strip().strip("{}").strip()
    return "\n".join(part.strip() for part in _split_top(body))


def _split_top(body: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def make(**kwargs):
    return parse_scenario(scenario_text(**kwargs), "test.toml")


def same_bytes_with_one_and_two_workers(scenario, tmp_path: Path) -> str:
    """Run ``scenario`` (a path or a built scenario) with one worker and with two: the same
    results.csv and summary.md byte for byte. Returns the summary's text."""
    from ldpsim.sim import run_scenario

    one = run_scenario(scenario, out=tmp_path / "one", progress=False)
    two = run_scenario(scenario, out=tmp_path / "two", progress=False, workers=2)
    for name in ("results.csv", "summary.md"):
        assert (one.run_dir / name).read_bytes() == (two.run_dir / name).read_bytes(), name
    return (one.run_dir / "summary.md").read_text()


#: The ANES extract's education levels in order, and the vote (scenarios/data/README.md).
EDUCATION = [
    "8 grades or less",
    "Some high school",
    "High school graduate",
    "Some college",
    "Associate degree",
    "Bachelor's degree",
    "Advanced degree",
]
VOTE = ["Clinton", "Dole"]


#: A small multi-party scenario: four parties, XOR, 4,000 rounds, three replications.
MULTIPARTY = """\
kind = "multiparty"
name = "small"
protocols = ["universal", "binary"]

[parties]
k = 4
eps = [0.5, 1, 2, 3]
delta = [0, 0.01, 0.05, 0.1]

[task]
kind = "xor"

[rounds]
count = 4000
batch = 1000
interval = 0.01

[network]
latency = { kind = "exponential", mean = 0.2 }

[simulation]
seed = 3
replications = 3
"""


#: Two repeated-collection policies on the same reports: every report, and memoised ones.
PLAIN_AND_MEMOISED = """
[[policies]]
name = "every report"
kind = "plain"
[[policies]]
name = "memoised"
kind = "memoise"
eps_permanent = 2.0
"""

#: The two above and a budget of eps 4 (a basic filter) on half the periods.
PLAIN_MEMOISED_AND_BUDGET = (
    PLAIN_AND_MEMOISED
    + """[[policies]]
name = "budget eps 4"
kind = "filter"
rate = 0.5
filter = "basic"
budget_eps = 4.0
"""
)


def collection_text(
    *,
    labels: str = '["a", "b"]',
    distribution: str = "[0.6, 0.4]",
    size: int = 4000,
    periods: int = 5,
    schedule: str = '{ kind = "every_period" }',
    change: str = '{ kind = "none" }',
    eps: float = 1.0,
    policies: str = '[[policies]]\nname = "plain"\nkind = "plain"',
    shuffler: str = "",
    loss: float = 0.0,
    replications: int = 1,
    delta: float = 1e-6,
    mechanism: str | None = None,
) -> str:
    mech = mechanism if mechanism is not None else f'kind = "randomized_response"\neps = {eps}'
    return f"""
kind = "collection"
name = "collection_test"
[population]
labels = {labels}
distribution = {distribution}
size = {size}
[collection]
periods = {periods}
schedule = {schedule}
change = {change}
delta = {delta}
[mechanism]
{mech}
{policies}
{shuffler}
[network]
latency = {{ kind = "exponential", mean = 0.01 }}
loss = {loss}
[simulation]
seed = 17
replications = {replications}
"""
