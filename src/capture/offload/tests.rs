use super::*;

/// A GSTRINGS answer holding `names`, as the kernel lays it out.
fn strings_answer(names: &[&str]) -> Vec<u32> {
    let mut bytes = vec![0u8; names.len() * ETH_GSTRING_LEN];
    for (i, name) in names.iter().enumerate() {
        bytes[i * ETH_GSTRING_LEN..i * ETH_GSTRING_LEN + name.len()].copy_from_slice(name.as_bytes());
    }
    let mut words = vec![ETHTOOL_GSTRINGS, ETH_SS_FEATURES, names.len() as u32];
    words.extend(bytes.chunks(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])));
    words
}

fn features_answer(blocks: &[(u32, u32)]) -> Vec<u32> {
    let mut words = vec![ETHTOOL_GFEATURES, blocks.len() as u32];
    for &(available, active) in blocks {
        words.extend([available, 0, active, 0]);
    }
    words
}

#[test]
fn states_come_from_the_named_bits() {
    let mut names: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
    names[3] = "rx-gro".into();
    names[35] = "rx-lro".into();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    // rx-gro changeable and on; rx-lro on but fixed.
    let features =
        Features::parse(&strings_answer(&refs), refs.len(), &features_answer(&[(1 << 3, 1 << 3), (0, 1 << 3)]))
            .unwrap();
    assert_eq!(features.state("rx-gro"), Some(FeatureState { changeable: true, active: true }));
    assert_eq!(features.state("rx-lro"), Some(FeatureState { changeable: false, active: true }));
    assert_eq!(features.state("f0"), Some(FeatureState { changeable: false, active: false }));
    assert_eq!(features.state("rx-gro-hw"), None);
}

#[test]
fn short_answers_are_refused_not_read_past() {
    let strings = strings_answer(&["rx-gro", "rx-lro"]);
    // More names claimed than the answer holds.
    assert!(Features::parse(&strings, 5, &features_answer(&[(1, 1)])).is_none());
    // A feature answer that claims more words than it has.
    let mut features = features_answer(&[(1, 1)]);
    features[FEATURES_SIZE] = 3;
    let parsed = Features::parse(&strings, 2, &features);
    assert!(parsed.is_some(), "only the words the names need are read");
    assert!(Features::parse(&strings[..2], 2, &features).is_none());
    assert!(Features::parse(&strings, 2, &features[..1]).is_none());
}

#[test]
fn error_is_one_line_with_the_fix() {
    let e = OffloadError { interface: "b0".into(), what: "read its offload settings", source: io::Error::other("x") };
    let text = e.to_string();
    assert!(text.contains("b0") && text.contains("ethtool -K b0") && !text.contains('\n'), "{text}");
}
