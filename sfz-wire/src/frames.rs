//! The native frames of a worker that died, as its fault handler writes them to stderr: one
//! line per return address, innermost first, `sfz-frame 0x<offset> <module path>`, the offset
//! counted from the address the module was loaded at. The supervisor takes them out of the
//! stderr it keeps and symbolizes them (`worker::frames`).

/// What starts a frame line.
pub const LINE_PREFIX: &str = "sfz-frame";

/// The line the handler writes before its frames when the worker was not inside a call of an
/// operator (it was building inputs, comparing, or freeing what a call returned): a damaged heap
/// noticed there was damaged by an earlier call, and no frame of the dying thread is its site.
pub const BETWEEN_CALLS: &str = "sfz-frames between calls";

/// Return addresses the handler writes at most.
pub const MAX_FRAMES: usize = 64;

/// A frame line's offset and module path; None for any other line.
pub fn parse(line: &str) -> Option<(u64, &str)> {
    let rest = line.trim_end().strip_prefix(LINE_PREFIX)?.strip_prefix(" 0x")?;
    let (offset, module) = rest.split_once(' ')?;
    Some((u64::from_str_radix(offset, 16).ok()?, module))
}

#[cfg(test)]
mod tests {
    #[test]
    fn frame_lines_are_read_and_others_are_not() {
        assert_eq!(super::parse("sfz-frame 0x1a2b /lib/libtorch_cpu.so\n"), Some((0x1a2b, "/lib/libtorch_cpu.so")));
        assert_eq!(super::parse("sfz-frame 0xzz /lib/x.so"), None);
        assert_eq!(super::parse("free(): invalid pointer"), None);
    }
}
