//! The messages between the supervisor and a worker, framed as a little-endian u32 length
//! followed by a postcard body. Requests go down the worker's stdin, responses come up its
//! stdout; stderr is kept for crash reports.
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::binding::OpBinding;
use crate::case::Case;
use crate::outcome::Outcome;
use crate::program::hunt::{HuntRequest, HuntResult};
use crate::variant::{Check, CheckReport};

/// In front of a catalog line (`Response::Catalog`) whose overload has no kernel for the CPU,
/// composite ones counted (`aten::addmm.dtype`, `aten::_cudnn_rnn`): a CPU campaign cannot run it.
pub const NO_CPU: &str = "!no-cpu ";

/// `sfz-worker` next to the running executable.
pub fn default_worker_exe() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().unwrap_or(Path::new(".")).join("sfz-worker")
}

/// Messages larger than this are refused: a corrupt length must not allocate gigabytes.
pub const MAX_FRAME: u32 = 64 << 20;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Request {
    /// Resolve these ops to dispatcher handles; cases name them by index.
    Load { ops: Vec<OpBinding> },
    /// Run one case; the answer carries the same id.
    Run { id: u64, case: Case },
    /// List every operator schema the dispatcher knows.
    Catalog,
    /// Run one hunt episode on a program (`wire::program::hunt`); the answer carries the same id.
    Hunt { id: u64, request: Box<HuntRequest> },
    /// Differential checks per loaded op (parallel to the last `Load`); cases of an op with
    /// checks are answered with `Checked` instead of `Done`. Replaces earlier checks. With a
    /// `share`, only as many cases are checked as keep the time in checks within that share of
    /// the rest (the others are answered with `Done`).
    Checks { checks: Vec<Vec<Check>>, share: Option<f64> },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Response {
    /// Sent once at start-up, before any request is read.
    Ready {
        torch_version: String,
        pid: u32,
    },
    /// Per op of the `Load` request: None when resolved, else why not.
    Loaded {
        errors: Vec<Option<String>>,
    },
    Done {
        id: u64,
        outcome: Outcome,
    },
    Catalog {
        schemas: Vec<String>,
    },
    Hunted {
        id: u64,
        result: Box<HuntResult>,
    },
    /// Per op of the `Checks` request: None when every check can run, else why not.
    ChecksLoaded {
        errors: Vec<Option<String>>,
    },
    /// A case of an op with checks: its outcome and one report per check, in order.
    Checked {
        id: u64,
        outcome: Outcome,
        checks: Vec<CheckReport>,
    },
}

pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> io::Result<()> {
    let body = postcard::to_stdvec(msg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    w.write_all(&(body.len() as u32).to_le_bytes())?;
    w.write_all(&body)
}

/// Reads one frame; `Ok(None)` on a clean end of stream.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes")));
    }
    buf.resize(len as usize, 0);
    r.read_exact(buf)?;
    postcard::from_bytes(buf).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
