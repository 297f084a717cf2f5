//! `sfz init`: spec skeletons from libtorch's operator schemas.
use std::path::PathBuf;
use std::process::ExitCode;

use super::Color;
use crate::diag::{self, codes, Diagnostic, RenderConfig, SourceMap};
use crate::rules::skeleton::{self, InitError};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Operators: `torch.sum`, `torch.linalg.inv`, `torch.Tensor.add_`, `torch.ops.aten.add.out`,
    /// `aten::sum.dim_IntList`, or bare `sum`.
    pub apis: Vec<String>,
    /// Every public ATen operator.
    #[arg(long)]
    pub all: bool,
    /// A file naming operators, one per line (`#` starts a comment).
    #[arg(long)]
    pub list: Option<PathBuf>,
    /// Append to this spec file (APIs it already defines are left alone) instead of printing.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// The `sfz-worker` binary that reads libtorch's schemas (default: next to `sfz`).
    #[arg(long)]
    pub worker: Option<PathBuf>,
}

/// The names a command line asks for: positional, from `--list`, or every public operator.
pub(super) fn requested(apis: &[String], list: Option<&PathBuf>, all: bool, catalog: &crate::ops::catalog::Catalog) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = apis.to_vec();
    if let Some(path) = list {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read the list `{}`: {e}", path.display()))?;
        names.extend(text.lines().map(|l| l.split('#').next().unwrap_or("").trim().to_string()).filter(|l| !l.is_empty()));
    }
    if all {
        names.extend(skeleton::public_ops(catalog));
    }
    if names.is_empty() {
        anyhow::bail!("name at least one operator (e.g. `sfz init torch.sum`), or pass --list FILE or --all");
    }
    Ok(names)
}

/// E0019 for a name that is no operator.
pub(super) fn unknown_operator(name: &str, suggestions: &[String]) -> Diagnostic {
    let d = Diagnostic::new(codes::E0019, format!("unknown operator `{name}`"));
    if suggestions.is_empty() {
        d.with_help("name a torch API (`torch.sum`) or an ATen operator (`aten::sum.dim_IntList`)")
    } else {
        d.with_help(format!("did you mean {}?", suggestions.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")))
    }
}

pub fn run(args: Args, color: Color) -> anyhow::Result<ExitCode> {
    let worker = args.worker.clone().unwrap_or_else(crate::worker::default_worker_exe);
    let catalog = super::check::catalog(&worker).map_err(|e| anyhow::anyhow!("cannot read libtorch's operator schemas: {e}"))?;
    let names = requested(&args.apis, args.list.as_ref(), args.all, &catalog)?;
    let render = RenderConfig { color: color.stderr() };
    let existing = match &args.out {
        Some(p) if p.exists() => std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", p.display()))?,
        _ => String::new(),
    };
    let defined: Vec<String> = if existing.is_empty() {
        Vec::new()
    } else {
        let (module, _) = crate::syntax::parse(diag::FileId(0), &existing);
        module.items.iter().filter_map(|i| if let crate::ast::ItemKind::Api(a) = &i.kind { Some(a.path.name.clone()) } else { None }).collect()
    };
    let mut made: Vec<String> = Vec::new();
    let mut defined = defined;
    let (mut unknown, mut unsupported, mut wired, mut cuda_only) = (0, 0, 0, 0);
    for name in &names {
        match skeleton::skeleton(name, &catalog) {
            Ok(s) => {
                if defined.contains(&s.api) {
                    continue;
                }
                cuda_only += usize::from(!s.cpu);
                let (items, was_wired) = skeleton::items_for(s, &catalog, &mut defined);
                wired += usize::from(was_wired);
                made.extend(items);
            }
            Err(InitError::Unknown { suggestions, .. }) => {
                unknown += 1;
                eprint!("{}", diag::render(&SourceMap::default(), &unknown_operator(name, &suggestions), render));
            }
            Err(e @ InitError::Unsupported { .. }) => {
                unsupported += 1;
                // Few are left (a `Stream`, a `Layout` without default): each is named, with why.
                eprintln!("warning: {e}");
            }
        }
    }
    let body = made.join("\n");
    match &args.out {
        None => print!("{body}"),
        Some(path) => {
            let mut text = existing.clone();
            if !text.is_empty() && !body.is_empty() {
                text.push('\n');
            }
            text.push_str(&body);
            let text = crate::fmt::format_text(&text).unwrap_or(text);
            std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", path.display()))?;
        }
    }
    eprintln!(
        "sfz init: {} skeleton{}{}{}{}{}",
        made.len(),
        if made.len() == 1 { "" } else { "s" },
        if cuda_only > 0 { format!(", {cuda_only} without a CPU kernel (for CUDA, sparse or nested tensors only)") } else { String::new() },
        if wired > 0 { format!(", {wired} backward operator(s) fed by their forward") } else { String::new() },
        if unsupported > 0 { format!(", {unsupported} operator(s) sfz cannot generate inputs for") } else { String::new() },
        if unknown > 0 { format!(", {unknown} unknown name(s)") } else { String::new() }
    );
    Ok(if unknown > 0 || (made.is_empty() && unsupported > 0) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
