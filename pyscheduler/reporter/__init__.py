"""The node reporter manager (issue 12, being built): facts about nodes from many plugins,
merged field by field and applied to each node in one update.

The seed is ``shared/seeds/reporter-manager.md`` (Katalyst's design), the facts of what it
became in ``shared/spec/reporter.md``. So far:

- :mod:`.content`: what a plugin reports (Katalyst's ``ReportContent`` model as plain data);
- :mod:`.merge`: merging several plugins' fields by the seed's rules, in registration order,
  with validation per field;
- :mod:`.node_fields`: the fields a plugin may report about a node (Katalyst's
  ``CustomNodeResource`` and Kubernetes' ``Node``) and what they become on the core's node
  (attributes, capacity, occupied), applied through an UPDATE with the SI's
  ``reported_attributes`` and ``reported_occupied`` extensions.

It sits beside the simulator, above the RM interface: the manager drives node updates through
``RMProxy`` as any resource manager does.
"""
