"""The test kit: an in-process RM that records every callback and waits for outcomes.

Like ``flask.testing``, it is public API for the users' own tests and nothing in the product
imports it: import it explicitly (``from pyscheduler.testing import RecordingRM``).
"""

from pyscheduler.testing.recording import RecordingRM, WaitTimeout

__all__ = ["RecordingRM", "WaitTimeout"]
