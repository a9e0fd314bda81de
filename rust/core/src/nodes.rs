//! The node index: nodes ordered by (score, node id) for the scheduling cycle's hot path.
//!
//! YuniKorn keeps nodes in a B-tree ordered by score and re-scores a node whenever it changes
//! (`node_collection.go`, `nodesorting.go`); this is the same, with the ordering in a
//! `BTreeSet` and resources as dense vectors over the resource types seen so far.
//!
//! Scoring: for each type with a non-zero weight and a non-zero node total,
//! `share = 1 - available / total`; `usage = Σ w·share / Σ w`. `fair` orders by `usage`
//! (least used first), `binpacking` by `1 - usage` (most used first). Equal scores are ordered
//! by node id, so runs repeat exactly.
//!
//! Python keeps the node objects; the index keeps only what ordering and the fit filters need.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortPolicy {
    Fair,
    BinPacking,
}

impl SortPolicy {
    pub fn parse(name: &str) -> Option<SortPolicy> {
        match name.to_ascii_lowercase().as_str() {
            "fair" | "" => Some(SortPolicy::Fair),
            "binpacking" => Some(SortPolicy::BinPacking),
            _ => None,
        }
    }
}

/// A totally ordered f64 (scores are finite; `total_cmp` keeps the order total anyway).
#[derive(Clone, Copy, Debug)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A position in the order: resume iteration after it.
pub type Cursor = (Score, Arc<str>);

struct NodeState {
    total: Vec<i64>,
    available: Vec<i64>,
    schedulable: bool,
    reserved: bool,
    score: Score,
}

pub struct NodeIndex {
    policy: SortPolicy,
    /// Weight per resource type index (0: the type does not count).
    weights: Vec<f64>,
    types: HashMap<String, usize>,
    nodes: HashMap<Arc<str>, NodeState>,
    /// Nodes that could take some ask, in order: the ones `first_fit` walks.
    order: BTreeSet<(Score, Arc<str>)>,
    /// Nodes with nothing available (they fit no ask), kept out of the walk: with binpacking
    /// they would otherwise sit at the front and be skipped one by one for every ask.
    saturated: BTreeSet<(Score, Arc<str>)>,
}

/// What a caller needs to check an ask against nodes, as a dense vector.
#[derive(Clone, Debug, Default)]
pub struct Demand(Vec<(usize, i64)>);

impl NodeIndex {
    pub fn new(policy: SortPolicy, weights: &[(&str, f64)]) -> NodeIndex {
        let mut index = NodeIndex {
            policy,
            weights: Vec::new(),
            types: HashMap::new(),
            nodes: HashMap::new(),
            order: BTreeSet::new(),
            saturated: BTreeSet::new(),
        };
        index.set_weights(weights);
        index
    }

    fn type_index(&mut self, name: &str) -> usize {
        if let Some(&i) = self.types.get(name) {
            return i;
        }
        let i = self.types.len();
        self.types.insert(name.to_string(), i);
        self.weights.push(0.0);
        i
    }

    fn set_weights(&mut self, weights: &[(&str, f64)]) {
        for w in self.weights.iter_mut() {
            *w = 0.0;
        }
        let defaults = [("vcore", 1.0), ("memory", 1.0)];
        let weights = if weights.is_empty() { &defaults[..] } else { weights };
        for (name, weight) in weights {
            let i = self.type_index(name);
            self.weights[i] = *weight;
        }
    }

    fn vector(&mut self, resource: &[(&str, i64)]) -> Vec<i64> {
        let mut v = vec![0; self.types.len()];
        for (name, value) in resource {
            let i = self.type_index(name);
            if i >= v.len() {
                v.resize(i + 1, 0);
            }
            v[i] = *value;
        }
        v
    }

    /// Converts an ask once, so repeated fit checks do not look names up again. Types the
    /// index has never seen are kept: no node has them, so such an ask fits nowhere.
    pub fn demand(&mut self, resource: &[(&str, i64)]) -> Demand {
        Demand(resource.iter().filter(|(_, v)| *v > 0).map(|(n, v)| (self.type_index(n), *v)).collect())
    }

    fn score_of(&self, total: &[i64], available: &[i64]) -> Score {
        let (mut weighted, mut weight_sum) = (0.0f64, 0.0f64);
        for (t, &w) in self.weights.iter().enumerate() {
            let tot = total.get(t).copied().unwrap_or(0);
            if w == 0.0 || tot == 0 {
                continue;
            }
            let avail = available.get(t).copied().unwrap_or(0);
            let share = 1.0 - avail as f64 / tot as f64;
            if share.is_nan() {
                continue;
            }
            weighted += w * share;
            weight_sum += w;
        }
        let usage = if weight_sum > 0.0 { weighted / weight_sum } else { 0.0 };
        Score(match self.policy {
            SortPolicy::Fair => usage,
            SortPolicy::BinPacking => 1.0 - usage,
        })
    }

    /// Adds a node or updates its resources; O(log n), and nothing moves when the score and
    /// the saturation are unchanged.
    pub fn upsert(&mut self, node_id: &str, total: &[(&str, i64)], available: &[(&str, i64)], schedulable: bool) {
        let total = self.vector(total);
        let available = self.vector(available);
        let score = self.score_of(&total, &available);
        let saturated = available.iter().all(|&v| v <= 0);
        if let Some((key, state)) = self.nodes.get_key_value(node_id).map(|(k, s)| (Arc::clone(k), s)) {
            let (old, was_saturated, reserved) = (state.score, is_saturated(&state.available), state.reserved);
            if old != score || was_saturated != saturated {
                self.set_for(was_saturated).remove(&(old, Arc::clone(&key)));
                self.set_for(saturated).insert((score, Arc::clone(&key)));
            }
            self.nodes.insert(key, NodeState { total, available, schedulable, reserved, score });
            return;
        }
        let key: Arc<str> = Arc::from(node_id);
        self.set_for(saturated).insert((score, Arc::clone(&key)));
        self.nodes.insert(key, NodeState { total, available, schedulable, reserved: false, score });
    }

    fn set_for(&mut self, saturated: bool) -> &mut BTreeSet<(Score, Arc<str>)> {
        if saturated {
            &mut self.saturated
        } else {
            &mut self.order
        }
    }

    pub fn remove(&mut self, node_id: &str) -> bool {
        match self.nodes.remove_entry(node_id) {
            Some((key, state)) => {
                let saturated = is_saturated(&state.available);
                self.set_for(saturated).remove(&(state.score, key));
                true
            }
            None => false,
        }
    }

    pub fn set_reserved(&mut self, node_id: &str, reserved: bool) -> bool {
        match self.nodes.get_mut(node_id) {
            Some(state) => {
                state.reserved = reserved;
                true
            }
            None => false,
        }
    }

    /// Changes the policy or weights; re-scores every node and rebuilds the order.
    pub fn set_policy(&mut self, policy: SortPolicy, weights: &[(&str, f64)]) {
        self.policy = policy;
        self.set_weights(weights);
        let keys: Vec<Arc<str>> = self.nodes.keys().cloned().collect();
        self.order.clear();
        self.saturated.clear();
        for key in keys {
            let state = &self.nodes[&key];
            let score = self.score_of(&state.total, &state.available);
            let saturated = is_saturated(&state.available);
            self.nodes.get_mut(&key).expect("key from the map").score = score;
            self.set_for(saturated).insert((score, key));
        }
    }

    pub fn policy(&self) -> SortPolicy {
        self.policy
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn score(&self, node_id: &str) -> Option<f64> {
        self.nodes.get(node_id).map(|s| s.score.0)
    }

    /// Node ids in order (best first), saturated nodes included.
    pub fn ordered(&self) -> Vec<&str> {
        let mut all: Vec<&(Score, Arc<str>)> = self.order.iter().chain(self.saturated.iter()).collect();
        all.sort();
        all.into_iter().map(|(_, id)| &**id).collect()
    }

    /// The first node after `after` (from the best when None) that is schedulable, not
    /// reserved (when `skip_reserved`), whose capacity can hold the demand and whose
    /// available resources fit it now. Walks the order without copying it.
    pub fn first_fit(&self, demand: &Demand, after: Option<&Cursor>, skip_reserved: bool) -> Option<Cursor> {
        let start = match after {
            Some((score, id)) => Bound::Excluded((*score, Arc::clone(id))),
            None => Bound::Unbounded,
        };
        for (score, id) in self.order.range((start, Bound::Unbounded)) {
            let state = &self.nodes[id];
            if !state.schedulable || (skip_reserved && state.reserved) {
                continue;
            }
            let fits = demand.0.iter().all(|&(t, v)| {
                v <= state.total.get(t).copied().unwrap_or(0) && v <= state.available.get(t).copied().unwrap_or(0)
            });
            if fits {
                return Some((*score, Arc::clone(id)));
            }
        }
        None
    }
}

fn is_saturated(available: &[i64]) -> bool {
    available.iter().all(|&v| v <= 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(index: &mut NodeIndex, id: &str, total: (i64, i64), available: (i64, i64)) {
        index.upsert(id, &[("memory", total.0), ("vcore", total.1)], &[("memory", available.0), ("vcore", available.1)], true);
    }

    fn order(index: &NodeIndex) -> Vec<String> {
        index.ordered().into_iter().map(String::from).collect()
    }

    #[test]
    fn fair_puts_the_least_used_first_and_ties_by_id() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        node(&mut idx, "b", (100, 10), (50, 5));
        node(&mut idx, "a", (100, 10), (50, 5));
        node(&mut idx, "c", (100, 10), (90, 9));
        assert_eq!(order(&idx), ["c", "a", "b"]);
        assert!((idx.score("a").unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn binpacking_puts_the_most_used_first() {
        let mut idx = NodeIndex::new(SortPolicy::BinPacking, &[]);
        node(&mut idx, "a", (100, 10), (90, 9));
        node(&mut idx, "b", (100, 10), (10, 1));
        assert_eq!(order(&idx), ["b", "a"]);
    }

    #[test]
    fn weights_change_the_score() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[("vcore", 4.0), ("memory", 1.0)]);
        // a: memory 80% used, vcore 0%; b: memory 0%, vcore 50%.
        node(&mut idx, "a", (100, 10), (20, 10));
        node(&mut idx, "b", (100, 10), (100, 5));
        // a = (0*4 + 0.8*1)/5 = 0.16; b = (0.5*4 + 0)/5 = 0.4.
        assert_eq!(order(&idx), ["a", "b"]);
        idx.set_policy(SortPolicy::Fair, &[("memory", 1.0)]);
        assert_eq!(order(&idx), ["b", "a"], "rebuilt with the new weights");
    }

    #[test]
    fn update_moves_a_node_and_remove_drops_it() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        node(&mut idx, "a", (100, 10), (100, 10));
        node(&mut idx, "b", (100, 10), (90, 9));
        assert_eq!(order(&idx), ["a", "b"]);
        node(&mut idx, "a", (100, 10), (10, 1));
        assert_eq!(order(&idx), ["b", "a"]);
        assert!(idx.remove("b"));
        assert_eq!(order(&idx), ["a"]);
        assert!(!idx.remove("b"));
    }

    #[test]
    fn first_fit_filters_and_resumes() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        node(&mut idx, "a", (100, 10), (100, 10));
        node(&mut idx, "b", (100, 10), (95, 9));
        node(&mut idx, "c", (1000, 100), (5, 1));
        let small = idx.demand(&[("memory", 10), ("vcore", 1)]);
        let first = idx.first_fit(&small, None, true).unwrap();
        assert_eq!(&*first.1, "a");
        idx.set_reserved("a", true);
        assert_eq!(&*idx.first_fit(&small, None, true).unwrap().1, "b");
        assert_eq!(&*idx.first_fit(&small, None, false).unwrap().1, "a");
        let after_b = idx.first_fit(&small, None, true).unwrap();
        assert!(idx.first_fit(&small, Some(&after_b), true).is_none(), "c is too full");
        idx.upsert("b", &[("memory", 100), ("vcore", 10)], &[("memory", 100), ("vcore", 10)], false);
        assert!(idx.first_fit(&small, None, true).is_none(), "b unschedulable, a reserved, c full");
        let gpu = idx.demand(&[("nvidia.com/gpu", 1)]);
        assert!(idx.first_fit(&gpu, None, false).is_none(), "no node has the type");
    }

    #[test]
    fn saturated_nodes_are_listed_but_never_walked() {
        let mut idx = NodeIndex::new(SortPolicy::BinPacking, &[]);
        node(&mut idx, "full", (100, 10), (0, 0));
        node(&mut idx, "half", (100, 10), (50, 5));
        assert_eq!(order(&idx), ["full", "half"], "binpacking: the full node is the most used");
        let ask = idx.demand(&[("memory", 1)]);
        assert_eq!(&*idx.first_fit(&ask, None, true).unwrap().1, "half");
        node(&mut idx, "full", (100, 10), (100, 10));
        assert_eq!(order(&idx), ["half", "full"], "freed: back in the walk");
        assert!(idx.remove("half"));
        node(&mut idx, "full", (100, 10), (0, 0));
        assert_eq!(order(&idx), ["full"]);
        assert!(idx.remove("full"));
        assert!(idx.is_empty() && order(&idx).is_empty());
    }

    #[test]
    fn many_nodes_stay_ordered_under_random_updates() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..2000 {
            node(&mut idx, &format!("n{i:04}"), (1000, 100), (1000, 100));
        }
        for _ in 0..20_000 {
            let i = next() % 2000;
            let used = (next() % 1000) as i64;
            node(&mut idx, &format!("n{i:04}"), (1000, 100), (1000 - used, 100 - used / 10));
        }
        let scores: Vec<(f64, String)> = idx.ordered().into_iter().map(|id| (idx.score(id).unwrap(), id.to_string())).collect();
        assert_eq!(scores.len(), 2000);
        assert!(scores.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
    }
}
