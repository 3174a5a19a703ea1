//! Protobuf wire primitives. Hand-rolled rather than prost's so that every
//! failure is a value with a reason (prost's DecodeError carries no position)
//! and so nothing here can panic on hostile input.

/// The 4 bytes before every enveloped object (`k8s` and a NUL).
pub(crate) const MAGIC: &[u8] = b"k8s\0";

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

/// Failures below the message level; callers add the message and path.
#[derive(Debug)]
pub(crate) enum WireError {
    Truncated(String),
    Malformed(String),
}

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(WireError::Truncated(format!(
                    "varint starting at byte {start} runs past the end ({} bytes)",
                    self.buf.len()
                )));
            };
            self.pos += 1;
            // The 10th byte may only carry the top bit of a u64.
            if i == 9 && b > 1 {
                return Err(WireError::Malformed(format!("varint starting at byte {start} overflows 64 bits")));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(WireError::Malformed(format!("varint starting at byte {start} is longer than 10 bytes")))
    }

    /// Reads a field key: (field number, wire type).
    pub(crate) fn key(&mut self) -> Result<(u32, u8), WireError> {
        let at = self.pos;
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(WireError::Malformed(format!("invalid field number {number} at byte {at}")));
        }
        Ok((number as u32, (key & 7) as u8))
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(WireError::Truncated(format!(
                "{what} at byte {} needs {n} bytes, {} remain",
                self.pos,
                self.buf.len().saturating_sub(self.pos)
            ))),
        }
    }

    pub(crate) fn len_delimited(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.varint()?;
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        self.take(n, "length-delimited field")
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4, "fixed32")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8, "fixed64")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Skips a field we have no descriptor for (a newer Kubernetes' field).
    pub(crate) fn skip(&mut self, wire_type: u8) -> Result<(), WireError> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            LEN => self.len_delimited().map(drop),
            FIXED32 => self.fixed32().map(drop),
            // Groups (3, 4) are not used by any Kubernetes message.
            other => Err(WireError::Malformed(format!("unsupported wire type {other} at byte {}", self.pos))),
        }
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}
