//! Node choice and placement for the rules where MindCluster's current plugin
//! differs from the seeds (issue 18): 300I card-mode node scoring, 300T
//! distributed single chips, A3 distributed vcjobs with partial servers.

mod common;

use common::{cluster, jobs};
use ringleader_scheduler::place::place_job;

fn node(name: &str, profile: &str, allocated: &[u32]) -> String {
    let list = allocated.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}, labels: {{host-arch: huawei-arm}}}}\nspec: {{profile: {profile}, network: {{tor: t1}}}}\nstatus: {{allocatedDevices: [{list}]}}\n"
    )
}

/// A vcjob of `replicas` pods with `count` chips of `resource` each.
fn vcjob(name: &str, ring: &str, labels: &str, selector: &str, replicas: u32, resource: &str, count: u32) -> String {
    format!(
        r#"---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, labels: {{ring-controller.atlas: {ring}{labels}}}}}
spec:
  minAvailable: {replicas}
  maxRetry: 3
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{labels: {{ring-controller.atlas: {ring}}}}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {{{selector}}}
        containers:
        - name: main
          image: infer:1
          resources:
            requests: {{{resource}: {count}}}
            limits: {{{resource}: {count}}}
"#
    )
}

fn card_job(name: &str) -> String {
    vcjob(name, "ascend-310", ", npu-310-strategy: card", "", 1, "huawei.com/Ascend310", 1)
}

/// Every chip of a 16-chip 300I node except `free`.
fn all_but(free: &[u32]) -> Vec<u32> {
    (0..16).filter(|c| !free.contains(c)).collect()
}

#[test]
fn card_mode_prefers_the_node_whose_best_card_has_3_free_over_2() {
    // n1's only free card has 2 chips, n2's has 3. MindCluster scores n2 higher (rank 1 of 1 > 3 > 2 > 4)
    // although n2 has more free chips; best fit would pick n1.
    let nodes = node("n1", "atlas-300i", &all_but(&[4, 5])) + &node("n2", "atlas-300i", &all_but(&[8, 9, 10]));
    let mut c = cluster(&nodes);
    let placed = place_job(&mut c, &jobs(&card_job("one"))[0], 1).unwrap();
    assert_eq!((placed[0].node.as_str(), placed[0].devices.clone()), ("n2", vec![8]));
}

#[test]
fn card_mode_single_free_chip_beats_a_whole_free_card_on_another_node() {
    let nodes = node("n1", "atlas-300i", &[]) + &node("n2", "atlas-300i", &all_but(&[3, 12, 13, 14, 15]));
    let mut c = cluster(&nodes);
    let placed = place_job(&mut c, &jobs(&card_job("one"))[0], 1).unwrap();
    assert_eq!((placed[0].node.as_str(), placed[0].devices.clone()), ("n2", vec![3]));
}

#[test]
fn atlas_300t_distributed_job_with_one_chip_per_pod_is_placed() {
    let nodes = node("n1", "atlas-300t", &[0]) + &node("n2", "atlas-300t", &[0]);
    let mut c = cluster(&nodes);
    let j = jobs(&vcjob("dist", "ascend-910", "", "accelerator-type: card", 2, "huawei.com/Ascend910", 1));
    let placed = place_job(&mut c, &j[0], 1).unwrap();
    let mut got: Vec<(String, Vec<u32>)> = placed.iter().map(|p| (p.node.clone(), p.devices.clone())).collect();
    got.sort();
    assert_eq!(got, vec![("n1".to_string(), vec![1]), ("n2".to_string(), vec![1])]);
}

#[test]
fn a3_distributed_vcjob_takes_whole_cards_per_pod() {
    // Dies 0 and 3 are taken on n1: cards 0 and 1 are broken, so 8 dies come from cards 2–5.
    let nodes = node("n1", "atlas-800t-a3", &[0, 3]) + &node("n2", "atlas-800t-a3", &[]);
    let mut c = cluster(&nodes);
    let j = jobs(&vcjob("a3", "ascend-910b", "", "accelerator-type: module-a3-16", 2, "huawei.com/Ascend910", 8));
    let placed = place_job(&mut c, &j[0], 1).unwrap();
    let mut got: Vec<(String, Vec<u32>)> = placed.iter().map(|p| (p.node.clone(), p.devices.clone())).collect();
    got.sort();
    // The fuller node first (best fit), its lowest whole cards; the second pod on n2 (n1 has 4 whole cards left).
    assert_eq!(got, vec![("n1".to_string(), (4..12).collect()), ("n2".to_string(), (0..8).collect())]);
}
