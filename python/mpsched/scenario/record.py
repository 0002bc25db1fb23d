"""What a user asks to record: `[record]` (`RecordSpec`)."""

from __future__ import annotations

from mpsched.scenario.fields import FixedTime, _Model


class RecordSpec(_Model):
    """Sampling interval of the time series ("0" turns them off)."""

    interval: FixedTime = "10ms"
