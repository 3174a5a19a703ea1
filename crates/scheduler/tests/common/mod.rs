//! Helpers shared by the scheduler's integration tests: clusters and jobs
//! from YAML text, through the same parsing and validation users get.

use ringleader_api::document::parse_str;
use ringleader_api::{check_documents, Job, Resource};
use ringleader_scheduler::cluster::{Cluster, Node};

/// A cluster from `ringleader.io/v1alpha1` Node documents.
pub fn cluster(yaml: &str) -> Cluster {
    let docs = parse_str("cluster.yaml", yaml).unwrap();
    let nodes = check_documents(&docs)
        .into_iter()
        .map(|r| {
            assert!(r.valid, "{:?}", r.errors);
            match r.resource {
                Some(Resource::Node(n)) => Node::from_object(&n).unwrap(),
                other => panic!("not a node: {other:?}"),
            }
        })
        .collect();
    Cluster { nodes }
}

/// Every job of the documents, each of which must be valid.
pub fn jobs(yaml: &str) -> Vec<Job> {
    let docs = parse_str("job.yaml", yaml).unwrap();
    check_documents(&docs)
        .into_iter()
        .map(|r| {
            assert!(r.valid, "{:?}", r.errors);
            Job::from_resource(r.resource.as_ref().unwrap()).unwrap()
        })
        .collect()
}
