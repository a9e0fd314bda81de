"""The scheduler's objects, one layer (no cache/scheduler split): partition, queue,
application, allocation (ask and allocation), node, user/group usage, reservation.

Locks (:mod:`pyscheduler.objects.locking`): the partition's lock guards its whole object graph;
the objects have no locks of their own. Nothing reaches the RM while it is held.
"""
