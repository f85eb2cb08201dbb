import os

from hypothesis import HealthCheck, settings

# Property tests check exact invariants (no sampling), so their inputs may vary from run to
# run; timing deadlines are off because the CI machine is shared and noisy.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# HYPOTHESIS_PROFILE=thorough: many more examples, for a manual hunt for edge cases.
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=3000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
