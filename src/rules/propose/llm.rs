//! Candidate rules from a language model behind an OpenAI-compatible chat-completions endpoint
//! (llama.cpp's server, vLLM, Ollama, hosted APIs). The prompt carries the API's signature, its
//! operator schema and torch's documentation of it; the answer must be `.sfz` `rule` items. An
//! answer is parsed and checked against the spec file; while it has diagnostics the model is
//! shown them and asked again (a bounded number of rounds); only rules that check are kept.
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value as Json};

use crate::ast::ItemKind;
use crate::diag::{self, FileId, RenderConfig};
use crate::rules::{sanitize_name, Candidate};
use crate::spec::RuleSource;

/// Where and how to ask.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// Base URL up to the version, e.g. `http://127.0.0.1:8080/v1`; `/chat/completions` is added.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Per request.
    pub timeout: Duration,
}

/// Settings given on the command line; unset ones come from the environment
/// (`SFZ_LLM_ENDPOINT`, `SFZ_LLM_MODEL`, `SFZ_LLM_API_KEY`), then from the config file
/// (`$SFZ_CONFIG_DIR/llm.conf`, else `~/.config/sfz/llm.conf`: `endpoint = ...`, `model = ...`,
/// `api_key = ...` lines).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub timeout: Option<Duration>,
}

impl Settings {
    /// The endpoint to use, or None when none is configured anywhere.
    pub fn resolve(&self) -> Option<Endpoint> {
        let file = config_file();
        let from = |flag: &Option<String>, env: &str, key: &str| {
            flag.clone().or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty())).or_else(|| file.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()))
        };
        let base_url = from(&self.endpoint, "SFZ_LLM_ENDPOINT", "endpoint")?;
        Some(Endpoint {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: from(&self.model, "SFZ_LLM_MODEL", "model").unwrap_or_else(|| "default".into()),
            api_key: from(&self.api_key, "SFZ_LLM_API_KEY", "api_key"),
            timeout: self.timeout.unwrap_or(Duration::from_secs(120)),
        })
    }
}

fn config_file() -> Vec<(String, String)> {
    let dir = std::env::var_os("SFZ_CONFIG_DIR").map(std::path::PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config").join("sfz")));
    let Some(text) = dir.and_then(|d| std::fs::read_to_string(d.join("llm.conf")).ok()) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let l = l.split('#').next()?.trim();
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        })
        .collect()
}

/// Why the model gave no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("cannot connect: {0}")]
    Unreachable(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("rate limited (HTTP 429){}", retry(.0))]
    RateLimited(Option<String>),
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the answer is not a chat completion: {0}")]
    BadResponse(String),
    /// Every round's answer had diagnostics; the last ones are kept.
    #[error("no answer checked after {rounds} round(s); last diagnostics:\n{diagnostics}")]
    NoValidRules { rounds: usize, diagnostics: String },
}

fn retry(after: &Option<String>) -> String {
    after.as_ref().map(|a| format!(", retry after {a} s")).unwrap_or_default()
}

/// One chat message.
#[derive(Clone, Debug)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

/// One chat-completions request; the assistant's text.
pub fn chat(ep: &Endpoint, messages: &[Message]) -> Result<String, LlmError> {
    let agent = ureq::AgentBuilder::new().timeout(ep.timeout).build();
    let body = json!({
        "model": ep.model,
        "temperature": 0.2,
        "messages": messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
    });
    let mut req = agent.post(&format!("{}/chat/completions", ep.base_url)).set("Content-Type", "application/json");
    if let Some(key) = &ep.api_key {
        req = req.set("Authorization", &format!("Bearer {key}"));
    }
    let resp = match req.send_json(body) {
        Ok(r) => r,
        Err(ureq::Error::Status(429, r)) => return Err(LlmError::RateLimited(r.header("retry-after").map(str::to_string))),
        Err(ureq::Error::Status(status, r)) => {
            let body: String = r.into_string().unwrap_or_default().chars().take(300).collect();
            return Err(LlmError::Http { status, body });
        }
        Err(ureq::Error::Transport(t)) => {
            let text = t.to_string();
            let timed_out = text.contains("timed out") || text.contains("Timeout") || text.contains("timeout");
            return Err(if timed_out { LlmError::Timeout(ep.timeout) } else { LlmError::Unreachable(text) });
        }
    };
    let text = resp.into_string().map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::WouldBlock {
            LlmError::Timeout(ep.timeout)
        } else {
            LlmError::BadResponse(e.to_string())
        }
    })?;
    let v: Json = serde_json::from_str(&text).map_err(|e| LlmError::BadResponse(format!("{e}: {}", text.chars().take(200).collect::<String>())))?;
    v["choices"][0]["message"]["content"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| LlmError::BadResponse(format!("no choices[0].message.content in {}", text.chars().take(200).collect::<String>())))
}

const SYSTEM: &str = r#"You write input constraints for sfz, a language that specifies which inputs a PyTorch API accepts. You answer with `rule` items only, in one ```sfz code block, nothing else.

A rule names the API it refines and holds constraints, one per line, each ending with `;`:

```sfz
rule index_same_rank for torch.gather {
    index.ndim == input.ndim;
}
rule dim_valid for torch.gather {
    dim in -max(input.ndim, 1)..max(input.ndim, 1);
}
```

Constraint expressions use the API's parameter names. Tensors have `.dtype`, `.ndim`, `.shape` (a list: `.shape[0]`, `.shape[-1]`), `.numel` and `.values` (element range: `x.values in 0.0..1.0`). Lists have `len(xs)` and elements `xs[i]`; `xs[*] >= 0` constrains every element. Operators: `== != < <= > >=`, `in lo..hi` (hi excluded), `in lo..=hi`, `in [a, b]`, `not in`, `and or not`, `=>` (implies), `+ - * / %` (`/` is floor division on ints), `if c then a else b`, `forall i in 0..n: ...`, `exists i in 0..n: ...`. Functions: `len min max abs prod broadcastable(a, b)`. dtypes: bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex64 complex128, as lists: `x.dtype in [float32, float64]`. An optional parameter that is None satisfies any constraint that mentions it (test it with `p == None`).

Write the constraints libtorch checks: those whose violation makes the call fail with an argument error (wrong dtype, rank, shape mismatch, out-of-range dimension or index, invalid value). One idea per rule; names are lower_snake_case."#;

/// The first request of a conversation about one API. `rejections` is libtorch's word on
/// conforming inputs it rejected (`rejections::prompt_text`), empty when there is none.
pub fn prompt(api_text: &str, schema: Option<&str>, docs: Option<&str>, rejections: &str, api: &str) -> Vec<Message> {
    let mut user = format!("The API, in sfz:\n\n```sfz\n{}\n```\n", api_text.trim());
    if let Some(s) = schema {
        user.push_str(&format!("\nIts ATen operator schema: `{s}`\n"));
    }
    if let Some(d) = docs {
        user.push_str(&format!("\nPyTorch's documentation of it:\n\n{d}\n"));
    }
    user.push_str(rejections);
    user.push_str(&format!("\nPropose rules for `{api}`: the constraints valid inputs satisfy."));
    vec![Message { role: "system", content: SYSTEM.into() }, Message { role: "user", content: user }]
}

/// The `.sfz` in an answer: the code blocks' contents, or the whole answer when it has none.
pub fn extract_code(answer: &str) -> String {
    let mut blocks = Vec::new();
    let mut rest = answer;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let Some(end) = after[body_start..].find("```") else {
            blocks.push(&after[body_start..]);
            break;
        };
        blocks.push(&after[body_start..body_start + end]);
        rest = &after[body_start + end + 3..];
    }
    if blocks.is_empty() {
        answer.to_string()
    } else {
        blocks.join("\n")
    }
}

/// What checking an answer gave: the rules that check, and the diagnostics of the rest.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    pub candidates: Vec<Candidate>,
    /// Rendered diagnostics (no colour), empty when everything checked.
    pub diagnostics: String,
    /// Items that were not rules for the API (ignored).
    pub ignored: usize,
}

/// Checks an answer's rules in the context of the spec file (`path`, `file_text`) that defines
/// `api`. Rules with errors are dropped and their diagnostics returned.
pub fn check_answer(path: &Path, file_text: &str, api: &str, answer: &str) -> Checked {
    let code = extract_code(answer);
    let mut out = Checked::default();
    let (module, syntax) = crate::syntax::parse(FileId(0), &code);
    let render = |file: &str, text: &str, diags: &[crate::diag::Diagnostic]| {
        let mut map = diag::SourceMap::default();
        map.add(file, text);
        diag::render_all(&map, diags, RenderConfig { color: false })
    };
    let syntax_errors: Vec<_> = syntax.iter().filter(|d| d.is_error()).cloned().collect();
    if !syntax_errors.is_empty() {
        out.diagnostics.push_str(&render("answer.sfz", &code, &syntax_errors));
    }
    // The rule items, with their bodies; anything else is ignored.
    let mut rules: Vec<(String, String)> = Vec::new();
    for item in &module.items {
        match &item.kind {
            ItemKind::Rule(r) if r.target.name == api => {
                let body = &code[r.body.span.range()];
                let inner = body.trim().trim_start_matches('{').trim_end_matches('}').trim().to_string();
                if !inner.is_empty() {
                    rules.push((r.name.name.clone(), inner));
                }
            }
            _ => out.ignored += 1,
        }
    }
    if rules.is_empty() {
        if out.diagnostics.is_empty() {
            out.diagnostics = format!("the answer holds no `rule ... for {api} {{ ... }}` item\n");
        }
        return out;
    }
    // Check them in the file, under fresh names, each in its own item so errors stay apart.
    let mut text = file_text.to_string();
    let mut ranges = Vec::new();
    for (i, (_, body)) in rules.iter().enumerate() {
        text.push('\n');
        let lo = text.len();
        text.push_str(&format!("#[status(candidate)]\nrule sfz_llm_{i} for {api} {{\n    {body}\n}}\n"));
        ranges.push(lo..text.len());
    }
    let checked = crate::check::check_text(path, &text);
    let errors: Vec<_> = checked.diags.iter().filter(|d| d.is_error()).cloned().collect();
    let bad: Vec<usize> = errors.iter().filter_map(|d| d.primary_span()).filter_map(|s| ranges.iter().position(|r| r.contains(&(s.lo as usize)))).collect();
    let ours: Vec<_> = errors.iter().filter(|d| d.primary_span().is_some_and(|s| ranges.iter().any(|r| r.contains(&(s.lo as usize))))).cloned().collect();
    if !ours.is_empty() {
        out.diagnostics.push_str(&diag::render_all(&checked.map, &ours, RenderConfig { color: false }));
    }
    let mut names: Vec<String> = Vec::new();
    for (i, (name, body)) in rules.into_iter().enumerate() {
        if bad.contains(&i) {
            continue;
        }
        let mut name = sanitize_name(&name);
        let base = name.clone();
        let mut n = 2;
        while names.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        names.push(name.clone());
        out.candidates.push(Candidate { name, text: body, source: RuleSource::Llm });
    }
    out
}

/// What a conversation gave.
#[derive(Clone, Debug, Default)]
pub struct Suggestion {
    pub candidates: Vec<Candidate>,
    /// Requests made.
    pub rounds: usize,
    /// Rules dropped because they did not check.
    pub dropped: usize,
}

/// Asks for rules, re-asking with the diagnostics up to `rounds` times in all. Rules that
/// checked in any round are kept (later rounds' rules replace earlier ones of the same name).
#[allow(clippy::too_many_arguments)] // the prompt's parts each come from elsewhere: schema, docs, errors
pub fn suggest(ep: &Endpoint, path: &Path, file_text: &str, api: &str, api_text: &str, schema: Option<&str>, rejections: &str, rounds: usize) -> Result<Suggestion, LlmError> {
    let mut messages = prompt(api_text, schema, crate::ops::docs::lookup(api), rejections, api);
    let mut out = Suggestion::default();
    let mut last = String::new();
    for _ in 0..rounds.max(1) {
        let answer = chat(ep, &messages)?;
        out.rounds += 1;
        let checked = check_answer(path, file_text, api, &answer);
        for c in checked.candidates {
            if !out.candidates.iter().any(|k| k.text == c.text) {
                out.candidates.retain(|k| k.name != c.name);
                out.candidates.push(c);
            }
        }
        if checked.diagnostics.is_empty() {
            return Ok(out);
        }
        out.dropped += 1;
        last = checked.diagnostics.clone();
        messages.push(Message { role: "assistant", content: answer });
        messages.push(Message {
            role: "user",
            content: format!(
                "sfz reported these problems with your answer:\n\n{}\nAnswer again with all your rules for `{api}`, corrected, in one ```sfz block.",
                checked.diagnostics
            ),
        });
    }
    if out.candidates.is_empty() {
        return Err(LlmError::NoValidRules { rounds: out.rounds, diagnostics: last });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "api torch.gather(input: Tensor, dim: int, index: Tensor) -> Tensor {}\n";

    #[test]
    fn code_blocks_are_extracted() {
        assert_eq!(extract_code("Sure!\n```sfz\nrule a for x { y; }\n```\nDone."), "rule a for x { y; }\n");
        assert_eq!(extract_code("rule a for x { y; }"), "rule a for x { y; }");
        assert_eq!(extract_code("```\nrule a\n"), "rule a\n");
    }

    #[test]
    fn only_rules_that_check_are_kept() {
        let answer = "```sfz\nrule same_rank for torch.gather {\n    index.ndim == input.ndim;\n}\nrule bad for torch.gather {\n    idx.ndim == 1;\n}\napi torch.gather(input: Tensor) {}\n```";
        let c = check_answer(Path::new("t.sfz"), FILE, "torch.gather", answer);
        assert_eq!(c.candidates.len(), 1);
        assert_eq!(c.candidates[0].name, "same_rank");
        assert!(c.diagnostics.contains("E0002") && c.diagnostics.contains("idx"), "{}", c.diagnostics);
        assert_eq!(c.ignored, 1);
    }

    #[test]
    fn prose_is_a_diagnostic() {
        let c = check_answer(Path::new("t.sfz"), FILE, "torch.gather", "I think dim must be valid.");
        assert!(c.candidates.is_empty());
        assert!(!c.diagnostics.is_empty());
    }

    #[test]
    fn settings_prefer_flags() {
        let s = Settings { endpoint: Some("http://h:1/v1/".into()), model: Some("m".into()), ..Default::default() };
        let ep = s.resolve().unwrap();
        assert_eq!(ep.base_url, "http://h:1/v1");
        assert_eq!(ep.model, "m");
    }
}
