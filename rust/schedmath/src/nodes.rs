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
//! Reservations: an ask that fits no node reserves the node closest to fitting it, by YuniKorn's
//! FitInScore (`closest_fits`), over every node (saturated ones included: they are the usual
//! candidates), without walking the order.
//!
//! Python keeps the node objects; the index keeps only what ordering and the fit filters need.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
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
    /// Per resource type index, how many nodes have each available quantity. The largest is
    /// an upper bound on what one node can take now, so an ask that fits no node (a full
    /// cluster) is answered without walking the nodes.
    available_counts: Vec<BTreeMap<i64, u32>>,
}

/// What a caller needs to check an ask against nodes: its positive quantities by type index,
/// in the ask's own order (the fit-in score sums in that order, as Python does).
#[derive(Clone, Debug, Default)]
pub struct Demand(Vec<(usize, i64)>);

impl Demand {
    /// Every requested quantity is at most the same type of `resources` (missing there: 0).
    fn fits_in(&self, resources: &[i64]) -> bool {
        self.0.iter().all(|&(t, v)| v <= resources.get(t).copied().unwrap_or(0))
    }

    /// YuniKorn's FitInScore: per requested type, the fraction still missing from `available`
    /// (0 when the demand fits). Summed in the demand's order so it equals Python's float sum.
    fn fit_in_score(&self, available: &[i64]) -> Score {
        let mut score = 0.0;
        for &(t, wanted) in &self.0 {
            let missing = wanted - available.get(t).copied().unwrap_or(0).max(0);
            if missing > 0 {
                score += rounded_ratio(missing.unsigned_abs(), wanted.unsigned_abs());
            }
        }
        Score(score)
    }
}

/// `numerator / denominator` (0 < numerator <= denominator) rounded once to the nearest f64,
/// ties to even, like Python's int division: converting each side to f64 first would round
/// twice for quantities above 2^53 (memory in bytes on very large nodes).
fn rounded_ratio(numerator: u64, denominator: u64) -> f64 {
    const EXACT_LIMIT: u64 = 1 << f64::MANTISSA_DIGITS;
    debug_assert!(0 < numerator && numerator <= denominator);
    if numerator <= EXACT_LIMIT && denominator <= EXACT_LIMIT {
        return numerator as f64 / denominator as f64;
    }
    // Scale so the integer quotient has 54 or 55 bits: 53 for the mantissa, the rest (with
    // the remainder) for rounding. numerator <= denominator keeps the shift >= 54 and the
    // shifted numerator below 2^119.
    let shift = f64::MANTISSA_DIGITS + 1 + bit_length(denominator) - bit_length(numerator);
    let scaled = u128::from(numerator) << shift;
    let (quotient, remainder) = (scaled / u128::from(denominator), scaled % u128::from(denominator));
    let dropped = 128 - quotient.leading_zeros() - f64::MANTISSA_DIGITS;
    let mut mantissa = quotient >> dropped;
    let rest = quotient & ((1 << dropped) - 1);
    let half = 1 << (dropped - 1);
    if rest > half || (rest == half && (remainder != 0 || (mantissa & 1) == 1)) {
        mantissa += 1;
    }
    // Both factors are exact (mantissa <= 2^53, a power of two in the normal range).
    mantissa as f64 * 2f64.powi(dropped as i32 - shift as i32)
}

fn bit_length(value: u64) -> u32 {
    u64::BITS - value.leading_zeros()
}

impl NodeIndex {
    pub fn new(policy: SortPolicy, weights: &[(&str, f64)]) -> NodeIndex {
        let mut index = NodeIndex {
            policy,
            weights: Vec::new(),
            types: HashMap::new(),
            nodes: HashMap::new(),
            order: BTreeSet::new(),
            saturated: BTreeSet::new(),
            available_counts: Vec::new(),
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
            let before = (state.available != available).then(|| state.available.clone());
            if old != score || was_saturated != saturated {
                self.set_for(was_saturated).remove(&(old, Arc::clone(&key)));
                self.set_for(saturated).insert((score, Arc::clone(&key)));
            }
            if let Some(before) = before {
                self.count_available(&before, false);
                self.count_available(&available, true);
            }
            self.nodes.insert(key, NodeState { total, available, schedulable, reserved, score });
            return;
        }
        let key: Arc<str> = Arc::from(node_id);
        self.set_for(saturated).insert((score, Arc::clone(&key)));
        self.count_available(&available, true);
        self.nodes.insert(key, NodeState { total, available, schedulable, reserved: false, score });
    }

    fn count_available(&mut self, available: &[i64], add: bool) {
        if self.available_counts.len() < available.len() {
            self.available_counts.resize_with(available.len(), BTreeMap::new);
        }
        for (counts, &value) in self.available_counts.iter_mut().zip(available) {
            match counts.entry(value) {
                Entry::Occupied(mut entry) if !add => {
                    if *entry.get() <= 1 {
                        entry.remove();
                    } else {
                        *entry.get_mut() -= 1;
                    }
                }
                Entry::Occupied(mut entry) => *entry.get_mut() += 1,
                Entry::Vacant(entry) => {
                    if add {
                        entry.insert(1);
                    }
                }
            }
        }
    }

    /// Whether some node could hold the demand now: each requested quantity is at most the
    /// largest available of its type (a node without the type has 0, which fits no demand).
    pub fn could_fit(&self, demand: &Demand) -> bool {
        demand.0.iter().all(|&(t, v)| {
            self.available_counts.get(t).and_then(|counts| counts.last_key_value()).is_some_and(|(&max, _)| max >= v)
        })
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
                self.count_available(&state.available, false);
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
        if !self.could_fit(demand) {
            return None;
        }
        let start = match after {
            Some((score, id)) => Bound::Excluded((*score, Arc::clone(id))),
            None => Bound::Unbounded,
        };
        for (score, id) in self.order.range((start, Bound::Unbounded)) {
            let state = &self.nodes[id];
            if state.is_candidate(skip_reserved) && demand.fits_in(&state.total) && demand.fits_in(&state.available) {
                return Some((*score, Arc::clone(id)));
            }
        }
        None
    }

    /// Where an ask that fits nowhere may reserve: up to `limit` nodes after `after` (from the
    /// closest when None), in (fit-in score, node id) order, that are schedulable, not reserved
    /// (when `skip_reserved`) and whose capacity holds the demand. Each call visits every node
    /// once, keeping the best `limit` in a heap: O(n log limit). The cursors are in the
    /// fit-in order, not the node order: resume `closest_fits` with them, never `first_fit`.
    pub fn closest_fits(
        &self,
        demand: &Demand,
        limit: usize,
        after: Option<&Cursor>,
        skip_reserved: bool,
    ) -> Vec<Cursor> {
        if limit == 0 {
            return Vec::new();
        }
        let after = after.map(|(score, id)| (*score, id));
        // A max-heap: its top is the worst of the best so far, the one a closer node replaces.
        let mut closest: BinaryHeap<(Score, &Arc<str>)> = BinaryHeap::with_capacity(limit + 1);
        for (id, state) in &self.nodes {
            if !state.is_candidate(skip_reserved) || !demand.fits_in(&state.total) {
                continue;
            }
            let candidate = (demand.fit_in_score(&state.available), id);
            if after.is_some_and(|resume| candidate <= resume) {
                continue;
            }
            if closest.len() < limit {
                closest.push(candidate);
            } else if let Some(mut worst) = closest.peek_mut() {
                if candidate < *worst {
                    *worst = candidate;
                }
            }
        }
        closest.into_sorted_vec().into_iter().map(|(score, id)| (score, Arc::clone(id))).collect()
    }
}

impl NodeState {
    /// Whether new work may be placed on, or reserve, this node at all.
    fn is_candidate(&self, skip_reserved: bool) -> bool {
        self.schedulable && !(skip_reserved && self.reserved)
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
    fn a_demand_larger_than_every_node_s_available_is_answered_by_the_bounds() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        node(&mut idx, "a", (100, 10), (0, 0));
        node(&mut idx, "b", (100, 10), (50, 2));
        node(&mut idx, "c", (100, 10), (5, 4));
        let big = idx.demand(&[("vcore", 5)]);
        assert!(!idx.could_fit(&big) && idx.first_fit(&big, None, true).is_none());
        // Both types must fit somewhere, but not necessarily on one node: the walk decides.
        let split = idx.demand(&[("memory", 40), ("vcore", 4)]);
        assert!(idx.could_fit(&split) && idx.first_fit(&split, None, true).is_none());
        node(&mut idx, "a", (100, 10), (60, 6));
        assert_eq!(idx.first_fit(&big, None, true).map(|c| c.1.to_string()), Some("a".to_string()));
        node(&mut idx, "a", (100, 10), (60, 3));
        assert!(!idx.could_fit(&big));
        assert!(idx.remove("b") && idx.remove("c"));
        let two = idx.demand(&[("vcore", 3)]);
        assert!(idx.could_fit(&two));
        assert!(idx.remove("a") && !idx.could_fit(&two));
        // A type no node has yet, and types added after a node was indexed.
        let unknown = idx.demand(&[("gpu", 1)]);
        assert!(!idx.could_fit(&unknown));
        idx.upsert("g", &[("gpu", 2)], &[("gpu", 1)], true);
        assert!(idx.could_fit(&unknown) && !idx.could_fit(&two));
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

    fn closest(idx: &NodeIndex, demand: &Demand, limit: usize, after: Option<&Cursor>) -> Vec<(f64, String)> {
        idx.closest_fits(demand, limit, after, true).into_iter().map(|(score, id)| (score.0, id.to_string())).collect()
    }

    #[test]
    fn closest_fits_orders_by_fit_in_score_then_id() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        node(&mut idx, "quarter", (100, 10), (75, 10)); // memory 25/100 missing
        node(&mut idx, "full", (100, 10), (0, 0)); // saturated: still a candidate
        node(&mut idx, "b-half", (100, 10), (50, 10));
        node(&mut idx, "a-half", (100, 10), (100, 5)); // vcore 5/10 missing: ties b-half
        node(&mut idx, "over", (100, 10), (-20, 10)); // over-committed: counts as nothing free
        let ask = idx.demand(&[("memory", 100), ("vcore", 10)]);
        let got = closest(&idx, &ask, 10, None);
        let expected = [(0.25, "quarter"), (0.5, "a-half"), (0.5, "b-half"), (1.0, "over"), (2.0, "full")];
        assert_eq!(got, expected.map(|(score, id)| (score, id.to_string())));
    }

    #[test]
    fn closest_fits_needs_capacity_and_skips_unschedulable_and_reserved() {
        let mut idx = NodeIndex::new(SortPolicy::BinPacking, &[]);
        node(&mut idx, "small", (50, 10), (50, 10)); // capacity too small for memory 100
        node(&mut idx, "ok", (200, 10), (10, 1));
        node(&mut idx, "reserved", (200, 10), (150, 10));
        idx.upsert("cordoned", &[("memory", 200), ("vcore", 10)], &[("memory", 200), ("vcore", 10)], false);
        idx.set_reserved("reserved", true);
        let ask = idx.demand(&[("memory", 160), ("vcore", 2)]);
        let ids = |got: Vec<(f64, String)>| got.into_iter().map(|(_, id)| id).collect::<Vec<_>>();
        assert_eq!(ids(closest(&idx, &ask, 10, None)), ["ok"]);
        let with_reserved = idx.closest_fits(&ask, 10, None, false);
        assert_eq!(with_reserved.iter().map(|(_, id)| &**id).collect::<Vec<_>>(), ["reserved", "ok"]);
        idx.set_reserved("reserved", false);
        assert_eq!(ids(closest(&idx, &ask, 10, None)), ["reserved", "ok"], "unreserved: a candidate again");
        let gpu = idx.demand(&[("nvidia.com/gpu", 1)]);
        assert!(closest(&idx, &gpu, 10, None).is_empty(), "no node has the type");
        let nothing = idx.demand(&[]);
        assert_eq!(closest(&idx, &nothing, 10, None).len(), 3, "an empty ask fits every capacity, score 0");
    }

    #[test]
    fn closest_fits_limits_and_resumes_after_a_cursor() {
        let mut idx = NodeIndex::new(SortPolicy::Fair, &[]);
        for i in 0..50i64 {
            // Every fifth node shares a score with four others: ties across batch boundaries.
            node(&mut idx, &format!("n{i:02}"), (100, 10), (10 * (i % 5), 10));
        }
        let ask = idx.demand(&[("memory", 100)]);
        let all = closest(&idx, &ask, 100, None);
        assert_eq!(all.len(), 50);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
        assert_eq!(all[0], (0.6, "n04".to_string()));
        assert!(closest(&idx, &ask, 0, None).is_empty());
        let mut resumed = Vec::new();
        let mut after: Option<Cursor> = None;
        loop {
            let batch = idx.closest_fits(&ask, 7, after.as_ref(), true);
            let Some(last) = batch.last().cloned() else { break };
            resumed.extend(batch.into_iter().map(|(score, id)| (score.0, id.to_string())));
            after = Some(last);
        }
        assert_eq!(resumed, all, "batches of 7 resumed from cursors give the whole order once");
    }

    #[test]
    fn fit_in_score_divides_like_python_above_two_to_the_53() {
        // Python's int / int rounds the exact quotient once; f64 conversion first would not.
        assert_eq!(rounded_ratio(9_007_199_254_740_993, 18_014_398_509_481_987), 0.5);
        assert_eq!(rounded_ratio(12_345_678_901_234_567, 98_765_432_109_876_543), 0.12499999886093749);
        assert_eq!(rounded_ratio(1, i64::MAX as u64), 1.0842021724855044e-19);
        assert_eq!(rounded_ratio(i64::MAX as u64 - 1, i64::MAX as u64), 1.0);
        assert_eq!(rounded_ratio(3 * (1 << 60) + 1, (1 << 62) + 5), 0.75);
        assert_eq!(rounded_ratio(3, 7), 3.0 / 7.0);
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
