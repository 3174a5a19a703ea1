//! Network-topology placement: HyperNode tiers (hard / soft), tor-affinity
//! schemas, SuperPoD logical blocks.

mod common;

use common::{cluster, jobs};
use ringleader_api::Job;
use ringleader_scheduler::place::place_job;

/// `count` nodes named `<prefix>-<i>` with the network fields given.
fn nodes(prefix: &str, count: usize, profile: &str, network: &str, status: &str) -> String {
    (0..count)
        .map(|i| {
            format!(
                "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {prefix}-{i}}}\nspec: {{profile: {profile}, network: {network}}}\nstatus: {status}\n"
            )
        })
        .collect()
}

fn job(yaml: &str) -> Job {
    jobs(yaml).remove(0)
}

fn vcjob(name: &str, replicas: u32, gpus: u32, extra_spec: &str) -> Job {
    job(&format!(
        r#"apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  minAvailable: {replicas}
{extra_spec}
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {{name: c, image: train:1, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}
"#
    ))
}

fn nodes_of(placed: &[ringleader_scheduler::place::PodPlacement]) -> Vec<String> {
    let mut v: Vec<String> = placed.iter().map(|p| p.node.clone()).collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn hard_tier_one_keeps_the_gang_in_one_tor_or_waits() {
    // tor-a: 2 nodes (16 GPUs); tor-b: 3 nodes (24 GPUs), one of them half used.
    let yaml = nodes("a", 2, "hgx-h100-8", "{tor: tor-a, spine: s1}", "{}")
        + &nodes("b", 2, "hgx-h100-8", "{tor: tor-b, spine: s1}", "{}")
        + &nodes("bb", 1, "hgx-h100-8", "{tor: tor-b, spine: s1}", "{allocatedDevices: [0, 1, 2, 3]}");
    let mut c = cluster(&yaml);
    let nt = "  networkTopology: {mode: hard, highestTierAllowed: 1}";
    // 3 pods × 4 GPUs fit in either ToR; the tightest (tor-a, 16 free) is tried first.
    let placed = place_job(&mut c, &vcjob("small", 3, 4, nt), 0).unwrap();
    assert_eq!(nodes_of(&placed), vec!["a-0", "a-1"]);
    // 3 pods × 8 GPUs fit in no single ToR now: the job waits, whole.
    let err = place_job(&mut c, &vcjob("big", 3, 8, nt), 0).unwrap_err();
    assert_eq!(err, "network topology: no HyperNode of tier ≤ 1 can hold all 3 pods (24 devices) of the gang");
    // Allowed up to tier 2 (the spine), the same job spans ToRs... but 3 whole nodes are not free either.
    let err = place_job(&mut c, &vcjob("big2", 3, 8, "  networkTopology: {mode: hard, highestTierAllowed: 2}"), 0);
    assert!(err.is_err());
    // Two 8-GPU pods fit in tor-b at tier 1.
    let placed = place_job(&mut c, &vcjob("pair", 2, 8, nt), 0).unwrap();
    assert_eq!(nodes_of(&placed), vec!["b-0", "b-1"]);
}

#[test]
fn soft_mode_falls_back_to_spanning_tors() {
    let yaml = nodes("a", 1, "hgx-h100-8", "{tor: tor-a}", "{}") + &nodes("b", 1, "hgx-h100-8", "{tor: tor-b}", "{}");
    let mut c = cluster(&yaml);
    let placed =
        place_job(&mut c, &vcjob("wide", 2, 8, "  networkTopology: {mode: soft, highestTierAllowed: 1}"), 0).unwrap();
    assert_eq!(nodes_of(&placed), vec!["a-0", "b-0"]);
}

#[test]
fn tor_affinity_large_model_fills_the_roomiest_tor_and_filler_the_tightest() {
    // tor-big: 4 free nodes; tor-small: 2 free nodes.
    let yaml = nodes("big", 4, "hgx-h100-8", "{tor: tor-big}", "{}")
        + &nodes("small", 2, "hgx-h100-8", "{tor: tor-small}", "{}");
    let with_label = |name: &str, replicas: u32| {
        let mut j = vcjob(name, replicas, 8, "");
        j.labels.insert("tor-affinity".into(), "large-model-schema".into());
        j
    };
    let mut c = cluster(&yaml);
    let large = place_job(&mut c, &with_label("large", 4), 0).unwrap();
    assert_eq!(nodes_of(&large), vec!["big-0", "big-1", "big-2", "big-3"]);
    let mut c = cluster(&yaml);
    let filler = place_job(&mut c, &with_label("filler", 2), 0).unwrap();
    assert_eq!(nodes_of(&filler), vec!["small-0", "small-1"]);
}

/// MindCluster's three schemas, and `null`: on roomy ToRs a normal or filler
/// job takes the tightest ToR that holds it while `null` only keeps the
/// gang on few ToRs (the roomiest); when no ToR holds the job, a filler
/// waits while the others span ToRs.
#[test]
fn tor_affinity_schemas_place_differently() {
    let labelled = |name: &str, schema: &str| {
        let mut j = vcjob(name, 2, 8, "");
        j.labels.insert("tor-affinity".into(), schema.into());
        j
    };
    // tor-a: 3 free nodes; tor-b: 2 free nodes.
    let roomy = nodes("a", 3, "hgx-h100-8", "{tor: tor-a}", "{}") + &nodes("b", 2, "hgx-h100-8", "{tor: tor-b}", "{}");
    let on = |schema: &str| nodes_of(&place_job(&mut cluster(&roomy), &labelled("j", schema), 0).unwrap());
    assert_eq!(on("null"), vec!["a-0", "a-1"]);
    assert_eq!(on("normal-schema"), vec!["b-0", "b-1"]);
    assert_eq!(on("large-model-schema"), vec!["b-0", "b-1"]);
    // One free node under each ToR.
    let busy = "{allocatedDevices: [0, 1, 2, 3, 4, 5, 6, 7]}";
    let split = nodes("a", 1, "hgx-h100-8", "{tor: tor-a}", "{}")
        + &nodes("aa", 1, "hgx-h100-8", "{tor: tor-a}", busy)
        + &nodes("b", 1, "hgx-h100-8", "{tor: tor-b}", "{}")
        + &nodes("bb", 1, "hgx-h100-8", "{tor: tor-b}", busy);
    for schema in ["null", "normal-schema"] {
        let placed = place_job(&mut cluster(&split), &labelled("j", schema), 0).unwrap();
        assert_eq!(nodes_of(&placed), vec!["a-0", "b-0"], "{schema}");
    }
    let err = place_job(&mut cluster(&split), &labelled("j", "large-model-schema"), 0).unwrap_err();
    assert!(err.contains("filler job (2 pods, fewer than 4) runs under one ToR"), "{err}");
    // With no ToR named anywhere the label has nothing to act on.
    let flat = nodes("f", 2, "hgx-h100-8", "{}", "{}");
    assert!(place_job(&mut cluster(&flat), &labelled("j", "large-model-schema"), 0).is_ok());
}

fn superpod_job(name: &str, replicas: u32, sp_block: Option<u32>, affinity: Option<&str>) -> Job {
    let ann = sp_block.map(|b| format!("\n  annotations: {{sp-block: \"{b}\"}}")).unwrap_or_default();
    let aff = affinity.map(|a| format!(", super-pod-affinity: {a}")).unwrap_or_default();
    job(&format!(
        r#"apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: {name}
  labels: {{framework: pytorch, ring-controller.atlas: ascend-910b{aff}}}{ann}
spec:
  replicaSpecs:
    Worker:
      replicas: {replicas}
      template:
        metadata: {{labels: {{ring-controller.atlas: ascend-910b}}}}
        spec:
          nodeSelector: {{accelerator-type: module-a3-16-super-pod}}
          containers:
          - name: ascend
            image: train:1
            resources:
              requests: {{huawei.com/Ascend910: 16}}
              limits: {{huawei.com/Ascend910: 16}}
"#
    ))
}

#[test]
fn superpod_blocks_stay_inside_the_smallest_superpod_that_fits() {
    // sp-0: 4 nodes, sp-1: 2 nodes, sp-2: 3 nodes.
    let yaml = nodes("p0", 4, "atlas-900-a3-superpod", "{superPod: sp-0}", "{}")
        + &nodes("p1", 2, "atlas-900-a3-superpod", "{superPod: sp-1}", "{}")
        + &nodes("p2", 3, "atlas-900-a3-superpod", "{superPod: sp-2}", "{}");
    let mut c = cluster(&yaml);
    // 4 pods in logical blocks of 2 nodes (sp-block 32 chips / 16 per pod): each block
    // takes the smallest SuperPoD with 2 free nodes: sp-1, then sp-2.
    let placed = place_job(&mut c, &superpod_job("blocks", 4, Some(32), None), 0).unwrap();
    let sp_of = |node: &str| node.split('-').next().unwrap_or_default().to_string();
    let blocks: Vec<String> = placed.iter().map(|p| sp_of(&p.node)).collect();
    assert_eq!(blocks, vec!["p1", "p1", "p2", "p2"]);
    // A block of 4 (sp-block 64) now fits only sp-0.
    let placed = place_job(&mut c, &superpod_job("quad", 4, Some(64), None), 0).unwrap();
    assert!(placed.iter().all(|p| p.node.starts_with("p0-")), "{placed:?}");
}

#[test]
fn superpod_affinity_hard_waits_and_soft_spreads() {
    let yaml = nodes("p0", 2, "atlas-900-a3-superpod", "{superPod: sp-0}", "{}")
        + &nodes("p1", 2, "atlas-900-a3-superpod", "{superPod: sp-1}", "{}");
    let mut c = cluster(&yaml);
    let err = place_job(&mut c, &superpod_job("hard", 3, Some(48), Some("hard")), 0).unwrap_err();
    assert!(err.contains("super-pod: no SuperPoD has 3 free nodes for a logical block of sp-block 48"), "{err}");
    let placed = place_job(&mut c, &superpod_job("soft", 3, Some(48), Some("soft")), 0).unwrap();
    assert_eq!(placed.len(), 3);
}

/// Issue 25: a Master and two Workers with `sp-block: 48` (three nodes) are
/// one logical block: hard affinity keeps all three in one SuperPoD or
/// waits, whichever role each pod is of.
#[test]
fn superpod_blocks_span_roles() {
    let yaml = nodes("p0", 2, "atlas-900-a3-superpod", "{superPod: sp-0}", "{}")
        + &nodes("p1", 2, "atlas-900-a3-superpod", "{superPod: sp-1}", "{}");
    let role = |name: &str, replicas: u32| {
        format!(
            r#"    {name}:
      replicas: {replicas}
      template:
        metadata: {{labels: {{ring-controller.atlas: ascend-910b}}}}
        spec:
          nodeSelector: {{accelerator-type: module-a3-16-super-pod}}
          containers:
          - {{name: ascend, image: train:1, resources: {{requests: {{huawei.com/Ascend910: 16}}, limits: {{huawei.com/Ascend910: 16}}}}}}
"#
        )
    };
    let with_master = |name: &str| {
        job(&format!(
            r#"apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: {name}
  labels: {{framework: pytorch, ring-controller.atlas: ascend-910b, super-pod-affinity: hard}}
  annotations: {{sp-block: "48"}}
spec:
  replicaSpecs:
{}{}"#,
            role("Master", 1),
            role("Worker", 2)
        ))
    };
    let mut c = cluster(&yaml);
    let err = place_job(&mut c, &with_master("split"), 0).unwrap_err();
    assert!(err.contains("no SuperPoD has 3 free nodes for a logical block of sp-block 48"), "{err}");
    let wide = nodes("p0", 3, "atlas-900-a3-superpod", "{superPod: sp-0}", "{}")
        + &nodes("p1", 2, "atlas-900-a3-superpod", "{superPod: sp-1}", "{}");
    let mut c = cluster(&wide);
    let placed = place_job(&mut c, &with_master("whole"), 0).unwrap();
    assert!(placed.iter().all(|p| p.node.starts_with("p0-")), "{placed:?}");
    assert_eq!(placed.len(), 3);
}

fn partitioned(name: &str, min_available: u32, partitions: u32, size: u32, extra: &str) -> Job {
    job(&format!(
        r#"apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  minAvailable: {min_available}
  tasks:
  - name: worker
    replicas: {replicas}
    partitionPolicy: {{totalPartitions: {partitions}, partitionSize: {size}{extra}}}
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - {{name: c, image: train:1, resources: {{limits: {{nvidia.com/gpu: 8}}}}}}
"#,
        replicas = partitions * size
    ))
}

#[test]
fn partitions_each_stay_in_the_tightest_tor_that_holds_them() {
    let yaml = nodes("a", 2, "hgx-h100-8", "{tor: tor-a}", "{}") + &nodes("b", 3, "hgx-h100-8", "{tor: tor-b}", "{}");
    let mut c = cluster(&yaml);
    let nt = ", networkTopology: {mode: hard, highestTierAllowed: 1}";
    let placed = place_job(&mut c, &partitioned("parts", 4, 2, 2, nt), 0).unwrap();
    let by_pod: Vec<(&str, &str)> = placed.iter().map(|p| (p.pod.as_str(), p.node.as_str())).collect();
    // Partition 0 (pods 0, 1) fills tor-a, the tightest ToR with room for 2; partition 1 goes to tor-b.
    assert_eq!(&by_pod[..2], &[("parts-worker-0", "a-0"), ("parts-worker-1", "a-1")]);
    assert!(by_pod[2..].iter().all(|(_, n)| n.starts_with("b-")), "{by_pod:?}");
}

#[test]
fn min_partitions_decides_and_a_partition_is_placed_whole_or_not_at_all() {
    let nt = ", networkTopology: {mode: hard, highestTierAllowed: 1}";
    let yaml = nodes("a", 2, "hgx-h100-8", "{tor: tor-a}", "{}") + &nodes("b", 1, "hgx-h100-8", "{tor: tor-b}", "{}");
    // One partition of 2 is enough (minPartitions 1): partition 1 finds no ToR with room for 2.
    let mut c = cluster(&yaml);
    let placed = place_job(&mut c, &partitioned("one", 2, 2, 2, &format!("{nt}, minPartitions: 1")), 0).unwrap();
    assert_eq!(nodes_of(&placed), vec!["a-0", "a-1"]);
    // Both partitions required: the job waits, whole.
    let mut c = cluster(&yaml);
    let err = place_job(&mut c, &partitioned("two", 2, 2, 2, &format!("{nt}, minPartitions: 2")), 0).unwrap_err();
    assert_eq!(
        err,
        "gang: only 1 of minPartitions 2 partitions of worker fit; pod two-worker-2: partition: no HyperNode of tier ≤ 1 can hold a partition of 2 pods"
    );
    // Without a topology constraint a partition that only partly fits is rolled back:
    // 3 free nodes, partitions of 2: the second partition's lone pod is not placed.
    let mut c = cluster(&yaml);
    let placed = place_job(&mut c, &partitioned("loose", 2, 2, 2, ""), 0).unwrap();
    assert_eq!(placed.len(), 2);
    assert_eq!(c.nodes.iter().filter(|n| n.state.allocated.is_empty()).count(), 1);
}
