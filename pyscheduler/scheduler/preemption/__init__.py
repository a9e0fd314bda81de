"""Preemption (issue 13), behind one extension point (:mod:`.preemptor`: the ``Preemptor``
protocol, its attempt and typed outcome): the three policies of :mod:`.policies` are
guaranteed-share preemption for asks whose queue is below its guarantee (:mod:`.guaranteed`,
over queue snapshots :mod:`.snapshot`, the victims below the fence root :mod:`.victims`, the
node plan over :mod:`.typed` in :mod:`.node_plan`, natively unless the one native switch
is off), required-node preemption (:mod:`.required_node`) and
quota-change enforcement (:mod:`.quota`). The scheduling cycle offers them the asks it cannot
place, the cluster context's tick lets them act on time; everything runs under the
partition's lock and the victims are released through the partition's outbox."""
