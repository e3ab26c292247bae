//! The layering test: every `crate::x::…` path in `src/lib` (in `use` lines
//! and inline, test code included, comments excluded) is an edge from the
//! top-level module of its file to `x`, and every edge must be in the
//! allowed graph written once, in `docs/architecture.md` between the
//! `layering:begin` and `layering:end` markers. Every allowed edge must be
//! used (the document stays exact), and the graph holds no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The documented graph.
struct Allowed {
    graph: Graph,
}

fn parse_allowed(doc: &str) -> Allowed {
    parse_block(doc, "layering")
}

/// The graph between the `<!-- NAME:begin -->` and `<!-- NAME:end -->`
/// markers.
fn parse_block(doc: &str, name: &str) -> Allowed {
    let (_, rest) = doc
        .split_once(&format!("<!-- {name}:begin -->"))
        .unwrap_or_else(|| panic!("docs/architecture.md: {name}:begin marker"));
    let (block, _) = rest
        .split_once(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("docs/architecture.md: {name}:end marker"));
    let mut graph = Graph::new();
    for line in block.lines().map(str::trim) {
        if let Some((from, to)) = line.split_once("->") {
            let deps = graph.entry(from.trim().to_owned()).or_default();
            deps.extend(to.split_whitespace().map(str::to_owned));
        }
    }
    Allowed { graph }
}

/// The items `lib.rs` re-exports at the crate root, and their module.
const ROOT_REEXPORTS: &[(&str, &str)] =
    &[("Code", "error"), ("Error", "error"), ("Result", "error")];

/// One use of `crate::to` in `file` at `line` (1-based).
#[derive(Debug)]
struct Use {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The `crate::x` references of one file's text; `Err` on a grouped
/// `crate::{…}` import (which would hide its modules from this scan).
fn scan(from: &str, file: &str, text: &str) -> Result<Vec<Use>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            // `$crate::` and `agent_crate::`-like identifiers are not paths
            // of this crate's root.
            let before = rest[..i].chars().next_back();
            let tail = &rest[i + "crate::".len()..];
            rest = tail;
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            if tail.starts_with('{') {
                return Err(format!(
                    "{file}:{}: grouped `crate::{{…}}` import: write one path per module",
                    n + 1
                ));
            }
            let mut name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // The crate root re-exports the error type (`crate::Error`).
            if let Some((_, module)) = ROOT_REEXPORTS.iter().find(|(item, _)| *item == name) {
                name = (*module).to_owned();
            } else if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                return Err(format!(
                    "{file}:{}: `crate::{name}` is no module and no known root re-export",
                    n + 1
                ));
            }
            if !name.is_empty() && name != from {
                out.push(Use {
                    from: from.to_owned(),
                    to: name,
                    file: file.to_owned(),
                    line: n + 1,
                });
            }
        }
    }
    Ok(out)
}

/// The edges between the submodules of `parent` in one file of submodule
/// `from`: every `crate::PARENT::x` path, and a `super::…::x` that climbs
/// exactly to `parent` (`depth` levels: 1 for `PARENT/from.rs` and
/// `PARENT/from/mod.rs`, 2 for `PARENT/from/y.rs`, …) and names a
/// submodule in `siblings`.
fn scan_within(
    parent: &str,
    siblings: &BTreeSet<String>,
    from: &str,
    depth: usize,
    file: &str,
    text: &str,
) -> Vec<Use> {
    let rooted = format!("crate::{parent}::");
    let climb = "super::".repeat(depth);
    let mut out = Vec::new();
    let ident = |t: &str| -> String {
        t.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut names = Vec::new();
        for (i, _) in line.match_indices(&rooted) {
            let before = line[..i].chars().next_back();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                names.push(ident(&line[i + rooted.len()..]));
            }
        }
        for (i, _) in line.match_indices(&climb) {
            let before = line[..i].chars().next_back();
            let tail = &line[i + climb.len()..];
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                && !tail.starts_with("super::")
            {
                let name = ident(tail);
                if siblings.contains(&name) {
                    names.push(name);
                }
            }
        }
        for name in names {
            if !name.is_empty() && name != from {
                out.push(Use {
                    from: from.to_owned(),
                    to: name,
                    file: file.to_owned(),
                    line: n + 1,
                });
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src/lib")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The edges of `uses` that `allowed` does not permit, and the allowed
/// edges nobody uses.
fn check(allowed: &Graph, uses: &[Use]) -> (Vec<String>, Vec<String>) {
    let mut forbidden = Vec::new();
    let mut used = BTreeSet::new();
    for u in uses {
        if allowed.get(&u.from).is_some_and(|d| d.contains(&u.to)) {
            used.insert((u.from.clone(), u.to.clone()));
        } else {
            forbidden.push(format!("{}:{}: {} -> {}", u.file, u.line, u.from, u.to));
        }
    }
    let mut stale = Vec::new();
    for (from, deps) in allowed {
        for to in deps {
            if !used.contains(&(from.clone(), to.clone())) {
                stale.push(format!("{from} -> {to}"));
            }
        }
    }
    (forbidden, stale)
}

/// The modules that lie on a cycle of `g` (strongly connected components
/// of more than one module, or a module that names itself).
fn on_cycles(g: &Graph) -> BTreeSet<String> {
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = vec![start];
        while let Some(v) = todo.pop() {
            for w in g.get(v).into_iter().flatten() {
                if seen.insert(w.clone()) {
                    todo.push(w);
                }
            }
        }
        seen
    };
    g.keys()
        .filter(|m| reach(m).contains(*m))
        .cloned()
        .collect()
}

#[test]
fn every_crate_path_follows_the_documented_layering() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let allowed = parse_allowed(&doc);
    let lib = root.join("src/lib");
    let mut files = Vec::new();
    rust_files(&lib, &mut files);
    let mut uses = Vec::new();
    let mut modules = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&lib).expect("under src/lib");
        let first = rel
            .components()
            .next()
            .expect("a component")
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let top = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        // The crate root declares modules; this file holds test strings
        // that look like paths.
        if top == "lib" || top == "layering" {
            continue;
        }
        modules.insert(top.clone());
        let text = std::fs::read_to_string(f).expect("read source");
        let shown = format!("src/lib/{}", rel.display());
        uses.extend(scan(&top, &shown, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    let documented: BTreeSet<String> = allowed.graph.keys().cloned().collect();
    assert_eq!(
        modules, documented,
        "docs/architecture.md must list every top-level module of src/lib (with `name ->` when it depends on none)"
    );
    assert_follows(&allowed.graph, &uses, "import graph");
}

/// The same rules one level down, between the submodules of `workflow`
/// (the `layering:workflow` block of docs/architecture.md).
#[test]
fn every_workflow_path_follows_the_documented_layering() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc =
        std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let allowed = parse_block(&doc, "layering:workflow");
    let base = root.join("src/lib/workflow");
    let mut files = Vec::new();
    rust_files(&base, &mut files);
    let mut subs = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&base).expect("under src/lib/workflow");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts == ["mod.rs"] {
            continue;
        }
        let first = &parts[0];
        let sub = first.strip_suffix(".rs").unwrap_or(first).to_owned();
        // Module depth below `workflow` (`mod.rs` is its directory's module).
        let depth = parts.len() - usize::from(parts.last().is_some_and(|l| l == "mod.rs"));
        subs.entry(sub).or_insert_with(Vec::new).push((
            f.clone(),
            depth,
            format!("src/lib/workflow/{}", rel.display()),
        ));
    }
    let names: BTreeSet<String> = subs.keys().cloned().collect();
    let documented: BTreeSet<String> = allowed.graph.keys().cloned().collect();
    assert_eq!(
        names, documented,
        "docs/architecture.md (layering:workflow) must list every submodule of workflow"
    );
    let mut uses = Vec::new();
    for (sub, fs) in &subs {
        for (f, depth, shown) in fs {
            let text = std::fs::read_to_string(f).expect("read source");
            uses.extend(scan_within("workflow", &names, sub, *depth, shown, &text));
        }
    }
    assert_follows(&allowed.graph, &uses, "workflow graph");
}

#[test]
fn the_submodule_checker_sees_rooted_and_climbing_paths() {
    let sibs: BTreeSet<String> = ["journal", "authority", "service"]
        .map(str::to_owned)
        .into();
    let src = "use crate::workflow::service::ops;\nuse super::authority::x;\n\
               // crate::workflow::service in a comment\nuse super::super::journal::y;\n\
               use super::local::z;\nuse crate::workflow::journal::SPEC;\n";
    let uses = scan_within("workflow", &sibs, "journal", 1, "j.rs", src);
    let got: Vec<(&str, usize)> = uses.iter().map(|u| (u.to.as_str(), u.line)).collect();
    // Line 2 climbs one level (to `workflow`) from `journal.rs`; line 4
    // climbs two, past `workflow`, and is not a sibling path; line 6
    // names the file's own submodule.
    assert_eq!(got, [("service", 1), ("authority", 2)]);
    let uses = scan_within(
        "workflow",
        &sibs,
        "authority",
        2,
        "a/x.rs",
        "use super::super::journal;",
    );
    assert_eq!(uses.len(), 1);
    let allowed = parse_block(
        "<!-- layering:workflow:begin -->\njournal ->\nauthority -> journal\n<!-- layering:workflow:end -->",
        "layering:workflow",
    );
    let (forbidden, stale) = check(&allowed.graph, &uses);
    assert!(forbidden.is_empty() && stale.is_empty());
    let up = scan_within(
        "workflow",
        &sibs,
        "journal",
        1,
        "j.rs",
        "crate::workflow::authority::f();",
    );
    let (forbidden, _) = check(&allowed.graph, &up);
    assert_eq!(forbidden, ["j.rs:1: journal -> authority"]);
}

#[test]
fn the_checker_refuses_an_upward_edge_a_stale_edge_and_a_grouped_import() {
    let allowed = parse_allowed(
        "<!-- layering:begin -->\nerror ->\nstore -> error\nhttp -> store error\n<!-- layering:end -->",
    );
    let src = "use crate::error::Result;\nfn f() { crate::http::serve(); }\n// crate::http in a comment\n";
    let uses = scan("store", "src/lib/store/x.rs", src).expect("scan");
    let (forbidden, stale) = check(&allowed.graph, &uses);
    assert_eq!(forbidden, ["src/lib/store/x.rs:2: store -> http"]);
    assert_eq!(stale, ["http -> error", "http -> store"]);
    assert!(scan("store", "x.rs", "use crate::{error, http};").is_err());
    // `$crate::` and identifiers ending in `crate` are not root paths.
    let uses = scan("store", "x.rs", "$crate::http::x; my_crate::http::y;").expect("scan");
    assert!(uses.is_empty(), "{uses:?}");
    // A root re-export counts as its module.
    let uses = scan(
        "http",
        "x.rs",
        "fn f() -> crate::Result<()> { Err(crate::Error::x()) }",
    )
    .expect("scan");
    assert_eq!(
        uses.iter().map(|u| u.to.as_str()).collect::<Vec<_>>(),
        ["error", "error"]
    );
    assert!(scan("http", "x.rs", "crate::Unknown::x()").is_err());
}

#[test]
fn the_checker_finds_cycles() {
    let allowed = parse_allowed(
        "<!-- layering:begin -->\na -> b\nb -> c\nc -> a\nd -> a\ne -> e\n<!-- layering:end -->",
    );
    let want: BTreeSet<String> = ["a", "b", "c", "e"].map(str::to_owned).into();
    assert_eq!(on_cycles(&allowed.graph), want);
    let acyclic =
        parse_allowed("<!-- layering:begin -->\na -> b\nb -> c\nd -> a\n<!-- layering:end -->");
    assert!(on_cycles(&acyclic.graph).is_empty());
}

/// Journal tables: their SQL lives in `workflow/journal.rs` alone.
const JOURNAL_TABLES: [&str; 4] = ["tasks", "attempts", "assertions", "idempotency"];

/// The places in `text` where an SQL keyword names a journal table.
fn journal_sql(text: &str) -> Vec<usize> {
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if ["FROM", "UPDATE", "INTO", "JOIN", "TABLE"].contains(&pair[0])
                && JOURNAL_TABLES.contains(&pair[1])
            {
                hits.push(n + 1);
            }
        }
    }
    hits
}

#[test]
fn journal_sql_lives_in_the_journal_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).expect("under src/lib");
        if rel == Path::new("workflow/journal.rs") || rel == Path::new("layering.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        for line in journal_sql(&text) {
            bad.push(format!("{}:{line}", rel.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "journal SQL outside workflow/journal.rs: {bad:?}"
    );
    assert_eq!(
        journal_sql("x.execute(\"UPDATE attempts SET state = 'x'\")\n// ok: attempts\n"),
        vec![1]
    );
    assert_eq!(
        journal_sql("SELECT 1 FROM  tasks t JOIN attempts a"),
        vec![1, 1]
    );
}

#[test]
fn sessions_open_in_the_workflow_service_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let opens = ["Session::open(", "Session::with_lock("];
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).expect("under src/lib");
        // The data half's units of work (its own databases) open theirs.
        if rel.starts_with("workflow/service")
            || rel.starts_with("store")
            || rel.starts_with("data")
            || rel.starts_with("sync")
            || rel == Path::new("layering.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("read source");
        for (n, line) in text.lines().enumerate() {
            if opens.iter().any(|o| line.contains(o)) {
                bad.push(format!("{}:{}", rel.display(), n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a Session opened outside workflow::service: {bad:?}"
    );
}

/// Fails on a forbidden edge, an allowed edge nothing uses, or a cycle in
/// the allowed `graph` (named `what` in the messages).
#[cfg(test)]
fn assert_follows(graph: &Graph, uses: &[Use], what: &str) {
    let (forbidden, stale) = check(graph, uses);
    assert!(
        forbidden.is_empty(),
        "edges the {what} in docs/architecture.md forbids:\n{}",
        forbidden.join("\n")
    );
    assert!(
        stale.is_empty(),
        "the {what} in docs/architecture.md allows edges nothing uses (remove them):\n{}",
        stale.join("\n")
    );
    let cyclic = on_cycles(graph);
    assert!(
        cyclic.is_empty(),
        "the {what} in docs/architecture.md has a cycle through {cyclic:?}"
    );
}
