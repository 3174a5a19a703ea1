//! The openb CSVs of Alibaba's cluster-trace-gpu-v2023.
//!
//! Nodes: `sn,cpu_milli,memory_mib,gpu,model`. Pods:
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time]`
//! (the multigpu files stop after `gpu_milli`). Columns are found by header
//! name, so their order does not matter and extra columns are ignored.

use std::path::Path;

use ringleader_scheduler::nodeorder::{ModelSet, PodShape, MAX_GPUS_PER_NODE, MILLI};

use crate::trace::{Cluster, NodeSpec, PodRecord, Workload};

/// Why a trace file could not be loaded; names file, line, column and value.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    // The I/O error is shown in the message, not chained as a source, so
    // `{:#}` printing does not repeat it.
    #[error("{file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The header lacks a required column.
    #[error("{file}:1: missing column `{column}` in the header")]
    MissingColumn {
        /// The file.
        file: String,
        /// The missing column.
        column: &'static str,
    },
    /// A row is malformed as a whole (CSV syntax, too few fields).
    #[error("{file}:{line}: {reason}")]
    Row {
        /// The file.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// One field holds a bad value.
    #[error("{file}:{line}: column `{column}`: invalid value `{value}`: {reason}")]
    Field {
        /// The file.
        file: String,
        /// 1-based line number.
        line: u64,
        /// The column name.
        column: &'static str,
        /// The offending text.
        value: String,
        /// What is wrong.
        reason: String,
    },
}

/// Reads and parses a node list.
pub fn load_nodes(path: &Path) -> Result<Cluster, LoadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Io { file: file.clone(), error })?;
    parse_nodes(&text, &file)
}

/// Reads and parses a pod list against a cluster's GPU model table.
pub fn load_pods(path: &Path, cluster: &Cluster) -> Result<Workload, LoadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Io { file: file.clone(), error })?;
    parse_pods(&text, &file, cluster)
}

struct Table<'a> {
    file: &'a str,
    headers: Vec<String>,
    reader: csv::Reader<&'a [u8]>,
}

struct Row<'a> {
    file: &'a str,
    line: u64,
    record: csv::StringRecord,
}

impl<'a> Table<'a> {
    fn new(text: &'a str, file: &'a str) -> Result<Table<'a>, LoadError> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(true).from_reader(text.as_bytes());
        let headers = reader
            .headers()
            .map_err(|e| LoadError::Row { file: file.to_string(), line: 1, reason: e.to_string() })?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        Ok(Table { file, headers, reader })
    }

    fn column(&self, name: &'static str) -> Result<usize, LoadError> {
        self.optional(name).ok_or(LoadError::MissingColumn { file: self.file.to_string(), column: name })
    }

    fn optional(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    fn rows(&mut self) -> impl Iterator<Item = Result<Row<'a>, LoadError>> + '_ {
        let file = self.file;
        let width = self.headers.len();
        self.reader.records().map(move |r| {
            let record = r.map_err(|e| LoadError::Row {
                file: file.to_string(),
                line: e.position().map_or(0, |p| p.line()),
                reason: e.to_string(),
            })?;
            let line = record.position().map_or(0, |p| p.line());
            if record.len() < width {
                return Err(LoadError::Row {
                    file: file.to_string(),
                    line,
                    reason: format!("expected {width} fields, found {}", record.len()),
                });
            }
            Ok(Row { file, line, record })
        })
    }
}

impl Row<'_> {
    fn text(&self, idx: usize) -> &str {
        self.record.get(idx).unwrap_or("").trim()
    }

    fn error(&self, column: &'static str, idx: usize, reason: impl Into<String>) -> LoadError {
        LoadError::Field {
            file: self.file.to_string(),
            line: self.line,
            column,
            value: self.text(idx).to_string(),
            reason: reason.into(),
        }
    }

    fn number<T: std::str::FromStr>(&self, column: &'static str, idx: usize) -> Result<T, LoadError> {
        self.text(idx).parse::<T>().map_err(|_| self.error(column, idx, "not a non-negative integer"))
    }

    fn optional_time(&self, column: &'static str, idx: Option<usize>) -> Result<Option<u64>, LoadError> {
        match idx {
            Some(i) if !self.text(i).is_empty() => self.number(column, i).map(Some),
            _ => Ok(None),
        }
    }
}

/// Parses a node list; `file` names the source in errors.
pub fn parse_nodes(text: &str, file: &str) -> Result<Cluster, LoadError> {
    let mut table = Table::new(text, file)?;
    let c_name = table.column("sn")?;
    let c_cpu = table.column("cpu_milli")?;
    let c_mem = table.column("memory_mib")?;
    let c_gpu = table.column("gpu")?;
    let c_model = table.column("model")?;
    let mut cluster = Cluster::default();
    for row in table.rows() {
        let row = row?;
        let gpus: u32 = row.number("gpu", c_gpu)?;
        if gpus as usize > MAX_GPUS_PER_NODE {
            return Err(row.error("gpu", c_gpu, format!("more than {MAX_GPUS_PER_NODE} GPUs on one node")));
        }
        let model_name = row.text(c_model);
        let model = if gpus == 0 || model_name.is_empty() {
            if gpus > 0 {
                return Err(row.error("model", c_model, "a node with GPUs needs a GPU model"));
            }
            None
        } else {
            let id = match cluster.models.iter().position(|m| m == model_name) {
                Some(i) => i,
                None => {
                    cluster.models.push(model_name.to_string());
                    cluster.models.len() - 1
                }
            };
            if id >= 64 {
                return Err(row.error("model", c_model, "more than 64 distinct GPU models"));
            }
            Some(id as u16)
        };
        cluster.nodes.push(NodeSpec {
            name: row.text(c_name).to_string(),
            cpu_milli: row.number("cpu_milli", c_cpu)?,
            mem_mib: row.number("memory_mib", c_mem)?,
            gpus,
            model,
        });
    }
    Ok(cluster)
}

/// Parses a pod list; `gpu_spec` model names are resolved against `cluster`
/// (a model no node carries simply matches no node).
pub fn parse_pods(text: &str, file: &str, cluster: &Cluster) -> Result<Workload, LoadError> {
    let mut table = Table::new(text, file)?;
    let c_name = table.column("name")?;
    let c_cpu = table.column("cpu_milli")?;
    let c_mem = table.column("memory_mib")?;
    let c_num = table.column("num_gpu")?;
    let c_milli = table.column("gpu_milli")?;
    let c_spec = table.optional("gpu_spec");
    let c_create = table.optional("creation_time");
    let c_delete = table.optional("deletion_time");
    let mut pods = Vec::new();
    for row in table.rows() {
        let row = row?;
        let gpu_count: u32 = row.number("num_gpu", c_num)?;
        let mut gpu_milli: u32 = row.number("gpu_milli", c_milli)?;
        if gpu_milli > MILLI {
            return Err(row.error("gpu_milli", c_milli, "more than one GPU (1000) per GPU"));
        }
        if gpu_count > 1 && gpu_milli < MILLI {
            return Err(row.error("gpu_milli", c_milli, "a multi-GPU pod must take whole GPUs (1000)"));
        }
        if gpu_count == 0 {
            gpu_milli = 0;
        } else if gpu_milli == 0 {
            return Err(row.error("gpu_milli", c_milli, "a GPU pod needs a GPU share above 0"));
        }
        let spec = c_spec.map(|i| row.text(i)).unwrap_or("").to_string();
        let models = if spec.is_empty() {
            ModelSet::ANY
        } else {
            ModelSet::only(spec.split('|').filter(|s| !s.is_empty()).filter_map(|m| cluster.model_id(m)))
        };
        let creation = row.optional_time("creation_time", c_create)?;
        let deletion = row.optional_time("deletion_time", c_delete)?;
        if let (Some(c), Some(d), Some(i)) = (creation, deletion, c_delete) {
            if d < c {
                return Err(row.error("deletion_time", i, format!("before creation_time {c}")));
            }
        }
        pods.push(PodRecord {
            name: row.text(c_name).to_string(),
            shape: PodShape {
                cpu_milli: row.number("cpu_milli", c_cpu)?,
                mem_mib: row.number("memory_mib", c_mem)?,
                gpu_count,
                gpu_milli,
                models,
            },
            spec,
            creation,
            deletion,
        });
    }
    Ok(Workload { pods })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "sn,cpu_milli,memory_mib,gpu,model\n\
        n0,64000,262144,2,P100\n\
        n1,96000,393216,8,G2\n\
        n2,32000,262144,0,\n";

    fn cluster() -> Cluster {
        match parse_nodes(NODES, "nodes.csv") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn parses_nodes_and_models() {
        let c = cluster();
        assert_eq!(c.models, vec!["P100".to_string(), "G2".to_string()]);
        assert_eq!(c.nodes.len(), 3);
        assert_eq!(c.nodes[1].model, Some(1));
        assert_eq!(c.nodes[2].model, None);
        assert_eq!(c.gpu_capacity_milli(), 10_000);
    }

    #[test]
    fn parses_full_and_short_pod_rows() {
        let c = cluster();
        let full = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
            p0,6000,12288,1,460,,LS,Running,10,20,10\n\
            p1,8000,30517,0,0,,BE,Running,5,9,\n\
            p2,4000,1024,1,1000,G2|V100M32,LS,Pending,3,4,\n";
        let w = parse_pods(full, "pods.csv", &c).unwrap_or_default();
        assert_eq!(w.pods.len(), 3);
        assert_eq!(w.pods[0].shape.gpu_milli, 460);
        assert_eq!((w.pods[0].creation, w.pods[0].deletion), (Some(10), Some(20)));
        assert!(w.pods[2].shape.models.allows(Some(1)));
        assert!(!w.pods[2].shape.models.allows(Some(0)));
        let short = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,12000,16384,8,1000\n";
        let w = parse_pods(short, "multi.csv", &c).unwrap_or_default();
        assert_eq!(w.pods[0].shape.total_gpu_milli(), 8000);
        assert_eq!(w.pods[0].creation, None);
    }

    #[test]
    fn malformed_rows_name_file_line_column_and_value() {
        let c = cluster();
        let bad = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,500\np1,1,lots,1,500\n";
        let err = parse_pods(bad, "pods.csv", &c).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("pods.csv:3: column `memory_mib`: invalid value `lots`: not a non-negative integer")
        );
        let short = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1\n";
        let err = parse_pods(short, "pods.csv", &c).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("pods.csv:2: expected 5 fields, found 3"));
        let missing = "name,cpu_milli,num_gpu,gpu_milli\n";
        let err = parse_pods(missing, "pods.csv", &c).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("pods.csv:1: missing column `memory_mib` in the header"));
        let share = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,2,500\n";
        let err = parse_pods(share, "pods.csv", &c).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("pods.csv:2: column `gpu_milli`: invalid value `500`: a multi-GPU pod must take whole GPUs (1000)")
        );
        let nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,-5,1,0,\n";
        let err = parse_nodes(nodes, "nodes.csv").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("nodes.csv:2: column `cpu_milli`: invalid value `-5`: not a non-negative integer")
        );
    }
}
