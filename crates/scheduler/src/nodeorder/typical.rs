//! The "typical pods" fragmentation is measured against: the most frequent pod
//! shapes of the target workload, weighted by frequency.

use std::collections::HashMap;

use super::model::{ModelSet, PodShape};

/// One typical shape and its weight (weights of a [`TypicalPods`] sum to 1).
#[derive(Clone, Debug, PartialEq)]
pub struct TypicalPod {
    /// CPU request in millicores.
    pub cpu_milli: u32,
    /// Number of GPUs.
    pub gpu_count: u32,
    /// Share of each GPU in milli-GPU.
    pub gpu_milli: u32,
    /// GPU models the shape accepts.
    pub models: ModelSet,
    /// The model constraint as written in the trace (orders equal-count shapes).
    pub spec: String,
    /// Pods of this shape in the workload.
    pub count: u64,
    /// Normalised frequency among the typical shapes.
    pub freq: f64,
}

/// The typical pod shapes of a workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypicalPods {
    pods: Vec<TypicalPod>,
}

impl TypicalPods {
    /// Share of the workload the typical shapes must cover in the paper's runs.
    pub const DEFAULT_POPULARITY: f64 = 0.95;

    /// Derives the typical shapes from a workload (CPU-only pods included).
    ///
    /// Shapes are keyed by CPU, GPU count, GPU share and model constraint (not
    /// memory, which fragmentation ignores), sorted by count with ties broken
    /// towards the larger shape, and the shortest prefix whose count reaches
    /// `popularity` of all pods is kept and renormalised.
    pub fn derive<'a>(pods: impl IntoIterator<Item = (&'a PodShape, &'a str)>, popularity: f64) -> TypicalPods {
        let mut counts: HashMap<(u32, u32, u32, &'a str), (u64, ModelSet)> = HashMap::new();
        let mut total = 0u64;
        for (shape, spec) in pods {
            let entry =
                counts.entry((shape.cpu_milli, shape.gpu_milli, shape.gpu_count, spec)).or_insert((0, shape.models));
            entry.0 += 1;
            total += 1;
        }
        let mut list: Vec<TypicalPod> = counts
            .into_iter()
            .map(|((cpu_milli, gpu_milli, gpu_count, spec), (count, models))| TypicalPod {
                cpu_milli,
                gpu_count,
                gpu_milli,
                models,
                spec: spec.to_string(),
                count,
                freq: 0.0,
            })
            .collect();
        list.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(b.cpu_milli.cmp(&a.cpu_milli))
                .then(b.gpu_milli.cmp(&a.gpu_milli))
                .then(b.gpu_count.cmp(&a.gpu_count))
                .then(b.spec.cmp(&a.spec))
        });
        let needed = popularity * total as f64;
        let mut covered = 0u64;
        let mut keep = 0;
        while keep < list.len() && (covered as f64) < needed {
            covered += list[keep].count;
            keep += 1;
        }
        list.truncate(keep);
        for p in &mut list {
            p.freq = p.count as f64 / covered as f64;
        }
        TypicalPods { pods: list }
    }

    /// Typical shapes from explicit `(shape, weight)` pairs (weights renormalised).
    pub fn from_weights(pods: impl IntoIterator<Item = (PodShape, f64)>) -> TypicalPods {
        let mut list: Vec<TypicalPod> = pods
            .into_iter()
            .map(|(s, w)| TypicalPod {
                cpu_milli: s.cpu_milli,
                gpu_count: s.gpu_count,
                gpu_milli: s.gpu_milli,
                models: s.models,
                spec: String::new(),
                count: 0,
                freq: w,
            })
            .collect();
        let sum: f64 = list.iter().map(|p| p.freq).sum();
        if sum > 0.0 {
            for p in &mut list {
                p.freq /= sum;
            }
        }
        TypicalPods { pods: list }
    }

    /// The shapes, most frequent first.
    pub fn pods(&self) -> &[TypicalPod] {
        &self.pods
    }

    /// Number of typical shapes.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// True when there are no typical shapes.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(cpu: u32, count: u32, milli: u32) -> PodShape {
        PodShape { cpu_milli: cpu, mem_mib: 7, gpu_count: count, gpu_milli: milli, models: ModelSet::ANY }
    }

    #[test]
    fn keeps_the_shortest_prefix_covering_the_threshold() {
        // 10 pods: A x5, B x3, C x1, D x1 -> 95% needs 9.5 pods -> A, B and one of C/D.
        let a = shape(4000, 1, 1000);
        let b = shape(2000, 1, 500);
        let c = shape(1000, 0, 0);
        let d = shape(8000, 8, 1000);
        let mut pods = vec![];
        for _ in 0..5 {
            pods.push((&a, ""));
        }
        for _ in 0..3 {
            pods.push((&b, ""));
        }
        pods.push((&c, ""));
        pods.push((&d, ""));
        let t = TypicalPods::derive(pods.clone(), 0.95);
        assert_eq!(t.len(), 4, "9 pods < 9.5 so the fourth shape is needed too");
        let t = TypicalPods::derive(pods.clone(), 0.9);
        // 0.9 x 10 = 9 pods: A, B and then the larger of the 1-count shapes (D, 8000 mCPU).
        assert_eq!(t.len(), 3);
        assert_eq!(t.pods()[2].cpu_milli, 8000);
        assert!((t.pods()[0].freq - 5.0 / 9.0).abs() < 1e-12);
        assert!((t.pods().iter().map(|p| p.freq).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn memory_does_not_split_shapes() {
        let a = shape(4000, 1, 1000);
        let a2 = PodShape { mem_mib: 99, ..a.clone() };
        let t = TypicalPods::derive([(&a, ""), (&a2, "")], 0.95);
        assert_eq!(t.len(), 1);
        assert_eq!(t.pods()[0].count, 2);
    }
}
