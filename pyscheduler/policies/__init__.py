"""Scheduling policies that stand apart from the scheduler objects.

:mod:`pyscheduler.policies.placement` decides which queue an application goes to (YuniKorn's
placement rules: ``provided``, ``user``, ``fixed``, ``tag`` and the implicit ``recovery``). It
reads the queue tree only through the small :class:`~pyscheduler.policies.placement.QueueView`
protocol, so it depends on neither the configuration package nor the queue objects.
"""
