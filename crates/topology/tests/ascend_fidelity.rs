//! Rules where MindCluster's current Volcano plugin (ascend-for-volcano)
//! decides differently from the seeds' older text (issue 18): 300I card mode,
//! 300T distributed single chips and A3 single dies. The card-mode reference
//! walks the preference lists the way MindCluster's `card310x4` and
//! `card310px2` read (free count per card, cards in ID order); it shares no code
//! with the allocator.

use ringleader_topology::{
    allocate, builtin, CardStrategy, DeviceRequest, DeviceSet, DeviceState, NoFit, NodeScore, Profile, WholeRequest,
};

fn profile(name: &str) -> &'static Profile {
    builtin(name).unwrap_or_else(|| panic!("missing builtin {name}"))
}

fn state_with_free(p: &Profile, free: u64) -> DeviceState {
    DeviceState::new().with_allocated(p.all().minus(DeviceSet(free)))
}

fn card(count: u32) -> DeviceRequest {
    DeviceRequest::Whole(WholeRequest { count, multi_pod: false, card_strategy: CardStrategy::Card })
}

/// MindCluster's card-mode priority: 300I (4 per card) 1 → 1 > 3 > 2 > 4,
/// 2 → 2 > 3 > 4, 3 → 3 > 4, 4 → 4; Duo (2 per card) 1 → 1 > 2, 2 → 2;
/// single-chip cards 1 → 1.
fn priority(card_size: usize, req: usize) -> &'static [usize] {
    match (card_size, req) {
        (4, 1) => &[1, 3, 2, 4],
        (4, 2) => &[2, 3, 4],
        (4, 3) => &[3, 4],
        (4, 4) => &[4],
        (2, 1) => &[1, 2],
        (2, 2) => &[2],
        (1, 1) => &[1],
        _ => unreachable!("no such request"),
    }
}

/// The first card (in ID order) whose free count is the best available
/// priority; its lowest `req` free chips; and the priority's position.
fn ref_card_mode(free: u64, n: usize, card_size: usize, req: usize) -> Option<(Vec<usize>, usize)> {
    for (rank, &want) in priority(card_size, req).iter().enumerate() {
        for first in (0..n).step_by(card_size) {
            let chips: Vec<usize> = (first..first + card_size).filter(|&c| free >> c & 1 == 1).collect();
            if chips.len() == want {
                return Some((chips[..req].to_vec(), rank));
            }
        }
    }
    None
}

fn check_card_mode(name: &str, card_size: usize) -> usize {
    let p = profile(name);
    let n = p.len();
    let mut checked = 0;
    for free in 0..(1u64 << n) {
        let st = state_with_free(p, free);
        for req in 1..=card_size {
            let got = allocate(p, &st, &card(req as u32));
            match ref_card_mode(free, n, card_size, req) {
                Some((chips, rank)) => {
                    let a =
                        got.unwrap_or_else(|e| panic!("{name} free={free:#x} req={req}: expected {chips:?}, got {e}"));
                    assert_eq!(a.devices.to_vec(), chips, "{name} free={free:#x} req={req}");
                    let NodeScore::Ascend(s) = a.score else { panic!("not an Ascend score") };
                    assert_eq!(s.affinity_rank as usize, rank, "{name} free={free:#x} req={req} rank");
                    assert_eq!(s.free_after as usize, free.count_ones() as usize - req);
                }
                None => {
                    let e = got.expect_err("reference says no fit");
                    assert!(
                        matches!(e, NoFit::NoCard { .. } | NoFit::Insufficient { .. }),
                        "{name} free={free:#x} req={req}: {e}"
                    );
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn atlas_300i_card_mode_all_65536_free_sets() {
    assert_eq!(check_card_mode("atlas-300i", 4), 65_536 * 4);
}

#[test]
fn atlas_300i_duo_card_mode_all_256_free_sets() {
    assert_eq!(check_card_mode("atlas-300i-duo", 2), 256 * 2);
}

#[test]
fn single_chip_310p_cards_card_mode_all_256_free_sets() {
    assert_eq!(check_card_mode("atlas-inference-310p", 1), 256);
}

/// MindCluster's `card310x4` UseAnnotation cases, by name.
#[test]
fn atlas_300i_card_mode_examples_from_mindcluster() {
    let p = profile("atlas-300i");
    let pick = |chips: &[usize]| allocate(p, &state_with_free(p, bits(chips)), &card(1)).map(|a| a.ids);
    // The only free chip on card 0 beats card 1's two.
    assert_eq!(pick(&[0, 4, 5]), Ok(vec![0]));
    // Card 0 has 3 free, card 1 has 2: 3 is preferred over 2 (chip mode's best fit would take card 1).
    assert_eq!(pick(&[0, 1, 2, 4, 5]), Ok(vec![0]));
    assert_eq!(pick(&[0, 1, 4, 5, 6]), Ok(vec![4]));
    // Card 0 has 2 free, card 1 has 4: 2 is preferred over 4.
    assert_eq!(pick(&[0, 1, 4, 5, 6, 7]), Ok(vec![0]));
    // Three chips never span cards: 2 + 2 free gives no fit.
    assert_eq!(allocate(p, &state_with_free(p, bits(&[0, 1, 4, 5])), &card(3)), Err(NoFit::NoCard { count: 3 }));
    assert!(matches!(allocate(p, &DeviceState::new(), &card(5)), Err(NoFit::InvalidCount { .. })));
}

/// MindCluster's `card310x4` ScoreBestNPUNodes cases: free chips per node and
/// the expected order (score 32 > 24 > 16 > 8 for best card 1, 3, 2, 4 free).
#[test]
fn atlas_300i_card_mode_node_order() {
    let p = profile("atlas-300i");
    let rank = |chips: &[usize]| {
        let a = allocate(p, &state_with_free(p, bits(chips)), &card(1)).expect("fits");
        let NodeScore::Ascend(s) = a.score else { panic!("not an Ascend score") };
        s.affinity_rank
    };
    let score = |chips: &[usize]| allocate(p, &state_with_free(p, bits(chips)), &card(1)).expect("fits").score;
    assert_eq!(rank(&[0]), 0); // node1: score 32
    assert_eq!(rank(&[0, 1]), 2); // node2: score 16
    assert_eq!(rank(&[0, 1, 2]), 1); // node3: score 24
    assert_eq!(rank(&[0, 1, 2, 3]), 3); // node4: score 8
    assert_eq!(rank(&[0, 4]), 0); // node5: two cards with 1 free, score 32
    assert_eq!(rank(&[4]), 0); // node7: score 32
    assert!(score(&[0]) > score(&[0, 1, 2]));
    assert!(score(&[0, 1, 2]) > score(&[0, 1]));
    assert!(score(&[0, 1]) > score(&[0, 1, 2, 3]));
    // Same card rank: fewer free chips on the node wins (bin-pack).
    assert!(score(&[4]) > score(&[0, 4]));
}

#[test]
fn chip_mode_is_unchanged_by_the_card_rule() {
    // A 1-chip request in chip mode (the default) may take any chip; the card preference does not apply.
    let p = profile("atlas-300i");
    let st = state_with_free(p, bits(&[0, 1, 4, 5, 6]));
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(1)).map(|a| a.ids), Ok(vec![0]));
}

#[test]
fn atlas_300t_distributed_single_chips() {
    let p = profile("atlas-300t");
    for multi_pod in [false, true] {
        let req = |count| DeviceRequest::Whole(WholeRequest { count, multi_pod, card_strategy: CardStrategy::Chip });
        assert_eq!(allocate(p, &DeviceState::new(), &req(1)).map(|a| a.ids), Ok(vec![0]), "multi_pod={multi_pod}");
        assert_eq!(allocate(p, &state_with_free(p, 0b10), &req(1)).map(|a| a.ids), Ok(vec![1]));
        assert_eq!(allocate(p, &DeviceState::new(), &req(2)).map(|a| a.ids), Ok(vec![0, 1]));
        assert!(matches!(allocate(p, &DeviceState::new(), &req(3)), Err(NoFit::InvalidCount { .. })));
        assert!(matches!(allocate(p, &DeviceState::new(), &req(0)), Err(NoFit::InvalidCount { .. })));
    }
}

/// A3 (chip2-node16): 1 die only for a single-pod job; 2n ≤ 16 per pod for
/// every job, distributed or not (MindCluster's `module910a3x16`).
#[test]
fn a3_counts_single_and_distributed() {
    let p = profile("atlas-800t-a3");
    let all = DeviceState::new();
    let ok = |count, multi_pod| {
        allocate(p, &all, &DeviceRequest::Whole(WholeRequest { count, multi_pod, card_strategy: CardStrategy::Chip }))
            .is_ok()
    };
    let single: Vec<u32> = (0..=18).filter(|&c| ok(c, false)).collect();
    let multi: Vec<u32> = (0..=18).filter(|&c| ok(c, true)).collect();
    assert_eq!(single, vec![1, 2, 4, 6, 8, 10, 12, 14, 16]);
    assert_eq!(multi, vec![2, 4, 6, 8, 10, 12, 14, 16]);
    assert_eq!(allocate(p, &all, &DeviceRequest::whole_multi_pod(1)).unwrap_err(), NoFit::SingleDieMultiPod);
}

/// A3 single die, all 2^16 free sets: the die comes from a card with exactly
/// one usable die when there is one (lowest such card), else from the lowest
/// whole card; a node with a half-used card outranks one without (MindCluster
/// adds 16 to the score of a node with no single die).
#[test]
fn a3_single_die_all_65536_free_sets() {
    let p = profile("atlas-800t-a3");
    for free in 0..(1u64 << 16) {
        let got = allocate(p, &state_with_free(p, free), &DeviceRequest::whole(1));
        let cards: Vec<Vec<usize>> =
            (0..8).map(|c| [2 * c, 2 * c + 1].into_iter().filter(|&d| free >> d & 1 == 1).collect()).collect();
        let half = cards.iter().find(|c| c.len() == 1);
        let whole = cards.iter().find(|c| c.len() == 2);
        match half.or(whole) {
            Some(c) => {
                let a = got.unwrap_or_else(|e| panic!("free={free:#x}: {e}"));
                assert_eq!(a.devices.to_vec(), vec![c[0]], "free={free:#x}");
                let NodeScore::Ascend(s) = a.score else { panic!("not an Ascend score") };
                assert_eq!(s.affinity_rank, u32::from(half.is_none()), "free={free:#x}");
                assert_eq!(s.free_after, free.count_ones() - 1);
            }
            None => assert!(got.is_err(), "free={free:#x}: expected no fit"),
        }
    }
}

fn bits(chips: &[usize]) -> u64 {
    chips.iter().fold(0, |acc, &c| acc | 1 << c)
}
