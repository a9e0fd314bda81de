"""The RM proxy: the scheduler's API for resource managers (YuniKorn's ``SchedulerAPI``).

The messages it takes and the callback an RM implements are the SI's
(:mod:`pyscheduler.si`); the in-process RM that records callbacks for tests is in the test
kit (:mod:`pyscheduler.testing`).
"""

from pyscheduler.rmproxy.proxy import RMProxy

__all__ = ["RMProxy"]
