//! A node's guaranteed-share preemption plan: YuniKorn's `calculateVictimsByNode`, played on the
//! ask's resource types. The native twin of `_plan_node` in
//! `pyscheduler/scheduler/preemption/guaranteed.py` with the arithmetic of `typed.py` (the
//! Python twin is this one's oracle, and both are checked against the dict-based reference).
//!
//! [`PlanQueues`] holds the queues an attempt plays with, each on the ask's types: parent,
//! guarantee per type (absent: the type is not guaranteed), whether its remaining guarantee is
//! always none, whether its own remaining takes precedence over its parent's (the ask's queue),
//! and its usage when the attempt started. The caller keeps them across attempts and updates a
//! queue's usage when it changed.
//!
//! [`PlanQueues::plan`] runs the two passes over a node's candidates (victims in YuniKorn's
//! per-node order): the first keeps a victim while its queue is over its guarantee and the ask's
//! queue would not go over its own, putting victims that do not reduce the node's shortfall
//! last; the second replays the kept order from scratch and finds the first index where the ask
//! fits. Node quantities are on the node's types (the ask's, the node's and the victims': a
//! type the ask does not name can still be short when the node is over-committed in it).
//! Arithmetic is in `i128`, so sums of `i64` quantities never overflow.

use crate::CoreError;

struct PlanQueue {
    parent: Option<usize>,
    guaranteed: Vec<Option<i128>>,
    none: bool,
    merge: bool,
    used: Vec<i128>,
}

/// The queues of one ask leaf's attempts, on the ask's types.
pub struct PlanQueues {
    types: usize,
    queues: Vec<PlanQueue>,
}

/// One victim of a node's plan.
pub struct Candidate<'a> {
    /// Its queue (an index from [`PlanQueues::add`]).
    pub queue: usize,
    /// Its resource on the ask's types.
    pub amounts: &'a [i128],
    /// Its resource on the node's types.
    pub freed: &'a [i128],
}

/// The ask and the node's free room, on the node's types.
pub struct NodeRoom<'a> {
    pub wanted: &'a [i128],
    pub available: &'a [i128],
}

/// Per type of the ask: the remaining guarantee's quantity, or None where it has no such type.
type Remaining = Vec<Option<i128>>;

impl PlanQueues {
    pub fn new(types: usize) -> Self {
        PlanQueues { types, queues: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Adds a queue (its parent added before it); its usage starts at zero.
    pub fn add(&mut self, parent: Option<usize>, guaranteed: Vec<Option<i128>>, none: bool, merge: bool) -> Result<usize, CoreError> {
        if guaranteed.len() != self.types {
            return Err(CoreError::InvalidPlan("a queue's guarantee must have one entry per ask type"));
        }
        if parent.is_some_and(|p| p >= self.queues.len()) {
            return Err(CoreError::InvalidPlan("a queue's parent must be added before it"));
        }
        self.queues.push(PlanQueue { parent, guaranteed, none, merge, used: vec![0; self.types] });
        Ok(self.queues.len() - 1)
    }

    /// Sets a queue's usage (allocated minus preempting) on the ask's types.
    pub fn set_used(&mut self, queue: usize, used: Vec<i128>) -> Result<(), CoreError> {
        if used.len() != self.types {
            return Err(CoreError::InvalidPlan("a queue's usage must have one entry per ask type"));
        }
        let entry = self.queues.get_mut(queue).ok_or(CoreError::InvalidPlan("no such queue"))?;
        entry.used = used;
        Ok(())
    }

    /// The node's plan: `(start index, positions of the kept candidates)`, or None when the
    /// ask does not fit with all of them.
    pub fn plan(&self, ask_queue: usize, candidates: &[Candidate<'_>], room: &NodeRoom<'_>) -> Result<Option<(usize, Vec<usize>)>, CoreError> {
        self.check(ask_queue, candidates, room)?;
        let mut state = self.start();
        let mut current = room.available.to_vec();
        let mut head = Vec::new();
        let mut tail = Vec::new();
        for (position, victim) in candidates.iter().enumerate() {
            if !self.victim_queue_over(&state, victim.queue) {
                continue;
            }
            let common = self.common_ancestor(victim.queue, ask_queue);
            self.shift(&mut state, ask_queue, victim.amounts, 1, common);
            let over = self.ask_queue_over(&state, ask_queue);
            self.shift(&mut state, ask_queue, victim.amounts, -1, common);
            if over {
                break;
            }
            if reduces_shortfall(room.wanted, &current, victim.freed) {
                self.shift(&mut state, victim.queue, victim.amounts, -1, common);
                self.shift(&mut state, ask_queue, victim.amounts, 1, common);
                add_into(&mut current, victim.freed);
                head.push(position);
            } else {
                tail.push(position);
            }
        }
        head.extend(tail);
        if head.is_empty() {
            return Ok(None);
        }
        let mut state = self.start();
        let mut current = room.available.to_vec();
        let mut results = Vec::with_capacity(head.len());
        let mut index = None;
        for position in head {
            let victim = &candidates[position];
            if self.victim_queue_over(&state, victim.queue) {
                self.shift(&mut state, victim.queue, victim.amounts, -1, None);
                add_into(&mut current, victim.freed);
                if index.is_none() && fits(room.wanted, &current) {
                    index = Some(results.len());
                }
                results.push(position);
            }
        }
        Ok(index.map(|index| (index, results)))
    }

    fn check(&self, ask_queue: usize, candidates: &[Candidate<'_>], room: &NodeRoom<'_>) -> Result<(), CoreError> {
        if ask_queue >= self.queues.len() {
            return Err(CoreError::InvalidPlan("no such ask queue"));
        }
        if room.wanted.len() != room.available.len() {
            return Err(CoreError::InvalidPlan("the ask and the node's room must be on the same types"));
        }
        for victim in candidates {
            if victim.queue >= self.queues.len() {
                return Err(CoreError::InvalidPlan("a victim's queue is unknown"));
            }
            if victim.amounts.len() != self.types || victim.freed.len() != room.wanted.len() {
                return Err(CoreError::InvalidPlan("a victim's resource must be on the ask's and the node's types"));
            }
        }
        Ok(())
    }

    /// A pass's usage per queue (flat: queue x type), starting from the attempt's.
    fn start(&self) -> Vec<i128> {
        self.queues.iter().flat_map(|q| q.used.iter().copied()).collect()
    }

    /// The queue's remaining guarantee in the pass (typed.py's `TypedPlan.remaining`).
    fn remaining(&self, state: &[i128], queue: usize) -> Option<Remaining> {
        let mut chain = Vec::new();
        let mut walk = Some(queue);
        while let Some(index) = walk {
            let entry = &self.queues[index];
            if entry.none {
                break;
            }
            chain.push(index);
            walk = entry.parent;
        }
        let mut remaining: Option<Remaining> = None;
        for &index in chain.iter().rev() {
            let entry = &self.queues[index];
            let used = &state[index * self.types..(index + 1) * self.types];
            let out = entry
                .guaranteed
                .iter()
                .enumerate()
                .map(|(i, limit)| {
                    let above = remaining.as_ref().and_then(|r| r[i]);
                    match limit {
                        None => above,
                        Some(limit) => {
                            let own = limit - used[i];
                            Some(match above {
                                Some(above) if !entry.merge && above <= own => above,
                                _ => own,
                            })
                        }
                    }
                })
                .collect();
            remaining = Some(out);
        }
        remaining
    }

    fn victim_queue_over(&self, state: &[i128], queue: usize) -> bool {
        match self.remaining(state, queue) {
            None => true,
            Some(remaining) => remaining.iter().any(|v| v.is_some_and(|v| v < 0)),
        }
    }

    fn ask_queue_over(&self, state: &[i128], queue: usize) -> bool {
        self.remaining(state, queue).is_some_and(|r| r.iter().any(|v| v.is_some_and(|v| v < 0)))
    }

    /// Adds `sign` x `amounts` to the usage of `queue` and its ancestors below `stop` (None: up
    /// to the root).
    fn shift(&self, state: &mut [i128], queue: usize, amounts: &[i128], sign: i128, stop: Option<usize>) {
        let mut walk = Some(queue);
        while let Some(index) = walk {
            if Some(index) == stop {
                break;
            }
            let used = &mut state[index * self.types..(index + 1) * self.types];
            for (value, amount) in used.iter_mut().zip(amounts) {
                *value += sign * amount;
            }
            walk = self.queues[index].parent;
        }
    }

    /// The lowest queue that is `queue` or one of its ancestors and also `other` or one of
    /// `other`'s ancestors.
    fn common_ancestor(&self, queue: usize, other: usize) -> Option<usize> {
        let mut chain = Vec::new();
        let mut walk = Some(other);
        while let Some(index) = walk {
            chain.push(index);
            walk = self.queues[index].parent;
        }
        let mut walk = Some(queue);
        while let Some(index) = walk {
            if chain.contains(&index) {
                return Some(index);
            }
            walk = self.queues[index].parent;
        }
        None
    }
}

/// Whether adding `freed` to `current` changes the shortfall `wanted - current` (negatives as 0).
fn reduces_shortfall(wanted: &[i128], current: &[i128], freed: &[i128]) -> bool {
    freed.iter().enumerate().any(|(i, &amount)| {
        amount != 0 && {
            let missing = wanted[i] - current[i];
            missing.max(0) != (missing - amount).max(0)
        }
    })
}

/// Every positive quantity of the ask is at most the room's.
fn fits(wanted: &[i128], current: &[i128]) -> bool {
    wanted.iter().zip(current).all(|(&w, &c)| w <= 0 || w <= c)
}

fn add_into(total: &mut [i128], amount: &[i128]) {
    for (value, add) in total.iter_mut().zip(amount) {
        *value += add;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// root (no guarantee) > parent (no guarantee) > {ask leaf guaranteed 10, victim leaves
    /// guaranteed 1}; one type. Queues without a guarantee on their path are `none`.
    fn tree(victim_leaves: usize) -> (PlanQueues, usize, Vec<usize>) {
        let mut queues = PlanQueues::new(1);
        let root = queues.add(None, vec![None], true, false).unwrap();
        let parent = queues.add(Some(root), vec![None], true, false).unwrap();
        let ask = queues.add(Some(parent), vec![Some(10)], false, true).unwrap();
        let leaves = (0..victim_leaves).map(|_| queues.add(Some(parent), vec![Some(1)], false, false).unwrap()).collect();
        (queues, ask, leaves)
    }

    fn candidate(queue: usize, amounts: &[i128]) -> Candidate<'_> {
        Candidate { queue, amounts, freed: amounts }
    }

    #[test]
    fn a_full_node_frees_the_first_victim_and_keeps_the_rest_behind_it() {
        let (mut queues, ask, leaves) = tree(3);
        for &leaf in &leaves {
            queues.set_used(leaf, vec![5]).unwrap();
        }
        let one = [1];
        let candidates: Vec<_> = leaves.iter().map(|&q| candidate(q, &one)).collect();
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[1], available: &[0] }).unwrap();
        assert_eq!(plan, Some((0, vec![0, 1, 2])));
    }

    #[test]
    fn a_victim_queue_within_its_guarantee_is_skipped() {
        let (mut queues, ask, leaves) = tree(2);
        queues.set_used(leaves[0], vec![1]).unwrap(); // exactly its guarantee
        queues.set_used(leaves[1], vec![3]).unwrap();
        let one = [1];
        let candidates = [candidate(leaves[0], &one), candidate(leaves[1], &one)];
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[1], available: &[0] }).unwrap();
        assert_eq!(plan, Some((0, vec![1])));
    }

    #[test]
    fn the_ask_queue_going_over_its_guarantee_stops_the_first_pass() {
        let (mut queues, ask, leaves) = tree(2);
        queues.set_used(ask, vec![10]).unwrap(); // at its guarantee: one more is over
        queues.set_used(leaves[0], vec![5]).unwrap();
        queues.set_used(leaves[1], vec![5]).unwrap();
        let one = [1];
        let candidates = [candidate(leaves[0], &one), candidate(leaves[1], &one)];
        assert_eq!(queues.plan(ask, &candidates, &NodeRoom { wanted: &[1], available: &[0] }).unwrap(), None);
    }

    #[test]
    fn victims_that_do_not_reduce_the_shortfall_go_last() {
        let (mut queues, ask, leaves) = tree(2);
        queues.set_used(leaves[0], vec![5]).unwrap();
        queues.set_used(leaves[1], vec![5]).unwrap();
        // Two node types: the ask needs type 0 only; the first victim frees type 1 only.
        let (a0, f0) = ([0], [0, 4]);
        let (a1, f1) = ([2], [2, 0]);
        let candidates = [
            Candidate { queue: leaves[0], amounts: &a0, freed: &f0 },
            Candidate { queue: leaves[1], amounts: &a1, freed: &f1 },
        ];
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[2, 0], available: &[0, 0] }).unwrap();
        assert_eq!(plan, Some((0, vec![1, 0])));
    }

    #[test]
    fn the_ask_queue_own_remaining_takes_precedence_over_its_parents() {
        // A guaranteed parent that is not "none" (only root can be, in YuniKorn's quirk) with
        // little left: the ask queue's own remaining counts (merge), a victim leaf's is bounded.
        let mut queues = PlanQueues::new(1);
        let root = queues.add(None, vec![Some(4)], false, false).unwrap();
        let ask = queues.add(Some(root), vec![Some(10)], false, true).unwrap();
        let leaf = queues.add(Some(root), vec![Some(100)], false, false).unwrap();
        queues.set_used(root, vec![6]).unwrap(); // root: 4 - 6 = -2 left
        queues.set_used(leaf, vec![6]).unwrap(); // within its own 100, but bounded by root's -2
        let one = [1];
        let candidates = [candidate(leaf, &one)];
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[1], available: &[0] }).unwrap();
        // The leaf is over through root; moving the victim keeps root's total, and the ask's
        // queue (own 10 - 1) is within its guarantee: without merge it would be over (root's -2).
        assert_eq!(plan, Some((0, vec![0])));
    }

    #[test]
    fn quantities_near_the_int64_limits_do_not_overflow() {
        let big = i64::MAX as i128;
        let mut queues = PlanQueues::new(1);
        let root = queues.add(None, vec![None], true, false).unwrap();
        let ask = queues.add(Some(root), vec![Some(big)], false, true).unwrap();
        let leaves: Vec<usize> = (0..2).map(|_| queues.add(Some(root), vec![Some(1)], false, false).unwrap()).collect();
        for &leaf in &leaves {
            queues.set_used(leaf, vec![big]).unwrap();
        }
        let amounts = [big];
        let candidates = [candidate(leaves[0], &amounts), candidate(leaves[1], &amounts)];
        // The first victim covers the ask; moving the second one too would take the ask's queue
        // to twice the int64 maximum, over its guarantee: the first pass stops there.
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[big], available: &[0] }).unwrap();
        assert_eq!(plan, Some((0, vec![0])));
        // A node short of twice the maximum cannot be helped.
        let plan = queues.plan(ask, &candidates, &NodeRoom { wanted: &[big], available: &[-big] }).unwrap();
        assert_eq!(plan, None);
    }

    #[test]
    fn malformed_input_is_refused() {
        let (mut queues, ask, _) = tree(1);
        assert!(queues.add(Some(99), vec![None], true, false).is_err());
        assert!(queues.add(None, vec![None, None], true, false).is_err());
        assert!(queues.set_used(99, vec![0]).is_err());
        assert!(queues.set_used(ask, vec![0, 0]).is_err());
        let one = [1];
        assert!(queues.plan(99, &[], &NodeRoom { wanted: &[1], available: &[0] }).is_err());
        assert!(queues.plan(ask, &[candidate(99, &one)], &NodeRoom { wanted: &[1], available: &[0] }).is_err());
        assert!(queues.plan(ask, &[], &NodeRoom { wanted: &[1], available: &[0, 0] }).is_err());
    }
}
