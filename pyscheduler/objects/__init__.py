"""The scheduler's objects, one layer (no cache/scheduler split): partition, queue,
application, allocation (ask and allocation), node, user/group usage, reservation.

Lock order (never upward, never two of one kind; copy a child collection, release, then lock
each child): partition -> queue -> application -> node.
"""
