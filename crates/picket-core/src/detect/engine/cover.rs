//! Fewer literals per prefilter: a fast pattern that contains a shorter fast pattern of the
//! same set is looked for through that one.
//!
//! If `abcd` is a literal of a set, every haystack that holds `xxabcdyy` also holds `abcd`:
//! the rules of `xxabcdyy` can become candidates whenever `abcd` occurs, and the set loses a
//! literal. Candidates are a superset of the rules that can match (each candidate's contents
//! are all verified, its fast pattern included), so this changes no alert; it only trades
//! scanning work for rule checks on the occurrences of the shorter literal.
//!
//! Hyperscan's cost per byte grows with the number of literals: on ET Open's `file.data` set
//! (1,870 distinct literals, 307 of them covered by a shorter one) scanning the reference
//! capture's bodies took 23% less time with the covered literals folded in, and all the
//! sets together 10% less.
//!
//! Two bounds keep the trade cheap: the shorter literal has at least [`MIN_COVER_LEN`] bytes
//! (a two-byte literal occurs too often to stand in for others), and stands in for at most
//! [`MAX_COVERED`] longer ones (a literal like `.php` in `http.uri` would otherwise make
//! hundreds of rules candidates on every request).

use std::collections::HashMap;

use crate::detect::mpm::Pattern;
use crate::flow::hash::FxBuildHasher;

/// Shortest literal that may stand in for longer ones.
pub(super) const MIN_COVER_LEN: usize = 4;

/// Most longer literals one literal stands in for.
pub(super) const MAX_COVERED: usize = 4;

/// A distinct literal of a set: its bytes and whether it folds case.
type Literal = (Vec<u8>, bool);

/// The case-folded `MIN_COVER_LEN` bytes of `bytes` at `start`, as a lookup key.
fn prefix_key(bytes: &[u8], start: usize) -> Option<u32> {
    let four: [u8; MIN_COVER_LEN] = bytes.get(start..start + MIN_COVER_LEN)?.try_into().ok()?;
    Some(u32::from_le_bytes(four.map(|c| c.to_ascii_lowercase())))
}

/// Whether `a` occurring is implied by `b` occurring, given that `a` (case-folded) was found
/// at `b[start..start + a.len()]`: always when `a` folds case; when it does not, `b` must not
/// fold case either and hold `a`'s exact bytes there.
fn implies(b: &Literal, a: &Literal, start: usize) -> bool {
    a.1 || (!b.1 && b.0.get(start..start + a.0.len()) == Some(a.0.as_slice()))
}

/// Rewrites the patterns of `set` whose literal contains a shorter literal of the set (see
/// the module doc) to that literal, keeping their ids. Deterministic: literals are taken
/// shortest first, in order of first appearance, and each picks the longest literal that
/// covers it and still has room. Returns how many patterns were rewritten.
pub(super) fn fold_covered(set: &mut [Pattern]) -> usize {
    // Fx, not SipHash: these maps were most of the folding's start-up cost, and their keys
    // come from the rule set, not from traffic.
    let mut index: HashMap<Literal, usize, FxBuildHasher> =
        HashMap::with_capacity_and_hasher(set.len(), FxBuildHasher::default());
    let mut literals: Vec<Literal> = Vec::new();
    for p in set.iter() {
        let key = (p.bytes.clone(), p.nocase);
        if !index.contains_key(&key) {
            index.insert(key.clone(), literals.len());
            literals.push(key);
        }
    }
    // Literals that may stand in for others, by their first MIN_COVER_LEN bytes with case
    // folded: each position of a longer literal is one lookup (an Aho-Corasick automaton
    // over ET Open's sets took 80 ms to build, more than the rest of a cached start-up).
    let mut by_prefix: HashMap<u32, Vec<usize>, FxBuildHasher> =
        HashMap::with_capacity_and_hasher(literals.len(), FxBuildHasher::default());
    for (i, lit) in literals.iter().enumerate() {
        if let Some(key) = prefix_key(&lit.0, 0) {
            by_prefix.entry(key).or_default().push(i);
        }
    }
    if by_prefix.is_empty() {
        return 0;
    }
    let mut order: Vec<usize> = (0..literals.len()).collect();
    order.sort_by_key(|&i| literals[i].0.len());
    // Literal -> the literal it is folded into.
    let mut folded: Vec<Option<usize>> = vec![None; literals.len()];
    let mut covers = vec![0usize; literals.len()];
    for &b in &order {
        let lit = &literals[b];
        let mut best: Option<usize> = None;
        for start in 0..lit.0.len() {
            let Some(found) = prefix_key(&lit.0, start).and_then(|key| by_prefix.get(&key)) else { continue };
            for &a in found {
                let cand = &literals[a];
                // Strictly shorter, or as long but folding case where `b` does not (then `b`
                // occurring implies `a`, not the other way round).
                let smaller = cand.0.len() < lit.0.len() || (cand.1 && !lit.1);
                if a == b || !smaller || folded[a].is_some() || covers[a] >= MAX_COVERED {
                    continue;
                }
                let Some(window) = lit.0.get(start..start + cand.0.len()) else { continue };
                let found_here = window.eq_ignore_ascii_case(&cand.0);
                if found_here && implies(lit, cand, start) && best.is_none_or(|x| literals[x].0.len() < cand.0.len()) {
                    best = Some(a);
                }
            }
        }
        if let Some(a) = best {
            folded[b] = Some(a);
            covers[a] += 1;
        }
    }
    let mut rewritten = 0;
    for p in set.iter_mut() {
        let Some(&i) = index.get(&(std::mem::take(&mut p.bytes), p.nocase)) else { continue };
        let target = folded[i].unwrap_or(i);
        rewritten += usize::from(target != i);
        p.bytes = literals[target].0.clone();
        p.nocase = literals[target].1;
    }
    rewritten
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pats: &[(&[u8], bool)]) -> Vec<Pattern> {
        pats.iter().enumerate().map(|(i, &(b, nc))| Pattern::new(i as u32, b, nc)).collect()
    }

    fn literal(p: &Pattern) -> (&[u8], bool) {
        (&p.bytes, p.nocase)
    }

    #[test]
    fn a_longer_literal_is_folded_into_the_shorter_one_it_contains() {
        let mut s = set(&[(b"abcd", false), (b"xxabcdyy", false), (b"zzzz", true), (b"--ZzZz--", false)]);
        assert_eq!(fold_covered(&mut s), 2);
        assert_eq!(literal(&s[1]), (&b"abcd"[..], false));
        // A case-folding literal stands in for any case of itself.
        assert_eq!(literal(&s[3]), (&b"zzzz"[..], true));
        // The ids stay: the rules behind them become candidates through the shorter literal.
        assert_eq!(s.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn exact_case_literals_stand_in_only_for_the_same_bytes() {
        // `abcd` must not find `ABCD` in the longer literal, nor in a case-folding one.
        let mut s = set(&[(b"abcd", false), (b"xxABCDyy", false), (b"xxabcdzz", true)]);
        let before = s.clone();
        fold_covered(&mut s);
        assert_eq!(s, before);
        // The other way round: the longer literal's exact bytes imply the folding one.
        let mut s = set(&[(b"abcd", true), (b"ABCD", false), (b"xxABCDyy", true)]);
        fold_covered(&mut s);
        assert_eq!(literal(&s[1]), (&b"abcd"[..], true));
        assert_eq!(literal(&s[2]), (&b"abcd"[..], true));
    }

    #[test]
    fn short_literals_and_busy_ones_stand_in_for_nothing() {
        let mut s = set(&[(b"abc", false), (b"xxabcyy", false)]);
        let before = s.clone();
        fold_covered(&mut s);
        assert_eq!(s, before, "under MIN_COVER_LEN bytes");
        let mut pats: Vec<(Vec<u8>, bool)> = vec![(b".php".to_vec(), false)];
        pats.extend((0..MAX_COVERED + 3).map(|i| (format!("/a{i}.php").into_bytes(), false)));
        let refs: Vec<(&[u8], bool)> = pats.iter().map(|(b, nc)| (b.as_slice(), *nc)).collect();
        let mut s = set(&refs);
        fold_covered(&mut s);
        let folded = s.iter().skip(1).filter(|p| p.bytes == b".php").count();
        assert_eq!(folded, MAX_COVERED);
    }

    #[test]
    fn the_longest_covering_literal_wins_and_chains_are_not_followed() {
        let mut s = set(&[(b"abcd", false), (b"efghi", false), (b"abcdefghi", false)]);
        fold_covered(&mut s);
        assert_eq!(literal(&s[2]), (&b"efghi"[..], false));
        let mut s = set(&[(b"abcd", false), (b"abcdef", false), (b"xabcdefx", false)]);
        fold_covered(&mut s);
        // `abcdef` goes into `abcd`; `xabcdefx` then finds `abcd` only (`abcdef` is folded).
        assert_eq!(literal(&s[1]), (&b"abcd"[..], false));
        assert_eq!(literal(&s[2]), (&b"abcd"[..], false));
    }
}
