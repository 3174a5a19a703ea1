//! The Ascend chip-affinity rules of spec/ascend.md, checked exhaustively
//! against a reference written directly from the rule text (it shares no
//! code with the allocator: it walks the preference list and the rings the
//! way the text reads).

use ringleader_topology::{allocate, builtin, DeviceRequest, DeviceSet, DeviceState, NoFit, NodeScore, Profile};

fn profile(name: &str) -> &'static Profile {
    builtin(name).unwrap_or_else(|| panic!("missing builtin {name}"))
}

/// Free set of a node: everything not in `free` is allocated.
fn state_with_free(p: &Profile, free: u64) -> DeviceState {
    DeviceState::new().with_allocated(p.all().minus(DeviceSet(free)))
}

fn chips_of(free: u64, ring: &[usize]) -> Vec<usize> {
    ring.iter().copied().filter(|&c| free >> c & 1 == 1).collect()
}

/// Atlas 800 / half reference: "request 1: free 1 > 3 > 2 > 4; 2: 2 > 4 > 3;
/// 4: 4 only; 8: both rings fully free; lowest IDs within the ring; tie → ring
/// 0–3 first". Returns (chips, rank of the ring's free count, ring free count).
fn ref_ring4(rings: &[[usize; 4]], free: u64, req: usize) -> Option<(Vec<usize>, usize, usize)> {
    if req == 8 {
        let all: Vec<usize> = rings.iter().flatten().copied().collect();
        return (chips_of(free, &all).len() == 8).then_some((all, 0, 4));
    }
    let order: &[usize] = match req {
        1 => &[1, 3, 2, 4],
        2 => &[2, 4, 3],
        4 => &[4],
        _ => unreachable!(),
    };
    for (rank, &want) in order.iter().enumerate() {
        for ring in rings {
            let f = chips_of(free, ring);
            if f.len() == want {
                return Some((f[..req].to_vec(), rank, want));
            }
        }
    }
    None
}

fn check_ring4(name: &str, rings: &[[usize; 4]], requests: &[usize]) -> usize {
    let p = profile(name);
    let n = rings.len() * 4;
    let mut checked = 0;
    for free in 0..(1u64 << n) {
        let st = state_with_free(p, free);
        for &req in requests {
            let got = allocate(p, &st, &DeviceRequest::whole(req as u32));
            match ref_ring4(rings, free, req) {
                Some((chips, rank, ring_free)) => {
                    let a =
                        got.unwrap_or_else(|e| panic!("{name} free={free:#x} req={req}: expected {chips:?}, got {e}"));
                    assert_eq!(a.devices.to_vec(), chips, "{name} free={free:#x} req={req}");
                    let NodeScore::Ascend(s) = a.score else { panic!("not an Ascend score") };
                    assert_eq!(s.affinity_rank as usize, rank, "{name} free={free:#x} req={req} rank");
                    assert_eq!(s.free_after as usize, free.count_ones() as usize - req);
                    assert_eq!(s.even_remainder, req == 8 || (ring_free - req) % 2 == 0);
                    assert_eq!(s.healthy_chips as usize, n);
                }
                None => {
                    let e = got.expect_err("reference says no fit");
                    assert!(
                        matches!(e, NoFit::NoRing { .. } | NoFit::Insufficient { .. }),
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
fn atlas_800_all_256_free_sets() {
    let checked = check_ring4("atlas-800-910", &[[0, 1, 2, 3], [4, 5, 6, 7]], &[1, 2, 4, 8]);
    assert_eq!(checked, 256 * 4);
}

#[test]
fn atlas_800_half_all_16_free_sets() {
    let checked = check_ring4("atlas-800-910-half", &[[0, 1, 2, 3]], &[1, 2, 4]);
    assert_eq!(checked, 16 * 3);
}

#[test]
fn atlas_800_examples_from_the_rule_text() {
    let p = profile("atlas-800-910");
    let req1 = DeviceRequest::whole(1);
    // Ring 0 has 3 free, ring 1 has 2 free: request 1 prefers 3 over 2.
    let st = state_with_free(p, 0b0011_0111);
    assert_eq!(allocate(p, &st, &req1).unwrap().ids, vec![0]);
    // Ring 0 full (4), ring 1 has 1 free (chip 7): the single free chip wins.
    let st = state_with_free(p, 0b1000_1111);
    assert_eq!(allocate(p, &st, &req1).unwrap().ids, vec![7]);
    // Request 2 with rings 3 and 4 free: 4 is preferred over 3.
    let st = state_with_free(p, 0b1111_0111);
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(2)).unwrap().ids, vec![4, 5]);
    // Request 4 across rings is never allowed: 2 + 2 free gives no fit.
    let st = state_with_free(p, 0b0011_0011);
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(4)).unwrap_err().to_string(), "no HCCS ring with 4 free chips");
    // 3 and >8 are invalid counts.
    let st = DeviceState::new();
    assert!(matches!(allocate(p, &st, &DeviceRequest::whole(3)), Err(NoFit::InvalidCount { .. })));
    let e = allocate(p, &st, &DeviceRequest::whole(16)).unwrap_err();
    assert!(e.to_string().contains("8×N"), "{e}");
}

#[test]
fn atlas_800_unhealthy_and_network_unhealthy() {
    let p = profile("atlas-800-910");
    let st = DeviceState::new()
        .with_unhealthy(DeviceSet::from_indices([0]))
        .with_network_unhealthy(DeviceSet::from_indices([4]));
    // Single-pod: chip 4 (network-unhealthy) is fine; ring 0 has 3 free, ring 1 has 4: request 1 prefers 3.
    let a = allocate(p, &st, &DeviceRequest::whole(1)).unwrap();
    assert_eq!(a.ids, vec![1]);
    // Multi-pod: chip 4 excluded → both rings have 3 free → ring 0 first.
    let a = allocate(p, &st, &DeviceRequest::whole_multi_pod(2)).unwrap();
    assert_eq!(a.ids, vec![1, 2]);
    // Request 4 single-pod: ring 1 is whole (chip 4 allowed); multi-pod: nothing.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(4)).unwrap().ids, vec![4, 5, 6, 7]);
    assert!(allocate(p, &st, &DeviceRequest::whole_multi_pod(4)).is_err());
    // Health counts in the node score: 7 healthy chips.
    let NodeScore::Ascend(s) = allocate(p, &st, &DeviceRequest::whole(1)).unwrap().score else { panic!() };
    assert_eq!(s.healthy_chips, 7);
}

#[test]
fn atlas_800_node_order() {
    let p = profile("atlas-800-910");
    let score = |free: u64, req: u32| allocate(p, &state_with_free(p, free), &DeviceRequest::whole(req)).unwrap().score;
    // Request 1: a node whose best ring has 1 free beats one whose best ring has 3.
    assert!(score(0b0000_0001, 1) > score(0b0000_0111, 1));
    // Same ring rank: fewer free chips wins (bin-pack).
    assert!(score(0b0000_0001, 1) > score(0b1111_0001, 1));
    // More healthy chips first.
    let sick = DeviceState::new().with_unhealthy(DeviceSet::from_indices([7]));
    let healthy_node = allocate(p, &state_with_free(p, 0xff), &DeviceRequest::whole(4)).unwrap().score;
    let sick_node = allocate(p, &sick, &DeviceRequest::whole(4)).unwrap().score;
    assert!(healthy_node > sick_node);
}

/// Box16 reference: "invalid 9, 11, 13, 15; ≤ 8 in one ring, the ring whose free
/// count is the smallest that fits (n, n+1, …, 8); > 8 in cross-ring pairs (i, i+8)".
fn ref_box16(free: u64, req: usize) -> Option<(Vec<usize>, usize)> {
    let rings = [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15]];
    if req <= 8 {
        for want in req..=8 {
            for ring in &rings {
                let f = chips_of(free, ring);
                if f.len() == want {
                    return Some((f[..req].to_vec(), want - req));
                }
            }
        }
        return None;
    }
    let pairs: Vec<usize> = (0..8).filter(|&i| free >> i & 1 == 1 && free >> (i + 8) & 1 == 1).collect();
    if pairs.len() < req / 2 {
        return None;
    }
    let mut chips: Vec<usize> = pairs[..req / 2].iter().flat_map(|&i| [i, i + 8]).collect();
    chips.sort_unstable();
    Some((chips, pairs.len() - req / 2))
}

#[test]
fn box16_all_65536_free_sets() {
    let p = profile("atlas-200t-a2-box16");
    let valid = [1usize, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16];
    let reqs: Vec<DeviceRequest> = valid.iter().map(|&r| DeviceRequest::whole(r as u32)).collect();
    let mut checked = 0;
    for free in 0..(1u64 << 16) {
        let st = state_with_free(p, free);
        for (&req, dreq) in valid.iter().zip(&reqs) {
            let got = allocate(p, &st, dreq);
            match ref_box16(free, req) {
                Some((chips, rank)) => {
                    let a = got.unwrap_or_else(|e| panic!("free={free:#x} req={req}: expected {chips:?}, got {e}"));
                    assert_eq!(a.devices.to_vec(), chips, "free={free:#x} req={req}");
                    let NodeScore::Ascend(s) = a.score else { panic!() };
                    assert_eq!(s.affinity_rank as usize, rank, "free={free:#x} req={req}");
                }
                None => assert!(got.is_err(), "free={free:#x} req={req}: expected no fit, got {got:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 65_536 * 12);
    for bad in [9, 11, 13, 15, 17] {
        assert!(matches!(
            allocate(p, &DeviceState::new(), &DeviceRequest::whole(bad)),
            Err(NoFit::InvalidCount { .. })
        ));
    }
}

#[test]
fn a2_full_mesh_best_fit_lowest_ids() {
    let p = profile("atlas-800t-a2");
    let st = state_with_free(p, 0b1011_0110);
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(3)).unwrap().ids, vec![1, 2, 4]);
    let fuller = allocate(p, &state_with_free(p, 0b0000_0111), &DeviceRequest::whole(3)).unwrap().score;
    let emptier = allocate(p, &st, &DeviceRequest::whole(3)).unwrap().score;
    assert!(fuller > emptier, "fewest free chips that still fits wins");
    assert!(matches!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(9)), Err(NoFit::InvalidCount { .. })));
}

#[test]
fn a3_dies_and_cards() {
    let p = profile("atlas-800t-a3");
    // Cards 0 and 2 half used (dies 0 and 4 allocated), the rest whole: 1 die comes from the most-used card, lowest first.
    let st = DeviceState::new().with_allocated(DeviceSet::from_indices([0, 4]));
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(1)).unwrap().ids, vec![1]);
    // Multi-pod jobs may not take 1 die.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole_multi_pod(1)).unwrap_err(), NoFit::SingleDieMultiPod);
    // Even counts take whole free cards only: cards 1, 3, … (cards 0 and 2 are broken).
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(4)).unwrap().ids, vec![2, 3, 6, 7]);
    assert!(matches!(allocate(p, &st, &DeviceRequest::whole(3)), Err(NoFit::InvalidCount { .. })));
    // 14 free dies but only 6 whole cards: 14 dies do not fit.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(14)).unwrap_err(), NoFit::NoWholeCards { cards: 7 });
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(16)).unwrap().ids.len(), 16);
}

#[test]
fn chip4_node16_and_chip1_profiles() {
    let p = profile("atlas-350-16");
    let st = state_with_free(p, 0xffff & !0b0000_0000_0001_0111);
    // Rings: 0 has 1 free (3), 1 has 3 free, 2 and 3 whole: request 1 → ring 0.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(1)).unwrap().ids, vec![3]);
    // Request 8 → the two whole rings 2 and 3.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(8)).unwrap().ids, (8..16).collect::<Vec<u32>>());
    let flat = profile("atlas-350-8-pcie");
    assert_eq!(
        allocate(flat, &state_with_free(flat, 0b1010_1010), &DeviceRequest::whole(3)).unwrap().ids,
        vec![1, 3, 5]
    );
}

#[test]
fn atlas_300t_counts() {
    let p = profile("atlas-300t");
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(1)).unwrap().ids, vec![0]);
    // MindCluster accepts 1 chip per pod for distributed 300T jobs too (issue 18; was InvalidCount).
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole_multi_pod(1)).unwrap().ids, vec![0]);
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole_multi_pod(2)).unwrap().ids, vec![0, 1]);
}

#[test]
fn cards_310() {
    use ringleader_topology::{CardStrategy, WholeRequest};
    let card =
        |count| DeviceRequest::Whole(WholeRequest { count, multi_pod: false, card_strategy: CardStrategy::Card });
    let p = profile("atlas-300i");
    // Card 0 has 2 free (2, 3), card 1 has 4 free: 2 chips on card 0 (best fit).
    let st = DeviceState::new().with_allocated(DeviceSet::from_indices([0, 1]));
    assert_eq!(allocate(p, &st, &card(2)).unwrap().ids, vec![2, 3]);
    assert_eq!(allocate(p, &st, &card(3)).unwrap().ids, vec![4, 5, 6]);
    assert!(matches!(allocate(p, &st, &card(5)), Err(NoFit::InvalidCount { .. })));
    let duo = profile("atlas-300i-duo");
    // Duo, chip strategy: card 1 (chips 2, 3) has exactly 1 free (3); 3 chips = one whole card + chip 3.
    let st = DeviceState::new().with_allocated(DeviceSet::from_indices([2]));
    assert_eq!(allocate(duo, &st, &DeviceRequest::whole(3)).unwrap().ids, vec![0, 1, 3]);
    assert_eq!(allocate(duo, &st, &DeviceRequest::whole(1)).unwrap().ids, vec![3]);
}
