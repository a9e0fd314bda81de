"""Preemption (issue 13): guaranteed-share preemption for asks whose queue is below its
guarantee (:mod:`.guaranteed`), over queue snapshots (:mod:`.snapshot`) and the victims below
the fence root (:mod:`.victims`). The scheduling cycle calls it; everything runs under the
partition's lock and the victims are released through the partition's outbox."""
