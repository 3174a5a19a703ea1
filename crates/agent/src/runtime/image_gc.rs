//! Image garbage collection, as kubelet's: when the image filesystem is
//! fuller than the high threshold, images no container uses are removed,
//! least recently used first, until it is below the low threshold. Only
//! images this agent pulled for its pods are candidates: a runtime may be
//! shared (several agents on one host, or people's own `nerdctl` images),
//! and what others put there is theirs. Images the runtime pins (the
//! sandboxes' pause image) stay.

use ringleader_cri::{v1, Cri};
use std::collections::{HashMap, HashSet};

/// An image that may go.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub size: u64,
    /// When a container last used it (Unix seconds; 0: never seen in use).
    pub last_used: f64,
}

/// The images to remove: none while `used` is at most `high` percent of
/// `capacity`; else the least recently used until `low` percent is reached
/// (or no candidate is left).
pub fn to_remove(capacity: u64, used: u64, (high, low): (u8, u8), candidates: &[Candidate]) -> Vec<String> {
    if capacity == 0 || u128::from(used) * 100 <= u128::from(capacity) * u128::from(high) {
        return Vec::new();
    }
    let target = (u128::from(capacity) * u128::from(low.min(high)) / 100) as u64;
    let mut need = used.saturating_sub(target);
    let mut order: Vec<&Candidate> = candidates.iter().collect();
    order.sort_by(|a, b| a.last_used.total_cmp(&b.last_used).then(b.size.cmp(&a.size)));
    let mut out = Vec::new();
    for c in order {
        if need == 0 {
            break;
        }
        out.push(c.id.clone());
        need = need.saturating_sub(c.size.max(1));
    }
    out
}

/// Capacity and used bytes of the filesystem holding `path`.
fn usage_of(path: &str) -> Option<(u64, u64)> {
    let c = std::ffi::CString::new(path).ok()?;
    // SAFETY: statvfs fills the struct; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let block = s.f_frsize as u64;
    let capacity = s.f_blocks as u64 * block;
    Some((capacity, capacity.saturating_sub(s.f_bavail as u64 * block)))
}

/// One pass: notes the images in use (into `last_used`), and when the image
/// filesystem is past `high` percent removes candidates among `pulled`.
/// Returns the images removed.
pub async fn pass(
    cri: &mut Cri,
    pulled: &HashSet<String>,
    last_used: &mut HashMap<String, f64>,
    thresholds: (u8, u8),
    now: f64,
) -> Result<Vec<String>, String> {
    let fs = cri.image.image_fs_info(v1::ImageFsInfoRequest {}).await.map_err(|e| e.message().to_string())?;
    let mountpoint = fs
        .into_inner()
        .image_filesystems
        .into_iter()
        .find_map(|f| f.fs_id.map(|id| id.mountpoint))
        .ok_or("the runtime names no image filesystem")?;
    let request = v1::ListContainersRequest { filter: None };
    let containers = cri.runtime.list_containers(request).await.map_err(|e| e.message().to_string())?;
    let in_use: HashSet<String> = containers.into_inner().containers.into_iter().map(|c| c.image_ref).collect();
    for id in &in_use {
        last_used.insert(id.clone(), now);
    }
    let Some((capacity, used)) = usage_of(&mountpoint) else { return Ok(Vec::new()) };
    if u128::from(used) * 100 <= u128::from(capacity) * u128::from(thresholds.0) {
        return Ok(Vec::new());
    }
    let images =
        cri.image.list_images(v1::ListImagesRequest { filter: None }).await.map_err(|e| e.message().to_string())?;
    let candidates: Vec<Candidate> = images
        .into_inner()
        .images
        .into_iter()
        .filter(|i| !i.pinned && !in_use.contains(&i.id) && i.repo_tags.iter().any(|t| pulled.contains(t)))
        .map(|i| Candidate { last_used: last_used.get(&i.id).copied().unwrap_or(0.0), size: i.size, id: i.id })
        .collect();
    let mut removed = Vec::new();
    for id in to_remove(capacity, used, thresholds, &candidates) {
        let spec = v1::ImageSpec { image: id.clone(), ..Default::default() };
        match cri.image.remove_image(v1::RemoveImageRequest { image: Some(spec) }).await {
            Ok(_) => {
                last_used.remove(&id);
                removed.push(id);
            }
            Err(e) => tracing::warn!(image = %id, error = %e.message(), "image garbage collection: removing failed"),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, size: u64, last_used: f64) -> Candidate {
        Candidate { id: id.into(), size, last_used }
    }

    #[test]
    fn least_recently_used_go_first_until_below_the_low_threshold() {
        let images = [c("new", 30, 200.0), c("old", 10, 100.0), c("never", 5, 0.0)];
        assert!(to_remove(1000, 850, (85, 80), &images).is_empty(), "at the high threshold nothing goes");
        // 860 used, 800 wanted: 60 bytes: never (5), old (10), new (30) still short, all go.
        assert_eq!(to_remove(1000, 860, (85, 80), &images), vec!["never", "old", "new"]);
        // 812 used at high 80: 12 bytes: never (5) then old (10).
        assert_eq!(to_remove(1000, 812, (80, 80), &images), vec!["never", "old"]);
        assert!(to_remove(0, 10, (1, 0), &images).is_empty());
    }
}
