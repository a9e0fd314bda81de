"""The node reporter manager (docs/reporter.md): facts about nodes from many plugins, merged
field by field and applied to each node in one update.

The seed is ``shared/seeds/reporter-manager.md`` (Katalyst's design), the facts of what it
became in ``shared/spec/reporter.md``. The modules:

- :mod:`.content`: what a plugin reports (Katalyst's ``ReportContent`` model as plain data);
  :mod:`.plugin`: the plugin protocol and the enable rule;
- :mod:`.merge`: merging several plugins' fields by the seed's rules, in registration order,
  with validation per field; :mod:`.node_fields`: the fields a plugin may report about a node
  (Katalyst's ``CustomNodeResource`` and Kubernetes' ``Node``) and what they become on the core's
  node (attributes, capacity, occupied);
- :mod:`.rounds`: the rounds (polls, merge, checkpoint via :mod:`.checkpoint`), giving changed
  nodes to a sink (:mod:`.sink`); it knows nothing of the core;
- :mod:`.manager`: the core's reporter manager, whose sink (:mod:`.core_sink`) sends node
  UPDATEs through the RM proxy with the SI's ``reported_attributes`` and ``reported_occupied``
  extensions, and reads which nodes exist with a public query function
  (:mod:`pyscheduler.dao.node_snapshots`), never the core's objects;
- :mod:`.socket_plugins` (the ``reporter-grpc`` extra), reached through
  :mod:`.socket_directory`; :mod:`.views` and :mod:`.examples`: the REST answers and the demo's
  plugins.

It sits beside the simulator, above the RM interface: the manager drives node updates through
``RMProxy`` as any resource manager does.
"""
