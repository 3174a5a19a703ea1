//! Rank tables: `hccl.json` v1.0 and v1.2 (golden), the rings-config
//! ConfigMap, `initializing` until every pod has its chips, and the MindIE
//! global rank table with its subscription hub.

mod common;

use common::{example, golden, inline, placed};
use ringleader_controller::expand::{expand, ExpandOptions};
use ringleader_controller::placement::Placement;
use ringleader_controller::ranktable::hccl::{self, HcclVersion, RankTableWriter};
use ringleader_controller::ranktable::mindie::{global_table, MindieMember, RankTableHub};

/// Indented, keys in the order they are written.
fn pretty<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("serialises") + "\n"
}

#[test]
fn hccl_v1_0_for_two_pods_sorted_by_rank() {
    let (job, extras) = example("ascendjob-pytorch.yaml");
    let pods = expand(&job, &extras, &ExpandOptions::default()).pods;
    // The worker sits on the node listed first: server_list must still follow rank.
    let p = Placement {
        pods: [
            ("default-test-pytorch-worker-0".to_string(), placed(1, "172.16.0.11", 0, 8)),
            ("default-test-pytorch-master-0".to_string(), placed(2, "172.16.0.10", 0, 8)),
        ]
        .into(),
    };
    assert_eq!(HcclVersion::for_job(&job), HcclVersion::V1_0);
    let table = hccl::table(&job, &pods, &p, HcclVersion::V1_0);
    let content = hccl::render(table.as_ref());
    golden("hccl-v1.0.json", &pretty(&table));

    let cm = hccl::config_map(&job, &content, 1);
    assert_eq!(cm.metadata.name.as_deref(), Some("rings-config-default-test-pytorch"));
    let labels = cm.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("ring-controller.atlas").map(String::as_str), Some("ascend-910"));
    let data = cm.data.clone().unwrap_or_default();
    assert_eq!(data.get("hccl.json"), Some(&content));
    assert_eq!(data.get("version").map(String::as_str), Some("1"));

    let files = hccl::pod_files(&job, &pods, &p);
    assert_eq!(files.len(), 2);
    for (path, file) in files.values() {
        assert_eq!(path, "/user/serverid/devindex/config/hccl.json");
        assert_eq!(file, &content);
    }
    assert_eq!(
        hccl::host_dir("default", "default-test-pytorch"),
        "/user/mindx-dl/ranktable/default.default-test-pytorch"
    );
}

#[test]
fn hccl_initializing_until_every_pod_has_its_chips() {
    let (job, extras) = example("ascendjob-pytorch.yaml");
    let pods = expand(&job, &extras, &ExpandOptions::default()).pods;
    let mut p = Placement { pods: [("default-test-pytorch-master-0".to_string(), placed(1, "a", 0, 8))].into() };
    assert_eq!(hccl::render(hccl::table(&job, &pods, &p, HcclVersion::V1_0).as_ref()), r#"{"status":"initializing"}"#);
    // Placed, but with fewer chips than asked for.
    p.pods.insert("default-test-pytorch-worker-0".to_string(), placed(2, "b", 0, 4));
    assert!(hccl::table(&job, &pods, &p, HcclVersion::V1_0).is_none());
    p.pods.insert("default-test-pytorch-worker-0".to_string(), placed(2, "b", 0, 8));
    assert!(hccl::table(&job, &pods, &p, HcclVersion::V1_0).is_some());

    let mut writer = RankTableWriter::default();
    assert!(writer.update(&job, hccl::INITIALIZING.to_string()).is_some());
    assert!(writer.update(&job, hccl::INITIALIZING.to_string()).is_none(), "unchanged table is not rewritten");
    let full = hccl::render(hccl::table(&job, &pods, &p, HcclVersion::V1_0).as_ref());
    let cm = writer.update(&job, full).expect("changed table is written");
    assert_eq!(cm.data.unwrap_or_default().get("version").map(String::as_str), Some("2"));
}

const SUPERPOD_JOB: &str = r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: sp-job
  namespace: default
  labels: {framework: pytorch, ring-controller.atlas: ascend-910b}
  annotations: {sp-block: "4"}
spec:
  schedulerName: volcano
  runPolicy: {schedulingPolicy: {minAvailable: 2, queue: default}}
  replicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        metadata: {labels: {ring-controller.atlas: ascend-910b}}
        spec:
          nodeSelector: {accelerator-type: module-a3-16-super-pod}
          containers:
          - name: ascend
            image: pt:latest
            ports: [{containerPort: 2222, name: ascendjob-port}]
            resources: {limits: {huawei.com/Ascend910: 4}, requests: {huawei.com/Ascend910: 4}}
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        metadata: {labels: {ring-controller.atlas: ascend-910b}}
        spec:
          nodeSelector: {accelerator-type: module-a3-16-super-pod}
          containers:
          - name: ascend
            image: pt:latest
            ports: [{containerPort: 2222, name: ascendjob-port}]
            resources: {limits: {huawei.com/Ascend910: 4}, requests: {huawei.com/Ascend910: 4}}
"#;

#[test]
fn hccl_v1_2_for_a_superpod_job() {
    let (job, extras) = inline(SUPERPOD_JOB);
    assert_eq!(HcclVersion::for_job(&job), HcclVersion::V1_2);
    let pods = expand(&job, &extras, &ExpandOptions::default()).pods;
    let mut master = placed(1, "172.16.0.20", 0, 4);
    master.super_pod_id = Some("1".to_string());
    let mut worker = placed(2, "172.16.0.21", 4, 4);
    worker.super_pod_id = Some("0".to_string());
    for (pod, base) in [(&mut master, 1000u32), (&mut worker, 2000)] {
        for d in &mut pod.devices {
            d.super_device_id = Some((base + d.id).to_string());
        }
    }
    let p =
        Placement { pods: [("sp-job-master-0".to_string(), master), ("sp-job-worker-0".to_string(), worker)].into() };
    let table = hccl::table(&job, &pods, &p, HcclVersion::V1_2);
    golden("hccl-v1.2.json", &pretty(&table));

    // sp-block 4 with 4 chips per pod: each pod is its own logical SuperPoD.
    let env = ringleader_controller::env::pod_env(&job, &extras, &pods, &p, &Default::default());
    let ids: Vec<_> = ["sp-job-master-0", "sp-job-worker-0"]
        .iter()
        .map(|n| env[*n].get("HCCL_LOGIC_SUPERPOD_ID").unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids, ["0", "1"]);
}

#[test]
fn hccl_v1_2_derives_super_device_ids_the_nodes_do_not_report() {
    let (job, extras) = inline(SUPERPOD_JOB);
    let pods = expand(&job, &extras, &ExpandOptions::default()).pods;
    // Two servers of SuperPoD 0 and one device reported by its node: that ID stays.
    let master = placed(1, "172.16.0.20", 0, 4);
    let mut worker = placed(2, "172.16.0.21", 4, 4);
    worker.super_pod_id = Some("0".to_string());
    worker.devices[3].super_device_id = Some("777".to_string());
    let p =
        Placement { pods: [("sp-job-master-0".to_string(), master), ("sp-job-worker-0".to_string(), worker)].into() };
    let table = hccl::table(&job, &pods, &p, HcclVersion::V1_2).expect("every pod placed");
    golden("hccl-v1.2-derived-sdid.json", &pretty(&Some(&table)));
    let ids: Vec<Vec<String>> = table
        .server_list
        .iter()
        .map(|s| s.device.iter().map(|d| d.super_device_id.clone().unwrap_or_default()).collect())
        .collect();
    // Master is the first server of SuperPoD 0 (dies 0–3), worker the second (16 + 4..7), except the reported 777.
    assert_eq!(ids, [vec!["0", "1", "2", "3"], vec!["20", "21", "22", "777"]]);
    // v1.0 tables carry no super_device_id at all.
    let v10 = hccl::render(hccl::table(&job, &pods, &p, HcclVersion::V1_0).as_ref());
    assert!(!v10.contains("super_device_id"), "{v10}");
}

#[test]
fn mindie_global_rank_table_and_subscription() {
    let (controller, cx) = example("mindie-controller.yaml");
    let (coordinator, ox) = example("mindie-coordinator.yaml");
    let (server, sx) = example("mindie-server.yaml");
    let c_pods = expand(&controller, &cx, &ExpandOptions::default()).pods;
    let o_pods = expand(&coordinator, &ox, &ExpandOptions::default()).pods;
    let s_pods = expand(&server, &sx, &ExpandOptions::default()).pods;
    let mut placement = Placement::default();
    placement.pods.insert(c_pods[0].name.clone(), placed(5, "172.16.5.2", 0, 0));
    placement.pods.insert(o_pods[0].name.clone(), placed(6, "172.16.6.2", 0, 0));
    let members = |placement: &Placement| {
        let members = [
            MindieMember { job: &server, pods: &s_pods, placement },
            MindieMember { job: &controller, pods: &c_pods, placement },
            MindieMember { job: &coordinator, pods: &o_pods, placement },
        ];
        global_table("mindie-ms-test", &members)
    };
    let mut hub = RankTableHub::default();
    let sub = hub.subscribe();
    let first = members(&placement);
    assert_eq!(first.status, "initializing", "servers not placed yet");
    assert_eq!(hub.publish(&first), Some(1));
    assert_eq!(hub.publish(&first), None, "an unchanged table is not pushed again");

    placement.pods.insert(s_pods[0].name.clone(), placed(1, "172.16.1.2", 0, 8));
    placement.pods.insert(s_pods[1].name.clone(), placed(2, "172.16.2.2", 0, 8));
    let table = members(&placement);
    assert_eq!(table.status, "completed");
    assert_eq!(hub.publish(&table), Some(2));
    let got = hub.take(sub);
    assert_eq!(got.iter().map(|p| p.version).collect::<Vec<_>>(), [1, 2], "the subscriber sees every version");
    assert_eq!(got[1].content, serde_json::to_string(&table).expect("serialises"));
    golden("mindie-global-ranktable.json", &pretty(&table));

    // A late subscriber starts from the current version.
    let late = hub.subscribe();
    assert_eq!(hub.take(late).iter().map(|p| p.version).collect::<Vec<_>>(), [2]);
    // A server pod rescheduled elsewhere: a new version reaches both.
    placement.pods.insert(s_pods[1].name.clone(), placed(3, "172.16.3.2", 0, 8));
    assert_eq!(hub.publish(&members(&placement)), Some(3));
    assert_eq!(hub.take(sub).len(), 1);
    assert_eq!(hub.take(late).len(), 1);
}

/// The example AscendJob with `workers` Workers (1 Master), 8 chips each.
fn ascend_job_of(workers: usize) -> (ringleader_api::Job, ringleader_controller::JobExtras) {
    let text = std::fs::read_to_string(common::examples().join("ascendjob-pytorch.yaml")).expect("example reads");
    let text = text.replace("minAvailable: 2 ", &format!("minAvailable: {} ", workers + 1)).replace(
        "replicas: 1                     # number of Worker",
        &format!("replicas: {workers} # number of Worker"),
    );
    inline(&text)
}

#[test]
fn large_tables_are_packed_in_the_config_map_and_read_back_whole() {
    use ringleader_api::configmap_file;
    use ringleader_controller::lifecycle::RankTableMark;
    let (job, extras) = ascend_job_of(1_199);
    let pods = expand(&job, &extras, &ExpandOptions::default()).pods;
    assert_eq!(pods.len(), 1_200);
    let p = Placement {
        pods: pods
            .iter()
            .enumerate()
            .map(|(i, pod)| (pod.name.clone(), placed(i as u32, &format!("172.16.{}.{}", i / 250, i % 250), 0, 8)))
            .collect(),
    };
    let content = hccl::render(hccl::table(&job, &pods, &p, HcclVersion::V1_0).as_ref());
    assert!(content.len() > configmap_file::PACK_ABOVE, "{} bytes", content.len());

    let cm = hccl::config_map(&job, &content, 3);
    let data = cm.data.clone().unwrap_or_default();
    assert!(configmap_file::is_placeholder(&data["hccl.json"]), "{}", data["hccl.json"]);
    assert_eq!(data.get("version").map(String::as_str), Some("3"));
    let packed = cm.binary_data.clone().unwrap_or_default();
    let gz = packed.get("hccl.json.gz").map_or(0, |b| b.0.len());
    assert!(gz > 0 && gz * 8 < content.len(), "{gz} bytes of gzip for {} of JSON", content.len());
    // As the store holds it (base64), within kube-apiserver's 1 MiB.
    let stored = serde_json::to_value(&cm).expect("serialises");
    assert!(serde_json::to_vec(&stored).map_or(0, |v| v.len()) < 1 << 20);
    assert_eq!(configmap_file::read(&stored, "hccl.json"), Ok(Some(content.clone())));

    // The job's status keeps a mark of it, not the table.
    let mark = RankTableMark::of(&content, 3);
    assert!(mark.describes(&content) && !mark.describes(hccl::INITIALIZING));
    assert_eq!(mark.bytes, content.len() as u64);
    assert!(serde_json::to_string(&mark).map_or(usize::MAX, |s| s.len()) < 200);

    // A small table stays exactly as before: plain text, no binaryData.
    let small = hccl::config_map(&job, hccl::INITIALIZING, 1);
    assert_eq!(small.data.unwrap_or_default().get("hccl.json").map(String::as_str), Some(hccl::INITIALIZING));
    assert!(small.binary_data.is_none());
}

#[test]
fn a_status_written_with_the_whole_table_still_reads() {
    use ringleader_controller::lifecycle::RankTableMark;
    let table = r#"{"status":"completed","server_count":"1"}"#;
    let mut v = serde_json::to_value(ringleader_controller::JobStatus::default()).expect("serialises");
    assert_eq!(v.get("rank_table"), Some(&serde_json::Value::Null));
    v["rank_table"] = serde_json::json!([table, 4]);
    let st: ringleader_controller::JobStatus = serde_json::from_value(v).expect("the old [table, version] form reads");
    assert_eq!(st.rank_table, Some(RankTableMark::of(table, 4)));
    let again: ringleader_controller::JobStatus =
        serde_json::from_value(serde_json::to_value(&st).expect("serialises")).expect("the mark reads back");
    assert_eq!(again, st);
}
