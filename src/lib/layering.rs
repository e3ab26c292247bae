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
    let (_, rest) = doc
        .split_once("<!-- layering:begin -->")
        .expect("docs/architecture.md: layering:begin marker");
    let (block, _) = rest
        .split_once("<!-- layering:end -->")
        .expect("docs/architecture.md: layering:end marker");
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
    let (forbidden, stale) = check(&allowed.graph, &uses);
    assert!(
        forbidden.is_empty(),
        "edges the layering in docs/architecture.md forbids:\n{}",
        forbidden.join("\n")
    );
    assert!(
        stale.is_empty(),
        "docs/architecture.md allows edges nothing uses (remove them):\n{}",
        stale.join("\n")
    );
    let cyclic = on_cycles(&allowed.graph);
    assert!(
        cyclic.is_empty(),
        "the import graph in docs/architecture.md has a cycle through {cyclic:?}"
    );
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
