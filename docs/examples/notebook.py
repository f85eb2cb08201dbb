# %% [markdown]
# # ldpsim in a notebook
#
# A notebook written as a script: each `# %%` line starts a cell (VS Code, Spyder and
# PyCharm run the cells one by one; `jupytext --to notebook` turns the file into a Jupyter
# notebook). Run it whole with `python docs/examples/notebook.py`; the tests do, so it
# stays correct. The guide is docs/python.md.
#
# What it does: build a survey from a shipped scenario file, smaller so that it runs in a
# second; run it into a temporary folder (the same run directory `ldpsim run` writes);
# load the run back; look at the results and the report's tables; draw the main figure to
# a PNG; compare two mechanisms on the same survey; and open runs of the two other kinds.

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import ldpsim

# the repository's scenarios/ folder, from this file or from the notebook's folder
here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
SCENARIOS = next(p / "scenarios" for p in (here, *here.parents) if (p / "scenarios" / "survey.toml").is_file())
work = Path(tempfile.mkdtemp(prefix="ldpsim-notebook-"))
print("runs go to", work)

# %% [markdown]
# ## A scenario from a shipped file, smaller
#
# `scenarios/survey.toml` asks one million respondents; 20,000 are enough here. The text
# is edited before it is read (the file keeps its comments and the run records the text as
# run), and `with_overrides` changes `[simulation]` values: three replications.

# %%
text = (SCENARIOS / "survey.toml").read_text().replace("size = 1_000_000", "size = 20_000")
survey = ldpsim.Scenario.from_text(text, SCENARIOS / "survey.toml").with_overrides(replications=3)
print(survey)
print(survey.spec.population.size, "respondents,", survey.built.mechanism)

# %% [markdown]
# ## Run it
#
# `run` goes through `ldpsim.sim.run_scenario`, what `ldpsim run` calls: the folder holds
# `results.csv`, `metadata.json`, `scenario.toml`, `replications/` and the report.

# %%
run = survey.run(out=work / "survey")
print(run)
print(sorted(p.name for p in run.dir.iterdir()))

# %% [markdown]
# ## The results as a data frame
#
# One row per replication x checkpoint x task x quantity x category; labels stay text.

# %%
results = run.results
end = results.query("quantity == 'frequency' and reason == 'end' and replication == 0")
print(end[["category", "n_received", "estimate", "ci_low", "ci_high", "truth"]].to_string(index=False))

# %% [markdown]
# The report's tables, computed by the report modules from the same frame: `final` holds
# replication 0's estimates at the end beside the RMSE and interval coverage over the
# three replications.

# %%
tables = run.tables()
print(list(tables))
final = tables["final"]
print(final[["category", "truth", "mean_estimate", "rmse", "theory_se", "coverage"]].to_string(index=False))

# %% [markdown]
# ## The main figure
#
# `plot` draws onto an Axes (a new figure without one) and returns it.

# %%
fig, ax = plt.subplots(figsize=(9, 5))
run.plot(ax=ax)
fig.tight_layout()
fig.savefig(work / "survey_estimates.png", dpi=80)
plt.close(fig)

# %% [markdown]
# ## Load a run directory
#
# Any run directory, made here or by `ldpsim run`: the scenario comes back as run (its
# seed and replications included), so running it again gives the same results.

# %%
again = ldpsim.load_run(work / "survey")
print(again.scenario)
print(again.metadata["seed"], again.metadata["replications"], again.metadata["ldpsim_version"])
print(again.summary.splitlines()[0])
assert again.results.equals(run.results)

# %% [markdown]
# ## Compare two scenarios
#
# The same survey with optimised unary encoding in place of randomized response, at the
# same eps and seed: the root-mean-square error over the answers at the end, measured over
# the replications and exact (the mean exact standard error of the estimates).

# %%
oue = ldpsim.Scenario.from_text(text.replace('kind = "randomized_response"', 'kind = "oue"'), SCENARIOS / "survey.toml")
oue_run = oue.with_overrides(replications=3).run(out=work / "survey_oue")

rows = []
for name, r in [("randomized_response", run), ("oue", oue_run)]:
    f = r.tables()["final"]
    rows.append({"mechanism": name, "rmse": (f["rmse"] ** 2).mean() ** 0.5,
                 "exact_rms_se": (f["theory_se"] ** 2).mean() ** 0.5, "coverage": f["coverage"].mean()})
comparison = pd.DataFrame(rows)
print(comparison.to_string(index=False))

fig, ax = plt.subplots(figsize=(7, 4.5))
for color, (name, r) in zip(["C0", "C1"], [("randomized_response", run), ("oue", oue_run)]):
    e = r.tables()["error_by_n"]
    ax.plot(e["n_received"], e["rmse"], "o-", ms=3, color=color, label=f"{name}: measured")
    ax.plot(e["n_received"], e["theory_rms_se"], "--", color=color, label=f"{name}: exact")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("reports received")
ax.set_ylabel("RMS error of the estimates")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(work / "compare_mechanisms.png", dpi=80)
plt.close(fig)

# %% [markdown]
# ## The other kinds
#
# A multi-party scenario (the shipped XOR of six parties, 20,000 rounds instead of
# 200,000) and a small repeated collection written on the spot: the same calls.

# %%
xor_text = (SCENARIOS / "multiparty_xor.toml").read_text()
xor_text = xor_text.replace("count = 200_000", "count = 20_000").replace("batch = 20_000", "batch = 5_000")
xor = ldpsim.Scenario.from_text(xor_text, SCENARIOS / "multiparty_xor.toml").with_overrides(replications=2)
xor_run = xor.run(out=work / "xor")
accuracy = xor_run.tables()["accuracy"]
print(accuracy.query("quantity == 'accuracy'")[["protocol", "party", "measured", "exact", "tolerance", "within"]])

COLLECTION = """
kind = "collection"
name = "weekly_mood"
[population]
labels = ["good", "fine", "bad"]
distribution = [0.5, 0.3, 0.2]
size = 5_000
[collection]
periods = 8
change = { kind = "drift", final = [0.3, 0.4, 0.3], stay = 0.9 }
[mechanism]
kind = "randomized_response"
eps = 1.0
[[policies]]
name = "every report"
kind = "plain"
[[policies]]
name = "memoised"
kind = "memoise"
eps_permanent = 2.0
[simulation]
seed = 11
"""
mood_run = ldpsim.Scenario.from_text(COLLECTION).run(out=work / "mood")
print(mood_run.tables()["final"][["arm", "eps_max", "eps_median", "rmse_all", "coverage"]].to_string(index=False))

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
xor_run.plot(ax=left)
mood_run.plot(ax=right)
fig.tight_layout()
fig.savefig(work / "other_kinds.png", dpi=80)
plt.close(fig)
print("figures:", sorted(p.name for p in work.glob("*.png")))
