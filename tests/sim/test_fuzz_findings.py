"""What the scenario fuzzer found at eps near zero (issue 34's harness, rerun): a report whose
estimators are near the largest double (eps = 1e-300 makes each report's estimator about
1/eps) ends with its report, its errors and variances inf where they pass the doubles,
never a floating-point warning raised as a traceback."""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from ldpsim.cli import main

COLLECTION = """kind = "collection"
name = "fuzz_collection"
policies = [{ name = "every report", kind = "plain" }]

[population]
labels = ["a", "b"]
distribution = [0.0, 1.0]
size = SIZE

[collection]
periods = 2
period = 1.0
schedule = { kind = "random", rate = 1.0 }
change = { kind = "none" }
delta = 1e-300

[mechanism]
kind = "randomized_response"
eps = 1e-300

[network]
latency = { kind = "constant", value = 0.0 }
loss = 0.0

[analyst]
confidence = 1e-300

[simulation]
seed = 0
replications = 1
"""

QUESTIONS = """name = "fuzz_questions"
questions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], mechanism = { kind = "MECH" } }]

[population]
size = 40

[budget]
total = 1e-300
strategy = "split"

[arrivals]
kind = "poisson"
duration = 1.0

[network]
latency = { kind = "constant", value = 0.0 }
loss = 0.0

[analyst]
checkpoints = { every = 0.25 }
tasks = [{ kind = "frequency", confidence = 0.95 }]

[simulation]
mode = "individual"
replications = 1
seed = 0
"""


def test_rms_of_errors_near_the_largest_double_is_their_rms_not_an_overflow():
    from ldpsim.report.tables import rms

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rms([1e300, -1e300, np.nan]) == pytest.approx(1e300, rel=1e-15)  # sqrt((2 e600) / 2)
        assert rms([1e308, 1e308]) == pytest.approx(1e308, rel=1e-15)
        assert rms([3.0, 4.0]) == pytest.approx(math.sqrt(12.5), rel=1e-15)
        assert rms([np.inf, 1.0]) == math.inf
        assert rms([0.0, -0.0]) == 0.0
        assert math.isnan(rms([np.nan]))


def test_period_variance_past_the_doubles_is_inf():
    from ldpsim.analyst.longitudinal import period_estimates

    w = np.array([[1e300, -1e300], [-1e300, 1e300]])  # two output symbols, two answers
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = period_estimates(w, [[3, 1], [2, 2]])
    # period 0: the mean estimate of answer 0 is (3 - 1) e300 / 4 = 5e299; period 1: 0
    assert est.estimate[0, 0] == pytest.approx(5e299, rel=1e-15) and est.estimate[1, 0] == 0.0
    assert np.all(np.isinf(est.variance)) and np.all(est.variance > 0)


@pytest.mark.parametrize("size", [1, 30])
def test_a_collection_at_eps_1e_300_ends_with_its_report(tmp_path, size):
    path = tmp_path / "c.toml"
    path.write_text(COLLECTION.replace("SIZE", str(size)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert (tmp_path / "run" / "summary.md").is_file() and (tmp_path / "run" / "report.html").is_file()


@pytest.mark.parametrize("mech", ["randomized_response", "hadamard_response"])
def test_a_survey_at_eps_1e_300_ends_with_its_report(tmp_path, mech):
    path = tmp_path / "q.toml"
    path.write_text(QUESTIONS.replace("MECH", mech))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert (tmp_path / "run" / "summary.md").is_file() and (tmp_path / "run" / "report.html").is_file()


@pytest.mark.parametrize("confidence", [1e-300, 1e-17, 0.5, 0.95, 0.999999, 1 - 2**-53])
def test_z_value_keeps_levels_near_0_and_1(confidence):
    """The two-sided normal quantile Phi^-1(1/2 + c/2), against mpmath at 50 digits: a level
    below 1e-16 used to round to z = 0 (0 * inf = NaN beside an infinite variance) and one
    within 1e-16 of 1 to z = inf."""
    import mpmath as mp

    from ldpsim.analyst.estimation import z_value

    with mp.workdps(50):
        want = float(mp.sqrt(2) * mp.erfinv(mp.mpf(confidence)))
    assert z_value(confidence) == pytest.approx(want, rel=1e-13, abs=0.0)


def test_changes_beside_an_infinite_period_variance_have_an_infinite_variance():
    from ldpsim.analyst.longitudinal import PeriodEstimates, change_estimates

    p = PeriodEstimates(np.array([[0.5], [0.25], [0.0]]), np.array([[np.inf], [1.0], [np.nan]]), np.array([5, 5, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est, var = change_estimates(p, np.array([[np.inf], [0.0]]))  # inf covariance: inf - inf
    assert est[:, 0].tolist() == [-0.25, -0.25]
    assert var[0, 0] == np.inf and np.isnan(var[1, 0])  # a period without an estimate stays NaN


def test_intervals_at_a_level_below_1e_16_beside_an_infinite_variance_are_infinite():
    """The frequency task's normal interval: z ~ 1.25e-300 at confidence 1e-300 times an
    infinite plug-in variance is an infinite half-width (it was 0 * inf = NaN)."""
    from ldpsim.analyst.estimation import confidence_intervals
    from ldpsim.mechanisms import randomized_response

    rr = randomized_response(k=2, eps=1e-300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ci = confidence_intervals(rr, [3, 1], confidence=1e-300)
    assert np.all(ci["ci_low"] == -np.inf) and np.all(ci["ci_high"] == np.inf)


@pytest.mark.parametrize("confidence, k", [(0.95, 3), (1e-300, 4), (0.5, 2)])
def test_bonferroni_z_is_the_quantile_of_the_level_per_interval(confidence, k):
    import mpmath as mp

    from ldpsim.analyst.estimation import z_value

    with mp.workdps(50):
        want = float(mp.sqrt(2) * mp.erfinv(1 - (1 - mp.mpf(confidence)) / k))
    assert z_value(confidence, k) == pytest.approx(want, rel=1e-13, abs=0.0)


#: the fuzzer's own findings, as it shrank them (collection and survey files at eps = 1e-300,
#: confidence 1e-300, one respondent or a few): each must run to its report or be refused in
#: one line, through the harness's own check (its wall-time limit included: the last one, a
#: thousand periods, took 45 s when each period's composition re-added every report)
FOUND = [
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "plain" '
    '}]\n\n[population]\nlabels = ["a", "b"]\ndistribution = [0.0, 1.0]\nsize = 1\n\n[collection]\nperiods = '
    '1\nperiod = 1e-300\nschedule = { kind = "random", rate = 1e-300 }\nchange = { kind = "none" }\ndelta = '
    '1e-300\n\n[mechanism]\nkind = "randomized_response"\neps = 1e-300\n\n[network]\nlatency = { kind = '
    '"constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\nconfidence = 1e-300\n\n[simulation]\nseed = '
    "0\nreplications = 1\n",
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], '
    'mechanism = { kind = "randomized_response" } }]\n\n[population]\nsize = 1\n\n[budget]\ntotal = '
    '1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-09\n\n[network]\nlatency = { kind = '
    '"constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = '
    '"frequency", confidence = 1e-300 }]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], '
    'mechanism = { kind = "hadamard_response" } }]\n\n[population]\nsize = 1\n\n[budget]\ntotal = '
    '1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-300\n\n[network]\nlatency = { kind '
    '= "constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = '
    '"frequency", confidence = 1e-300 }]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], '
    'mechanism = { kind = "randomized_response" } }, { name = "q1", labels = ["a", "b"], distribution = [0.0, '
    '1.0], mechanism = { kind = "randomized_response" } }]\n\n[population]\nsize = 2\n\n[budget]\ntotal = '
    '1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-09\n\n[network]\nlatency = { kind = '
    '"constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = '
    '"frequency", confidence = 1e-300 }]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "memoise", '
    'eps_permanent = 1e-300 }]\n\n[population]\nlabels = ["a", "b", "yes"]\ndistribution = [0.0, 0.0, 1.0]\nsize = '
    '64\n\n[collection]\nperiods = 4\nperiod = 1e-300\nschedule = { kind = "every_period" }\nchange = { kind = '
    '"markov", matrix = [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]] }\ndelta = 1e-300\n\n[mechanism]\nkind '
    '= "randomized_response"\neps = 1e-06\n\n[network]\nlatency = { kind = "constant", value = 0.0 }\nloss = '
    "0.0\n\n[analyst]\nconfidence = 1e-300\n\n[simulation]\nseed = 0\nreplications = 1\n",
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], '
    'mechanism = { kind = "randomized_response" } }, { name = "q1", labels = ["a", "b"], distribution = [0.0, '
    '1.0], mechanism = { kind = "randomized_response" } }]\n\n[population]\nsize = 2\n\n[budget]\ntotal = '
    '1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-09\n\n[network]\nlatency = { kind = '
    '"constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = '
    '"frequency", confidence = 1e-300 }]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b"], distribution = [0.0, 1.0], '
    'mechanism = { kind = "randomized_response" } }, { name = "q1", labels = ["a", "b"], distribution = [0.0, '
    '1.0], mechanism = { kind = "randomized_response" } }]\n\n[population]\nsize = 1\n\n[budget]\ntotal = '
    '1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-300\n\n[network]\nlatency = { kind '
    '= "constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = '
    '"frequency", confidence = 0.9999999999999999 }]\ncrosstabs = [{ rows = "q0", columns = "q1" '
    '}]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "plain" '
    '}]\n\n[population]\nlabels = ["NaN", "a"]\ndistribution = [1.0, 0.0]\nsize = 18\n\n[collection]\nperiods = '
    '1000\nperiod = 1000000000000.0\nschedule = { kind = "random", rate = 1e-300 }\nchange = { kind = "none" '
    '}\ndelta = 1e-300\n\n[mechanism]\nkind = "quaternary"\neps = 1e-300\ndelta = 0.0\n\n[network]\nlatency = { '
    'kind = "constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\nconfidence = 0.95\n\n[simulation]\nseed = '
    "1\nreplications = 2\n",
    # errors of exactly 0 at confidence 1e-300: the accuracy figure's log axis had no positive value
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "plain" }]\n\n'
    '[population]\nlabels = ["a", "b"]\ndistribution = [0.5, 0.5]\nsize = 32\n\n'
    '[collection]\nperiods = 1\nperiod = 1e-300\nschedule = { kind = "every_period" }\n'
    'change = { kind = "none" }\ndelta = 1e-300\n\n'
    '[mechanism]\nkind = "randomized_response"\neps = 5.0\n\n'
    '[network]\nlatency = { kind = "constant", value = 0.0 }\nloss = 0.0\n\n'
    "[analyst]\nconfidence = 1e-300\n\n"
    "[simulation]\nseed = 0\nreplications = 1\n",
    # an LRT whose P1 has a zero at eps = 710 and alpha just below 1: P0(L = t) was a subnormal
    # and (alpha - P0(L > t)) / P0(L = t) overflowed (slow tier with fresh examples)
    'name = "fuzz"\n\n[population]\nlabels = ["a", "b"]\nsize = 2512\nP0 = [0.15789473684210525, 0.8421052631578947]'
    '\nP1 = [0.0, 1.0]\ntruth = "P0"\n\n[mechanism]\nkind = "randomized_response"\neps = 710.0\n\n[arrivals]\n'
    'kind = "poisson"\nduration = 1e-300\n\n[network]\nlatency = { kind = "constant", value = 0.0 }\nloss = 0.0\n\n'
    '[analyst]\ncheckpoints = { every_reports = 1 }\ntasks = [{ kind = "lrt", P0 = [0.15789473684210525, '
    '0.8421052631578947], P1 = [0.0, 1.0], alpha = 0.9999999999999999 }]\n\n[simulation]\nmode = "individual"\n'
    "replications = 1\nseed = 0\n",
    # one party: the vectorised symmetric-function accuracy had no class to enumerate and
    # np.unravel_index refused the empty shape (slow tier, fresh examples)
    'kind = "multiparty"\nname = "fuzz_mp"\nprotocols = ["universal"]\n\n[parties]\nk = 1\neps = [0.5]\n'
    'delta = [0.0]\np_one = [0.5]\n\n[task]\nkind = "threshold"\nt = 0\n\n[rounds]\ncount = 16\nbatch = 1\n'
    "interval = 0.1\n\n[simulation]\nseed = 0\nreplications = 1\nalpha = 1e-300\n",
    # a shuffled collection at local eps 1e-300: the central figure grouped policies by eps
    # rounded to 12 places (0.0) and the report was refused after the results were written
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "filter", filter = '
    '"basic", budget_eps = 1e-300, budget_delta = 0.0, exhausted = "stop" }, { name = "every report 1", kind = '
    '"memoise", eps_permanent = 50.0 }]\n\n[population]\nlabels = ["a", "b"]\ndistribution = [1.0, 0.0]\nsize = 1'
    '\n\n[collection]\nperiods = 1\nperiod = 1e-300\nschedule = { kind = "random", rate = 1.0 }\nchange = { kind '
    '= "none" }\ndelta = 1e-300\n\n[mechanism]\nkind = "randomized_response"\neps = 1e-300\n\n[network]\nlatency '
    '= { kind = "constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\nconfidence = 1e-300\n\n[simulation]\nseed = '
    "0\nreplications = 1\n\n[shuffler]\nwindow = 1e-300\ncompare = false\n",
    # a survey whose first question's answers are "" and " ": the estimates figure's legend
    # had no label matplotlib would show and warned (slow tier, fresh examples)
    'name = "fuzz_questions"\nquestions = [{ name = "party0", labels = ["", " "], distribution = [0.0, '
    '1.0], mechanism = { kind = "truncated_geometric" } }, { name = "Q1", labels = ["None", "b", "café'
    '", "café", "line\\nbreak"], distribution = [0.0, 0.2857142857142857, 0.42857142857142855, 0.0, 0.2'
    '857142857142857], mechanism = { kind = "randomized_response" } }, { name = "vote2", labels = ["a",'
    ' ""], distribution = [0.5172413793103449, 0.4827586206896552], mechanism = { kind = "randomized_re'
    'sponse" } }]\n\n[population]\nsize = 1\n\n[budget]\ntotal = 2.0\nstrategy = "split"\n\n[arrivals]'
    '\nkind = "poisson"\nduration = 0.01\n\n[network]\nlatency = { kind = "constant", value = 0.0 }\nlo'
    'ss = 0.0\n\n[analyst]\ncheckpoints = { every = 0.25 }\ntasks = [{ kind = "frequency", confidence ='
    ' 0.95 }]\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    # a shuffler window of 1e-300: the arrival times over the window overflowed (slow tier, fresh examples)
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "Å", kind = "plain", rate = 1.'
    '0 }, { name = "ﬁ 1", kind = "plain" }, { name = "Å", kind = "memoise", eps_permanent = 1e-06 }]\n'
    '\n[population]\nlabels = ["fi", "ﬁ", "NaN", "é", "a", "b"]\ndistribution = [0.22950819672131148, 0'
    ".04918032786885246, 0.11475409836065574, 0.3114754098360656, 0.09836065573770492, 0.19672131147540"
    '983]\nsize = 1128\n\n[collection]\nperiods = 3\nperiod = 1000000000000.0\nschedule = { kind = "eve'
    'ry_period" }\nchange = { kind = "markov", matrix = [[0.0, 0.2463768115942029, 0.2318840579710145, '
    "0.0, 0.2463768115942029, 0.2753623188405797], [0.0, 0.30952380952380953, 0.40476190476190477, 0.0,"
    " 0.0, 0.2857142857142857], [0.0, 0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.31746031746031744, 0.2380952380"
    "9523808, 0.0, 0.25396825396825395, 0.19047619047619047], [0.48484848484848486, 0.5151515151515151,"
    " 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.3275862068965517, 0.3448275862068966, 0.3275862068965517]]"
    ' }\ndelta = 0.5\n\n[mechanism]\nkind = "randomized_response"\neps = 1e-300\n\n[network]\nlatency ='
    ' { kind = "lognormal", median = 1e-09, sigma = 10.0 }\nloss = 0.0\n\n[analyst]\nconfidence = 0.999'
    "9999999999999\n\n[simulation]\nseed = 340282366920938463463374607431768211455\nreplications = 2\n"
    "\n[shuffler]\nwindow = 1e-300\ncompare = false\n",
    # a policy at local eps 1e-300 behind a shuffler: every central eps is 0 and the log-log figure warned
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "café", kind = "memoise", eps'
    '_permanent = 2.0, rate = 0.3 }, { name = "memoised 1", kind = "filter", filter = "basic", budget_e'
    'ps = 1e-06, budget_delta = 1e-06, rate = 0.3 }, { name = "every report 2", kind = "filter", filter'
    ' = "basic", budget_eps = 1e-300, rate = 1e-300 }]\n\n[population]\nlabels = ["NaN", "A", "Ａ", "é",'
    ' "a,b", " "]\ndistribution = [0.19444444444444445, 0.19444444444444445, 0.1388888888888889, 0.0555'
    "5555555555555, 0.2361111111111111, 0.18055555555555555]\nsize = 1128\n\n[collection]\nperiods = 3"
    '\nperiod = 1000000000000.0\nschedule = { kind = "every_period" }\nchange = { kind = "markov", matr'
    "ix = [[0.0, 0.2236842105263158, 0.21052631578947367, 0.09210526315789473, 0.2236842105263158, 0.25"
    "], [0.0, 0.2826086956521739, 0.3695652173913043, 0.08695652173913043, 0.0, 0.2608695652173913], [0"
    ".0, 0.08695652173913043, 0.21739130434782608, 0.30434782608695654, 0.391304347826087, 0.0], [0.030"
    "303030303030304, 0.30303030303030304, 0.22727272727272727, 0.015151515151515152, 0.242424242424242"
    "43, 0.18181818181818182], [0.2962962962962963, 0.3148148148148148, 0.09259259259259259, 0.07407407"
    "407407407, 0.07407407407407407, 0.14814814814814814], [0.0, 0.14084507042253522, 0.042253521126760"
    "56, 0.2676056338028169, 0.28169014084507044, 0.2676056338028169]] }\ndelta = 0.5\n\n[mechanism]\nk"
    'ind = "randomized_response"\neps = 1e-300\n\n[network]\nlatency = { kind = "lognormal", median = 1'
    ".0, sigma = 1e-300 }\nloss = 0.02\n\n[analyst]\nconfidence = 0.9999999999999999\n\n[simulation]\ns"
    "eed = 1\nreplications = 2\n\n[shuffler]\nwindow = 0.01\ncompare = false\n",
    # a cross-tabulation of a check-all-that-apply question at eps = 1e-300: the sequential
    # test's product of two widths near the largest double overflowed (slow tier, this session)
    'name = "fuzz_questions"\nquestions = [{ name = "q0", labels = ["a", "b", "yes", "no"], mechanism = { kind = '
    '"padding", padding = 1 }, kind = "multiselect", inclusion = [0.0, 0.0, 0.0, 0.0] }, { name = "q1", labels = '
    '["a", "b"], distribution = [0.0, 1.0], mechanism = { kind = "randomized_response" } }, { name = "q2", labels = '
    '["a", "b"], distribution = [0.0, 1.0], mechanism = { kind = "randomized_response" } }]\n\n[population]\nsize = '
    '1\n\n[budget]\ntotal = 1e-300\nstrategy = "split"\n\n[arrivals]\nkind = "poisson"\nduration = 1e-300\n\n'
    '[network]\nlatency = { kind = "constant", value = 0.0 }\nloss = 0.0\n\n[analyst]\ncheckpoints = { every = '
    '0.25 }\ntasks = [{ kind = "frequency", confidence = 1e-300 }]\ncrosstabs = [{ rows = "q0", columns = "q1" }]'
    '\n\n[simulation]\nmode = "individual"\nreplications = 1\nseed = 0\n',
    # drift with stay one ulp below 1 and nothing to drift to: the redraw law rounded to zero and
    # was divided by its zero sum (the slow tier, from a local example database)
    'kind = "collection"\nname = "fuzz_collection"\npolicies = [{ name = "every report", kind = "'
    'plain" }]\n\n[population]\nlabels = ["a", "b"]\ndistribution = [0.6428571428571429, 0.35714285'
    '714285715]\nsize = 1\n\n[collection]\nperiods = 4\nperiod = 1e-300\nschedule = { kind = "random"'
    ', rate = 1e-300 }\nchange = { kind = "drift", final = [0.6428571428571429, 0.35714285714285'
    '715], stay = 0.9999999999999999 }\ndelta = 1e-300\n\n[mechanism]\nkind = "randomized_response"'
    '\neps = 1e-300\n\n[network]\nlatency = { kind = "constant", value = 0.0 }\nloss = 0.0\n\n[analyst'
    "]\nconfidence = 1e-300\n\n[simulation]\nseed = 0\nreplications = 1\n",
]


@pytest.mark.parametrize("text", FOUND, ids=[f"found{i}" for i in range(len(FOUND))])
def test_what_the_fuzzer_found_runs_or_is_refused_in_one_line(text, tmp_path):
    from tests.sim.fuzz import check_run

    check_run(text, tmp_path)


def test_a_figure_stopped_half_way_by_an_error_is_closed():
    """The slow fuzz tier ran thousands of reports in one process and pyplot warned about more
    than 20 open figures: every figure opened while a report is drawn is closed at the end,
    also when an error stops it half-way."""
    from ldpsim.report.figures import plt, quiet_figures

    before = set(plt.get_fignums())
    with pytest.raises(RuntimeError), quiet_figures():
        plt.subplots()
        raise RuntimeError("half-way")
    assert set(plt.get_fignums()) == before


#: A multi-party file whose exact worst-case linear program (the universal protocol's at k = 7:
#: 4.2 million coefficients) took 17 to 29 s of CPU: the harness estimated the run at 0.1 s
#: and ran it under its 60 s limit, which a loaded machine passed (slow tier, a "hang").
WORST_CASE_LP = (
    'kind = "multiparty"\nname = "fuzz_mp"\nprotocols = ["binary", "universal"]\n\n'
    '[parties]\nk = 7\neps = 1e-300\ndelta = 0.5\np_one = 1e-300\n\n[task]\nkind = "sum"\n\n'
    "[rounds]\ncount = 165\nbatch = 10000000\ninterval = 1000000000.0\n\n"
    '[network]\nlatency = { kind = "exponential", mean = 7.0 }\n\n'
    "[simulation]\nseed = 0\nreplications = 1\nalpha = 1e-300\n"
)


def test_the_harness_counts_the_worst_case_linear_programs():
    from tests.sim.fuzz import WORK_BUDGET, check_run, estimated_seconds

    assert estimated_seconds(WORST_CASE_LP) > WORK_BUDGET
    assert check_run(WORST_CASE_LP, Path(tempfile.mkdtemp())) == "heavy"


@pytest.mark.parametrize("k, task", [(3, "sum"), (4, "xor"), (5, "majority")])
def test_worst_case_seconds_counts_each_program_solved_once(k, task, monkeypatch):
    """worst_case_seconds against the programs exact_tables really solves: every call of
    worst_case recorded with its size (equal programs of a symmetric task are solved once,
    and counted once)."""
    import ldpsim.protocols as protocols
    from ldpsim.protocols.decisions import lp_coefficients
    from ldpsim.sim.multiparty import SECONDS_PER_LP_COEFFICIENT, exact_tables, worst_case_seconds
    from ldpsim.sim.scenario import parse_scenario

    text = WORST_CASE_LP.replace("k = 7", f"k = {k}").replace('kind = "sum"', f'kind = "{task}"')
    scenario = parse_scenario(text, "case.toml")
    solved = []
    real = protocols.worst_case

    def recording(protocol, t, party=protocols.OBSERVER):
        solved.append(lp_coefficients(protocol, t, party))
        return real(protocol, t, party)

    monkeypatch.setattr(protocols, "worst_case", recording)
    monkeypatch.setattr("ldpsim.sim.multiparty.worst_case", recording, raising=False)  # imported at the top or not
    exact_tables(scenario)
    assert solved
    assert worst_case_seconds(scenario) == pytest.approx(sum(solved) * SECONDS_PER_LP_COEFFICIENT, rel=1e-12)


def test_a_resume_whose_metadata_resumes_is_not_a_list_is_one_line(tmp_path):
    """The slow tampered-folder tier: metadata.json's "resumes" set to 0 made resume raise
    AttributeError ('int' object has no attribute 'append'). It is a record someone edited."""
    import json

    from tests.cli_helpers import run_cli

    path = tmp_path / "s.toml"
    path.write_text(
        WORST_CASE_LP.replace("k = 7", "k = 2")
        .replace("count = 165", "count = 20")
        .replace("replications = 1", "replications = 2")
    )
    run = tmp_path / "run"
    assert run_cli("run", str(path), "--out", str(run), "--no-progress").returncode == 0
    (run / "replications" / "rep-000001.csv").unlink()  # something to resume
    meta = json.loads((run / "metadata.json").read_text())
    meta["resumes"] = 0
    (run / "metadata.json").write_text(json.dumps(meta))
    done = run_cli("run", "--resume", str(run), "--no-progress")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "'resumes' is 0, not a list" in done.stderr, done.stderr
