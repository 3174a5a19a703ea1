//! GPU memory sharing (ACK gpushare, HAMi): card memory per model and the
//! best-fit choice of GPUs with enough memory and cores free.

use ringleader_topology::profiles::card_memory_gib;
use ringleader_topology::{allocate, builtin, DeviceRequest, DeviceSet, DeviceState, MemRequest, NoFit};

fn mem(gpus: u32, mib: u32, milli: u32) -> DeviceRequest {
    DeviceRequest::Memory(MemRequest { gpus, mib, milli })
}

#[test]
fn card_memory_of_the_real_cards() {
    let table = [
        ("H100-SXM5", Some(80)),
        ("NVIDIA H100 80GB HBM3", Some(80)),
        ("A100-SXM4", Some(40)),
        ("NVIDIA A100-SXM4-80GB", Some(80)),
        ("A100-PCIE-40GB", Some(40)),
        ("A800-SXM4", Some(80)),
        ("GeForce RTX 4090", Some(24)),
        ("L40S", Some(48)),
        ("Tesla V100-SXM2-32GB", Some(32)),
        ("Ascend 910B3", None),
    ];
    for (chip, want) in table {
        assert_eq!(card_memory_gib(chip), want, "{chip}");
    }
}

#[test]
fn every_gpu_count_and_memory_on_a_part_used_4090_box() {
    let p = builtin("pcie-4090-8").unwrap();
    // GPUs 0–3 whole, GPU 4 unhealthy; 5, 6, 7 free with 24576 MiB each.
    let mut st = DeviceState::new().with_allocated(DeviceSet::range(0, 4)).with_unhealthy(DeviceSet::from_indices([4]));
    let first = allocate(p, &st, &mem(1, 20 * 1024, 0)).unwrap();
    assert_eq!(first.ids, vec![5]);
    st.apply(p, &mem(1, 20 * 1024, 0), &first);
    // 4 GiB left on GPU 5: a 4 GiB slice fits there exactly (best fit), 5 GiB does not.
    assert_eq!(allocate(p, &st, &mem(1, 4096, 0)).unwrap().ids, vec![5]);
    assert_eq!(allocate(p, &st, &mem(1, 5 * 1024, 0)).unwrap().ids, vec![6]);
    for gpus in 1..=4u32 {
        let got = allocate(p, &st, &mem(gpus, 4096, 0));
        match gpus {
            1..=3 => assert_eq!(got.map(|a| a.ids.len()), Ok(gpus as usize)),
            _ => assert_eq!(got, Err(NoFit::NoMemoryGpu { gpus, mib: 4096 })),
        }
    }
    // Cores count too: GPU 5 at 60 % cannot take another 50 %.
    let cores = allocate(p, &st, &mem(1, 1024, 500)).unwrap();
    st.apply(p, &mem(1, 1024, 500), &cores);
    assert_eq!(cores.ids, vec![5]);
    assert_eq!(allocate(p, &st, &mem(1, 1024, 600)).unwrap().ids, vec![6]);
    // A memory-shared GPU is no longer free for whole-GPU requests.
    assert!(!st.whole_free(p, false).contains(5));
    // More than the card has is a count error naming the card size.
    let too_big = allocate(p, &st, &mem(1, 25 * 1024, 0)).unwrap_err();
    assert!(too_big.to_string().contains("24 GiB cards"), "{too_big}");
}

#[test]
fn memory_sharing_needs_a_known_nvidia_card() {
    let ascend = builtin("atlas-800-910").unwrap();
    assert!(matches!(allocate(ascend, &DeviceState::new(), &mem(1, 1024, 0)), Err(NoFit::Unsupported { .. })));
}
