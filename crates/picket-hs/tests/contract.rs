//! The matcher contract (picket_core::detect::mpm): both backends, Aho-Corasick from
//! picket-core and Hyperscan from this crate, checked against the same naive reference
//! matcher. It lives here because this is the crate that sees both.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use picket_core::detect::mpm::*;
use picket_hs::{CodePath, HsBuilder, HsMatcher};

/// Both backends.
fn backends() -> Vec<MpmAlgo> {
    vec![MpmAlgo::AhoCorasick, MpmAlgo::Hyperscan]
}

/// Compiles `patterns` with the builder of backend `algo` (one of [`backends`]).
fn build(algo: MpmAlgo, patterns: &[Pattern]) -> Result<Box<dyn MultiPatternMatcher>, MpmError> {
    let builder: Box<dyn MatcherBuilder> = match algo {
        MpmAlgo::Hyperscan => Box::new(HsBuilder::default()),
        _ => Box::new(AcBuilder),
    };
    builder.build(patterns)
}

/// Backends plus variants with tiny scan windows, to exercise window boundaries.
fn matchers_for(patterns: &[Pattern]) -> Vec<(String, Box<dyn MultiPatternMatcher>)> {
    let mut matchers: Vec<(String, Box<dyn MultiPatternMatcher>)> =
        backends().into_iter().map(|algo| (algo.to_string(), build(algo, patterns).expect("build"))).collect();
    if !patterns.is_empty() {
        matchers.push(("ac-window-3".into(), AcBuilder::build_with_window(patterns, 3).expect("build")));
        matchers.push(("hs-window-5".into(), Box::new(HsMatcher::build_with_window(patterns, 5).expect("build"))));
        // libhs's AVX2 code on a CPU with AVX-512 (`mpm-hs-avx512: no`); its own pick elsewhere.
        let avx2 = HsMatcher::build_on(patterns, CodePath::choose(false)).expect("build");
        matchers.push(("hs-avx2".into(), Box::new(avx2)));
    }
    matchers
}

/// The definition of a match: some window of the haystack equals the pattern, ASCII letters
/// compared without case when `nocase`.
fn reference_ids(patterns: &[Pattern], haystack: &[u8]) -> BTreeSet<u32> {
    patterns
        .iter()
        .filter(|pattern| {
            haystack.windows(pattern.bytes.len()).any(|window| {
                if pattern.nocase {
                    window.eq_ignore_ascii_case(&pattern.bytes)
                } else {
                    window == pattern.bytes.as_slice()
                }
            })
        })
        .map(|pattern| pattern.id)
        .collect()
}

/// Scans and returns the reported ids, asserting the once-per-id contract.
fn scan_ids(matcher: &dyn MultiPatternMatcher, haystack: &[u8], scratch: &mut Scratch) -> BTreeSet<u32> {
    let mut reported = Vec::new();
    matcher.scan(haystack, scratch, &mut |id| reported.push(id)).expect("scan");
    let unique: BTreeSet<u32> = reported.iter().copied().collect();
    assert_eq!(unique.len(), reported.len(), "an id was reported twice: {reported:?}");
    unique
}

/// Asserts every matcher agrees with the reference on every haystack.
fn assert_all_agree(patterns: &[Pattern], haystacks: &[&[u8]]) {
    for (name, matcher) in matchers_for(patterns) {
        let mut scratch = Scratch::new();
        for haystack in haystacks {
            assert_eq!(
                scan_ids(matcher.as_ref(), haystack, &mut scratch),
                reference_ids(patterns, haystack),
                "{name} on {haystack:?}"
            );
        }
    }
}

fn ids(list: &[u32]) -> BTreeSet<u32> {
    list.iter().copied().collect()
}

fn lit(id: u32, bytes: &[u8]) -> Pattern {
    Pattern::new(id, bytes, false)
}

fn nocase(id: u32, bytes: &[u8]) -> Pattern {
    Pattern::new(id, bytes, true)
}

#[test]
fn algo_names_follow_suricata_mpm_algo() {
    assert_eq!("hs".parse(), Ok(MpmAlgo::Hyperscan));
    assert_eq!("hyperscan".parse(), Ok(MpmAlgo::Hyperscan));
    assert_eq!(" HS ".parse(), Ok(MpmAlgo::Hyperscan));
    for name in ["ac", "ac-ks", "ac-bs", "aho-corasick"] {
        assert_eq!(name.parse(), Ok(MpmAlgo::AhoCorasick), "{name}");
    }
    assert_eq!("auto".parse(), Ok(MpmAlgo::Auto));
    assert_eq!("b2g".parse::<MpmAlgo>(), Err(UnknownMpmAlgo("b2g".into())));
    for algo in [MpmAlgo::Auto, MpmAlgo::Hyperscan, MpmAlgo::AhoCorasick] {
        assert_eq!(algo.to_string().parse(), Ok(algo));
    }
}

#[test]
fn empty_pattern_is_rejected() {
    for algo in backends() {
        let result = build(algo, &[lit(1, b"ok"), lit(7, b"")]);
        assert_eq!(result.err(), Some(MpmError::EmptyPattern { id: 7 }), "{algo}");
    }
}

#[test]
fn empty_pattern_set_never_matches() {
    for algo in backends() {
        let matcher = build(algo, &[]).expect("build");
        assert_eq!(matcher.pattern_count(), 0);
        assert!(scan_ids(matcher.as_ref(), b"anything", &mut Scratch::new()).is_empty());
    }
}

#[test]
fn empty_haystack_matches_nothing() {
    let patterns = [lit(1, b"a"), nocase(2, b"B"), lit(3, b"\x00")];
    for (name, matcher) in matchers_for(&patterns) {
        assert!(scan_ids(matcher.as_ref(), b"", &mut Scratch::new()).is_empty(), "{name}");
    }
}

#[test]
fn patterns_at_the_very_start_and_end_are_found() {
    let patterns = [lit(1, b"GET "), lit(2, b"\r\n\r\n"), lit(3, b"middle")];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        assert_eq!(scan_ids(matcher.as_ref(), b"GET /x HTTP/1.0\r\n\r\n", &mut scratch), ids(&[1, 2]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"GET ", &mut scratch), ids(&[1]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"\r\n\r\n", &mut scratch), ids(&[2]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"GET\r\n\r", &mut scratch), ids(&[]), "{name}");
    }
}

#[test]
fn overlapping_and_nested_patterns_are_all_found() {
    let patterns = [lit(1, b"abc"), lit(2, b"bcd"), lit(3, b"cde"), lit(4, b"abcde"), lit(5, b"c"), lit(6, b"abcdef")];
    for (name, matcher) in matchers_for(&patterns) {
        assert_eq!(scan_ids(matcher.as_ref(), b"xabcdex", &mut Scratch::new()), ids(&[1, 2, 3, 4, 5]), "{name}");
    }
}

#[test]
fn nocase_folds_ascii_letters_only() {
    let patterns = [
        nocase(1, b"HeLLo"),
        lit(2, b"World"),
        nocase(3, b"\xc9t\xc9"),           // Latin-1 "ÉtÉ": 0xc9 must not match 0xe9
        nocase(4, "caf\u{c9}".as_bytes()), // UTF-8 "cafÉ": 0xc3 0x89 must not match 0xc3 0xa9
        nocase(5, b"@[`{"),                // neighbours of the letter ranges must not fold
    ];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        let mut scan = |haystack: &[u8]| scan_ids(matcher.as_ref(), haystack, &mut scratch);
        assert_eq!(scan(b"hello World"), ids(&[1, 2]), "{name}");
        assert_eq!(scan(b"HELLO world"), ids(&[1]), "{name}");
        assert_eq!(scan(b"\xe9T\xe9 \xc9T\xc9"), ids(&[3]), "{name}");
        assert_eq!(scan(b"\xe9t\xe9"), ids(&[]), "{name}");
        assert_eq!(scan("CAF\u{e9} caf\u{c9}".as_bytes()), ids(&[4]), "{name}");
        assert_eq!(scan("caf\u{e9}".as_bytes()), ids(&[]), "{name}");
        assert_eq!(scan(b"`{@[ @[`{"), ids(&[5]), "{name}");
        assert_eq!(scan(b"@{`["), ids(&[]), "{name}");
    }
}

#[test]
fn case_sensitive_and_nocase_variants_of_one_text_stay_distinct() {
    let patterns = [lit(1, b"Admin"), lit(2, b"admin"), nocase(3, b"ADMIN"), lit(4, b"ADMIN")];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        assert_eq!(scan_ids(matcher.as_ref(), b"user=admin", &mut scratch), ids(&[2, 3]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"user=Admin", &mut scratch), ids(&[1, 3]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"user=aDMIN", &mut scratch), ids(&[3]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"ADMIN admin", &mut scratch), ids(&[2, 3, 4]), "{name}");
    }
}

#[test]
fn binary_patterns_with_nul_ff_and_regex_metacharacters() {
    let patterns = [
        lit(1, b"\x00"),
        lit(2, b"\xff\xff"),
        lit(3, b"\x00\xff\x00"),
        lit(4, b".*"),
        lit(5, b"(a|b)[^c]$\\"),
        nocase(6, b"\x00X\xff"),
    ];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        let mut scan = |haystack: &[u8]| scan_ids(matcher.as_ref(), haystack, &mut scratch);
        assert_eq!(scan(b"ab\x00\xff\x00"), ids(&[1, 3]), "{name}");
        assert_eq!(scan(b"\xff\xfe\xff\xff"), ids(&[2]), "{name}");
        assert_eq!(scan(b"anything at all"), ids(&[]), "{name}");
        assert_eq!(scan(b"x.*y"), ids(&[4]), "{name}");
        assert_eq!(scan(b"(a|b)[^c]$\\"), ids(&[5]), "{name}");
        assert_eq!(scan(b"ad"), ids(&[]), "{name}");
        assert_eq!(scan(b"\x00x\xff"), ids(&[1, 6]), "{name}");
    }
}

#[test]
fn duplicate_patterns_report_each_id_and_shared_ids_report_once() {
    let patterns =
        [lit(10, b"evil"), lit(11, b"evil"), nocase(12, b"EVIL"), lit(20, b"foo"), lit(20, b"bar"), lit(10, b"evil")];
    for (name, matcher) in matchers_for(&patterns) {
        assert_eq!(matcher.pattern_count(), 6, "{name}");
        let mut scratch = Scratch::new();
        assert_eq!(scan_ids(matcher.as_ref(), b"evil foo bar evil", &mut scratch), ids(&[10, 11, 12, 20]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"bar", &mut scratch), ids(&[20]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"EVIL", &mut scratch), ids(&[12]), "{name}");
    }
}

#[test]
fn repeated_occurrences_report_once_and_next_scan_starts_fresh() {
    let patterns = [lit(1, b"a"), nocase(2, b"b"), lit(u32::MAX, b"z"), lit(0, b"\xff")];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        let haystack = b"aaaaBbBbzzzz\xff\xff".repeat(50);
        assert_eq!(scan_ids(matcher.as_ref(), &haystack, &mut scratch), ids(&[0, 1, 2, u32::MAX]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"xa", &mut scratch), ids(&[1]), "{name}");
        assert_eq!(scan_ids(matcher.as_ref(), b"xa", &mut scratch), ids(&[1]), "{name}");
    }
}

#[test]
fn single_byte_patterns_cover_every_byte_value() {
    let patterns: Vec<Pattern> = (0..=255u8).map(|byte| lit(u32::from(byte), &[byte])).collect();
    let all: Vec<u8> = (0..=255u8).collect();
    assert_all_agree(&patterns, &[&all, b"", b"\x00", b"\xff", b"Aa"]);
    for (name, matcher) in matchers_for(&patterns) {
        assert_eq!(scan_ids(matcher.as_ref(), &all, &mut Scratch::new()).len(), 256, "{name}");
    }
}

#[test]
fn one_scratch_serves_several_matchers_alternately() {
    // The second set is much larger so its Hyperscan scratch needs growing after the first.
    let small = [lit(1, b"one")];
    let large: Vec<Pattern> = (0..500u32)
        .map(|id| Pattern::new(id, format!("p{id}q").into_bytes(), id % 2 == 0))
        .chain([nocase(1000, b"one")])
        .collect();
    for algo in backends() {
        let small_matcher = build(algo, &small).expect("build");
        let large_matcher = build(algo, &large).expect("build");
        let mut scratch = Scratch::new();
        for _ in 0..3 {
            assert_eq!(scan_ids(small_matcher.as_ref(), b"ONE one", &mut scratch), ids(&[1]), "{algo}");
            assert_eq!(
                scan_ids(large_matcher.as_ref(), b"ONE P42Q p43q P43Q", &mut scratch),
                ids(&[42, 43, 1000]),
                "{algo}"
            );
        }
    }
}

#[test]
fn prepared_scratch_does_not_grow_while_scanning() {
    let patterns: Vec<Pattern> =
        (0..200u32).map(|id| Pattern::new(id, format!("key{id}").into_bytes(), id % 3 == 0)).collect();
    for algo in backends() {
        let matcher = build(algo, &patterns).expect("build");
        let mut scratch = Scratch::new();
        matcher.prepare_scratch(&mut scratch).expect("prepare");
        let prepared = scratch.memory_bytes();
        assert!(prepared > 0, "{algo}");
        let haystack: Vec<u8> = (0..200).flat_map(|id| format!("KEY{id} ").into_bytes()).collect();
        for packet in haystack.chunks(500) {
            matcher.scan(packet, &mut scratch, &mut |_| {}).expect("scan");
        }
        assert_eq!(scratch.memory_bytes(), prepared, "{algo}");
    }
}

#[test]
fn fold_buffer_stays_bounded_on_huge_haystacks() {
    let patterns = [nocase(1, b"needle"), lit(2, b"Tail")];
    let matcher = AcBuilder.build(&patterns).expect("build");
    let mut haystack = vec![b'x'; 3 << 20];
    let end = haystack.len();
    haystack[end - 4..].copy_from_slice(b"Tail");
    haystack[1 << 20..(1 << 20) + 6].copy_from_slice(b"NEEDLE");
    let mut scratch = Scratch::new();
    assert_eq!(scan_ids(&*matcher, &haystack, &mut scratch), ids(&[1, 2]));
    assert!(scratch.memory_bytes() < 64 * 1024, "scratch grew to {}", scratch.memory_bytes());
}

#[test]
fn reports_size_and_count() {
    let patterns: Vec<Pattern> = (0..100u32).map(|id| lit(id, format!("pattern number {id}").as_bytes())).collect();
    for algo in backends() {
        let matcher = build(algo, &patterns).expect("build");
        assert_eq!(matcher.pattern_count(), 100);
        assert!(matcher.memory_bytes() > 100 * 10, "{algo}: {}", matcher.memory_bytes());
        assert_eq!(matcher.algo(), algo);
    }
}

#[test]
fn overlapping_windows_cover_every_short_occurrence() {
    assert_eq!(overlapping_windows(0, 4, 2).collect::<Vec<_>>(), vec![0..0]);
    assert_eq!(overlapping_windows(3, 4, 2).collect::<Vec<_>>(), vec![0..3]);
    assert_eq!(overlapping_windows(10, 4, 2).collect::<Vec<_>>(), vec![0..6, 4..10]);
    assert_eq!(overlapping_windows(10, 4, 0).collect::<Vec<_>>(), vec![0..4, 4..8, 8..10]);
    assert_eq!(overlapping_windows(usize::MAX, usize::MAX / 2, 3).count(), 2);
    for len in 0..40 {
        for step in 1..7 {
            for overlap in 0..5 {
                let windows: Vec<_> = overlapping_windows(len, step, overlap).collect();
                for start in 0..len {
                    for pattern_len in 1..=(overlap + 1).min(len - start) {
                        let occurrence = start..start + pattern_len;
                        assert!(
                            windows.iter().any(|w| w.start <= occurrence.start && occurrence.end <= w.end),
                            "{occurrence:?} not covered by {windows:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Small alphabet so random patterns actually occur: mixed-case letters, NUL, 0xff, a
/// non-ASCII letter byte.
fn alphabet_byte() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![b'a', b'A', b'b', b'B', b'z', 0x00, 0xff, 0xe9, 0xc9])
}

fn random_pattern() -> impl Strategy<Value = Pattern> {
    (0..12u32, prop::collection::vec(alphabet_byte(), 1..6), any::<bool>()).prop_map(|(id, bytes, nocase)| Pattern {
        id,
        bytes,
        nocase,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn backends_agree_with_reference(
        patterns in prop::collection::vec(random_pattern(), 1..16),
        haystacks in prop::collection::vec(prop::collection::vec(alphabet_byte(), 0..80), 1..6),
    ) {
        for (name, matcher) in matchers_for(&patterns) {
            let mut scratch = Scratch::new();
            for haystack in &haystacks {
                prop_assert_eq!(
                    scan_ids(matcher.as_ref(), haystack, &mut scratch),
                    reference_ids(&patterns, haystack),
                    "{} on {:?}", name, haystack
                );
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_fail_and_agree(
        patterns in prop::collection::vec((any::<u32>(), prop::collection::vec(any::<u8>(), 1..4), any::<bool>())
            .prop_map(|(id, bytes, nocase)| Pattern { id, bytes, nocase }), 1..40),
        haystack in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let expected = reference_ids(&patterns, &haystack);
        let mut results: HashMap<String, BTreeSet<u32>> = HashMap::new();
        for (name, matcher) in matchers_for(&patterns) {
            results.insert(name, scan_ids(matcher.as_ref(), &haystack, &mut Scratch::new()));
        }
        for (name, found) in results {
            prop_assert_eq!(&found, &expected, "{}", name);
        }
    }
}

#[test]
fn panicking_callback_leaves_matcher_and_scratch_usable() {
    let patterns = [lit(1, b"boom"), nocase(2, b"ok")];
    for (name, matcher) in matchers_for(&patterns) {
        let mut scratch = Scratch::new();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = matcher.scan(b"boom ok", &mut scratch, &mut |_| panic!("callback failed"));
        }));
        assert!(outcome.is_err(), "{name}: the panic must reach the caller");
        assert_eq!(scan_ids(matcher.as_ref(), b"boom OK", &mut scratch), ids(&[1, 2]), "{name}");
    }
}

#[test]
fn scratch_moves_to_worker_threads_and_matchers_are_shared() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync + ?Sized>() {}
    assert_send::<Scratch>();
    assert_send_sync::<dyn MultiPatternMatcher>();
}
