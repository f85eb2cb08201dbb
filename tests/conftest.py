import os

from hypothesis import HealthCheck, settings

# Hypothesis runs derandomised by default (the same examples on every run, so CI is
# reproducible); timing deadlines are off because the CI machine is shared and noisy.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
# HYPOTHESIS_PROFILE=thorough: many more examples, for a manual hunt for edge cases.
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=3000, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
