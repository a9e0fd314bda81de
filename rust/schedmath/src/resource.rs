//! Resource quantities: YuniKorn's `pkg/common/resources` arithmetic over interned types.
//!
//! A [`Quantities`] holds int64 quantities per resource type, the types as small ids (the
//! binding interns the names); entries keep the order they were first set in (a Python dict's
//! order), so a result lists its left operand's types, then the right operand's new ones.
//! Semantics, as `pyscheduler/common/resources_py.py` (the pure-Python twin, this one's oracle):
//!
//! - a type missing from a resource is 0 for arithmetic and comparisons, except in
//!   [`Quantities::fits_in_max_undef`], [`Quantities::room_above`] and [`component_min_undef`],
//!   where a type missing from a maximum is unlimited;
//! - a result past int64 is the int64 bound (YuniKorn's saturation): the [`Saturation`] is
//!   told the type and the bound, so the caller can warn as YuniKorn does. Sums are taken in
//!   `i128`, where no sum of two `i64` overflows.

/// An interned resource type.
pub type TypeId = u32;

/// Told of every type whose result was saturated at an int64 bound (`upper`: the maximum).
pub trait Saturation {
    fn saturated(&mut self, type_id: TypeId, upper: bool);
}

/// Ignores saturation (tests, or callers that need no warning).
pub struct Quiet;

impl Saturation for Quiet {
    fn saturated(&mut self, _: TypeId, _: bool) {}
}

impl<F: FnMut(TypeId, bool)> Saturation for F {
    fn saturated(&mut self, type_id: TypeId, upper: bool) {
        self(type_id, upper)
    }
}

fn clamp(value: i128, type_id: TypeId, on: &mut impl Saturation) -> i64 {
    if value > i64::MAX as i128 {
        on.saturated(type_id, true);
        i64::MAX
    } else if value < i64::MIN as i128 {
        on.saturated(type_id, false);
        i64::MIN
    } else {
        value as i64
    }
}

/// Quantities per resource type, in the order each type was first set; ids are unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quantities {
    entries: Vec<(TypeId, i64)>,
}

impl Quantities {
    pub fn new() -> Self {
        Quantities { entries: Vec::new() }
    }

    /// From pairs; a repeated type keeps its first position and its last quantity.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (TypeId, i64)>) -> Self {
        let mut q = Quantities::new();
        for (id, v) in pairs {
            q.set(id, v);
        }
        q
    }

    pub fn entries(&self) -> &[(TypeId, i64)] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, id: TypeId) -> Option<i64> {
        self.entries.iter().find(|e| e.0 == id).map(|e| e.1)
    }

    pub fn set(&mut self, id: TypeId, value: i64) {
        match self.entries.iter_mut().find(|e| e.0 == id) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((id, value)),
        }
    }

    fn map(&self, f: impl Fn(i64) -> i64) -> Self {
        Quantities { entries: self.entries.iter().map(|&(k, v)| (k, f(v))).collect() }
    }

    /// `self + sign * other` over the union of types (a missing type is 0), saturated.
    pub fn combined(&self, other: &Self, sign: i128, on: &mut impl Saturation) -> Self {
        let mut q = self.clone();
        for &(k, v) in &other.entries {
            let current = q.get(k).unwrap_or(0) as i128;
            let r = clamp(current + sign * v as i128, k, on);
            q.set(k, r);
        }
        q
    }

    /// `(source - amount, target + amount)` in one pass over `amount`.
    pub fn transferred(source: &Self, target: &Self, amount: &Self, on: &mut impl Saturation) -> (Self, Self) {
        let mut taken = source.clone();
        let mut given = target.clone();
        for &(k, v) in &amount.entries {
            let r = clamp(taken.get(k).unwrap_or(0) as i128 - v as i128, k, on);
            taken.set(k, r);
            let r = clamp(given.get(k).unwrap_or(0) as i128 + v as i128, k, on);
            given.set(k, r);
        }
        (taken, given)
    }

    /// `self` as a maximum: per type it names, the maximum minus `used` (types it does not name
    /// stay absent, unlimited).
    pub fn room_above(&self, used: &Self, on: &mut impl Saturation) -> Self {
        let entries = self.entries.iter()
            .map(|&(k, v)| (k, clamp(v as i128 - used.get(k).unwrap_or(0) as i128, k, on)))
            .collect();
        Quantities { entries }
    }

    pub fn negated(&self, on: &mut impl Saturation) -> Self {
        Quantities { entries: self.entries.iter().map(|&(k, v)| (k, clamp(-(v as i128), k, on))).collect() }
    }

    /// Every quantity times `factor`, saturated.
    pub fn multiplied(&self, factor: i128, on: &mut impl Saturation) -> Self {
        let entries = self.entries.iter()
            .map(|&(k, v)| {
                let product = (v as i128).checked_mul(factor).unwrap_or(if (v < 0) != (factor < 0) { i128::MIN } else { i128::MAX });
                (k, clamp(product, k, on))
            })
            .collect();
        Quantities { entries }
    }

    /// Negative quantities clamped to 0 (types kept).
    pub fn without_negatives(&self) -> Self {
        self.map(|v| v.max(0))
    }

    /// Without zero quantities.
    pub fn pruned(&self) -> Self {
        Quantities { entries: self.entries.iter().copied().filter(|e| e.1 != 0).collect() }
    }

    pub fn is_zero(&self) -> bool {
        self.entries.iter().all(|e| e.1 == 0)
    }

    pub fn has_negative(&self) -> bool {
        self.entries.iter().any(|e| e.1 < 0)
    }

    /// At least one quantity above 0 and none below (a valid ask).
    pub fn strictly_greater_than_zero(&self) -> bool {
        self.entries.iter().all(|e| e.1 >= 0) && self.entries.iter().any(|e| e.1 > 0)
    }

    /// Every positive type at most the same type of `larger` (missing there: 0).
    pub fn fits_in(&self, larger: &Self) -> bool {
        self.entries.iter().all(|&(k, v)| v <= 0 || v <= larger.get(k).unwrap_or(0))
    }

    /// Like [`Quantities::fits_in`], but a type missing from `maximum` is unlimited.
    pub fn fits_in_max_undef(&self, maximum: &Self) -> bool {
        self.entries.iter().all(|&(k, v)| v <= 0 || maximum.get(k).map_or(true, |limit| v <= limit))
    }

    /// Per type over the union of types (a missing type is 0), `pick` of the two quantities.
    pub fn per_type_of_union(&self, other: &Self, pick: fn(i64, i64) -> i64) -> Self {
        let mut q = self.map(|v| v);
        for entry in q.entries.iter_mut() {
            entry.1 = pick(entry.1, other.get(entry.0).unwrap_or(0));
        }
        for &(k, v) in &other.entries {
            if self.get(k).is_none() {
                q.entries.push((k, pick(0, v)));
            }
        }
        q
    }

    /// The largest share over `self`'s (allocated) positive types: used / guaranteed, or used /
    /// `fairmax` for a type without a guarantee (a type in neither is skipped); 1.0 for usage
    /// against a zero or negative denominator; 0.0 with no usage. `divide` is the true division
    /// (the binding's is Python's, exactly rounded, for quantities past 2^53).
    pub fn fair_share(&self, guaranteed: Option<&Self>, fairmax: &Self, divide: impl Fn(i64, i64) -> f64) -> f64 {
        let mut share = 0.0;
        for &(k, used) in &self.entries {
            if used <= 0 {
                continue;
            }
            let Some(denominator) = guaranteed.and_then(|g| g.get(k)).or_else(|| fairmax.get(k)) else { continue };
            let ratio = if denominator > 0 { divide(used, denominator) } else { 1.0 };
            if ratio > share {
                share = ratio;
            }
        }
        share
    }

    /// The positive quantities summed (a tie-break between queues: the larger pending first).
    pub fn positive_total(&self) -> i128 {
        self.entries.iter().filter(|e| e.1 > 0).map(|e| e.1 as i128).sum()
    }

    /// Equal when every type has the same quantity, a missing type counting as 0.
    pub fn same_as(&self, other: &Self) -> bool {
        self.entries.iter().all(|&(k, v)| other.get(k).unwrap_or(0) == v)
            && other.entries.iter().all(|&(k, v)| self.get(k).unwrap_or(0) == v)
    }

    /// The non-zero entries sorted by type: what [`Quantities::same_as`] compares (hashing).
    pub fn canonical(&self) -> Vec<(TypeId, i64)> {
        let mut entries: Vec<(TypeId, i64)> = self.entries.iter().copied().filter(|e| e.1 != 0).collect();
        entries.sort_unstable();
        entries
    }
}

/// Per-type minimum of two maximums where a missing type is unlimited: `a`'s types, then `b`'s
/// new ones.
pub fn component_min_undef(a: &Quantities, b: &Quantities) -> Quantities {
    let mut q = a.clone();
    for &(k, v) in &b.entries {
        let r = q.get(k).map_or(v, |current| current.min(v));
        q.set(k, r);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEM: TypeId = 0;
    const CPU: TypeId = 1;
    const GPU: TypeId = 2;

    fn q(pairs: &[(TypeId, i64)]) -> Quantities {
        Quantities::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn sums_over_the_union_keep_the_left_order_then_the_new_types() {
        let a = q(&[(CPU, 5), (MEM, 10)]);
        let b = q(&[(GPU, 1), (MEM, 3)]);
        assert_eq!(a.combined(&b, 1, &mut Quiet).entries(), &[(CPU, 5), (MEM, 13), (GPU, 1)]);
        assert_eq!(a.combined(&b, -1, &mut Quiet).entries(), &[(CPU, 5), (MEM, 7), (GPU, -1)]);
    }

    #[test]
    fn results_past_int64_saturate_and_say_which_type() {
        let mut hit = Vec::new();
        let a = q(&[(MEM, i64::MAX), (CPU, i64::MIN)]);
        let b = q(&[(MEM, 1), (CPU, 1)]);
        let sum = a.combined(&b, 1, &mut |k, upper| hit.push((k, upper)));
        assert_eq!(sum.entries(), &[(MEM, i64::MAX), (CPU, i64::MIN + 1)]);
        assert_eq!(hit, vec![(MEM, true)]);
        let difference = a.combined(&b, -1, &mut |k, upper| hit.push((k, upper)));
        assert_eq!(difference.entries(), &[(MEM, i64::MAX - 1), (CPU, i64::MIN)]);
        assert_eq!(hit, vec![(MEM, true), (CPU, false)]);
        assert_eq!(a.negated(&mut Quiet).entries(), &[(MEM, -i64::MAX), (CPU, i64::MAX)]);
        assert_eq!(a.multiplied(3, &mut Quiet).entries(), &[(MEM, i64::MAX), (CPU, i64::MIN)]);
        assert_eq!(a.multiplied(i128::MAX, &mut Quiet).entries(), &[(MEM, i64::MAX), (CPU, i64::MIN)]);
    }

    #[test]
    fn a_transfer_is_the_difference_and_the_sum() {
        let (taken, given) = Quantities::transferred(&q(&[(MEM, 10)]), &q(&[(CPU, 1)]), &q(&[(MEM, 4), (CPU, 2)]), &mut Quiet);
        assert_eq!(taken.entries(), &[(MEM, 6), (CPU, -2)]);
        assert_eq!(given.entries(), &[(CPU, 3), (MEM, 4)]);
    }

    #[test]
    fn fits_treat_a_missing_type_as_zero_or_as_unlimited() {
        let ask = q(&[(MEM, 10), (CPU, -1)]);
        assert!(ask.fits_in(&q(&[(MEM, 10)])));
        assert!(!ask.fits_in(&q(&[(CPU, 10)])));
        assert!(ask.fits_in_max_undef(&q(&[(CPU, 10)])));
        assert!(!ask.fits_in_max_undef(&q(&[(MEM, 9)])));
        assert_eq!(q(&[(MEM, 10), (GPU, 2)]).room_above(&q(&[(MEM, 4), (CPU, 1)]), &mut Quiet).entries(), &[(MEM, 6), (GPU, 2)]);
    }

    #[test]
    fn predicates_equality_and_per_type_picks() {
        assert!(q(&[]).is_zero() && q(&[(MEM, 0)]).is_zero() && !q(&[(MEM, 1)]).is_zero());
        assert!(q(&[(MEM, 1), (CPU, 0)]).strictly_greater_than_zero());
        assert!(!q(&[(MEM, 1), (CPU, -1)]).strictly_greater_than_zero() && !q(&[]).strictly_greater_than_zero());
        assert!(q(&[(MEM, 1), (CPU, 0)]).same_as(&q(&[(MEM, 1)])));
        assert!(!q(&[(MEM, 1)]).same_as(&q(&[(MEM, 1), (CPU, 2)])));
        assert_eq!(q(&[(CPU, 0), (MEM, 2)]).canonical(), q(&[(MEM, 2), (GPU, 0)]).canonical());
        let min = q(&[(MEM, 5), (CPU, 1)]).per_type_of_union(&q(&[(MEM, 3), (GPU, 2)]), i64::min);
        assert_eq!(min.entries(), &[(MEM, 3), (CPU, 0), (GPU, 0)]);
        assert_eq!(component_min_undef(&q(&[(MEM, 5)]), &q(&[(MEM, 3), (CPU, 2)])).entries(), &[(MEM, 3), (CPU, 2)]);
        assert_eq!(q(&[(MEM, -3), (CPU, 2)]).without_negatives().entries(), &[(MEM, 0), (CPU, 2)]);
        assert_eq!(q(&[(MEM, 0), (CPU, 2)]).pruned().entries(), &[(CPU, 2)]);
    }

    #[test]
    fn a_fair_share_is_the_largest_ratio_to_guarantee_or_fair_max() {
        let divide = |a: i64, b: i64| a as f64 / b as f64;
        let used = q(&[(MEM, 50), (CPU, 3), (GPU, -1)]);
        assert_eq!(used.fair_share(None, &q(&[(MEM, 100), (CPU, 4)]), divide), 0.75);
        assert_eq!(used.fair_share(Some(&q(&[(CPU, 30)])), &q(&[(MEM, 100), (CPU, 4)]), divide), 0.5);
        assert_eq!(used.fair_share(Some(&q(&[(MEM, 0)])), &q(&[]), divide), 1.0);
        assert_eq!(used.fair_share(None, &q(&[(GPU, 1)]), divide), 0.0);
        assert_eq!(used.positive_total(), 53);
        assert_eq!(q(&[(MEM, i64::MAX), (CPU, i64::MAX)]).positive_total(), 2 * i64::MAX as i128);
    }
}
