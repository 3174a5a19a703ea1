//! Anonymous files (nothing on disk, nothing on a command line other users
//! can read): the pod init's spec handed over its stdin.

use super::isolate;
use std::io::Write;

/// The anonymous file `text` is read from (no size limit, nothing on disk,
/// nothing on a command line other users can read).
pub(crate) fn memfd(text: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::Seek;
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated literal.
    let fd = unsafe { libc::memfd_create(c"pod-spec".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor we own.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(text)?;
    file.rewind()?;
    Ok(file)
}

/// The init's spec in an anonymous file.
pub(crate) fn spec_file(spec: &isolate::Spec) -> std::io::Result<std::fs::File> {
    memfd(&serde_json::to_vec(spec).map_err(std::io::Error::other)?)
}
