"""The analyst: functions of privatised reports or counts (never of how they were made)."""

from ldpsim.analyst.frequency import FrequencyEstimate, frequency_estimate, frequency_standard_error

__all__ = ["FrequencyEstimate", "frequency_estimate", "frequency_standard_error"]
