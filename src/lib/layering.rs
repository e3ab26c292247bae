//! The layering tests. `docs/architecture.md` holds, between markers, what
//! the code of `src/lib` may import: the allowed graph of its top-level
//! modules (`layering`), the same one level down inside `workflow`
//! (`layering:workflow`), the rules no change may break (`layering:never`)
//! and each top-level module's doors (`layering:surface`). These tests read
//! every file of `src/lib` and hold the code to them.
//!
//! The scanner lexes each file (comments, strings and character literals
//! are skipped, but a path in a serde attribute's string counts), expands `use` trees at every level of grouping (`pub use`
//! included), and resolves every path that starts with `crate::`,
//! `super::` (climbing as far as it says, out of inline modules and files)
//! or `self::`, and every path that starts with a child module of its file,
//! to the absolute module path it names. A crate-root re-export
//! (`crate::Error`) counts as the module it comes from. Test code counts.
//!
//! The checks, each its own `#[test]` so one failure hides no other:
//! every path to another top-level module is an allowed edge, every
//! allowed edge is used and the allowed graph has no cycle; no path, no
//! allowed edge and no door breaks a `never` rule; outside a top-level
//! module, code names only its root file's items and its doors; and the
//! files of each top-level module form a DAG.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// A module path below the crate root (`["workflow", "service"]`); the
/// root itself is empty.
type ModPath = Vec<String>;

// ------------------------------------------------------------------ lexing

/// What the scanner keeps of a token.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
    /// The body of a plain string literal, kept for the attributes that
    /// name a path in a string (`#[serde(with = "crate::x")]`).
    Str(String),
}

#[derive(Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens of `text` that can form paths: identifiers, `::`, single
/// punctuation and plain strings. Comments (nested block comments too),
/// raw, byte and C strings, character literals, lifetimes and numbers
/// leave nothing.
fn lex(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_cont = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while let Some(&ch) = c.get(i) {
        let next = c.get(i + 1).copied();
        match ch {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if next == Some('/') => {
                while c.get(i).is_some_and(|&x| x != '\n') {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0usize;
                while let Some(&x) = c.get(i) {
                    if x == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if x == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(x == '\n');
                        i += 1;
                    }
                }
            }
            '"' => {
                let (start, at) = (i + 1, line);
                i = skip_string(&c, start, &mut line);
                let end = i.saturating_sub(1).max(start);
                out.push(Token {
                    tok: Tok::Str(c[start..end].iter().collect()),
                    line: at,
                });
            }
            '\'' => i = skip_quote(&c, i, &mut line),
            ':' if next == Some(':') => {
                out.push(Token {
                    tok: Tok::Sep,
                    line,
                });
                i += 2;
            }
            _ if ch.is_whitespace() => i += 1,
            _ if ch.is_ascii_digit() => {
                while c.get(i).is_some_and(|&x| ident_cont(x)) {
                    i += 1;
                }
            }
            _ if ident_start(ch) => {
                let start = i;
                while c.get(i).is_some_and(|&x| ident_cont(x)) {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                let hashes = c[i..].iter().take_while(|&&x| x == '#').count();
                match (word.as_str(), c.get(i).copied()) {
                    ("r" | "br" | "cr", Some('"' | '#')) if c.get(i + hashes) == Some(&'"') => {
                        i = skip_raw(&c, i + hashes + 1, hashes, &mut line);
                    }
                    ("r", Some('#'))
                        if hashes == 1 && c.get(i + 1).is_some_and(|&x| ident_start(x)) =>
                    {
                        // A raw identifier, `r#type`.
                        let start = i + 1;
                        i = start;
                        while c.get(i).is_some_and(|&x| ident_cont(x)) {
                            i += 1;
                        }
                        out.push(Token {
                            tok: Tok::Ident(c[start..i].iter().collect()),
                            line,
                        });
                    }
                    ("b" | "c", Some('"')) => i = skip_string(&c, i + 1, &mut line),
                    ("b", Some('\'')) => i = skip_quote(&c, i, &mut line),
                    _ => out.push(Token {
                        tok: Tok::Ident(word),
                        line,
                    }),
                }
            }
            _ => {
                out.push(Token {
                    tok: Tok::Punct(ch),
                    line,
                });
                i += 1;
            }
        }
    }
    out
}

/// Past the end of a string whose body starts at `i`.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while let Some(&x) = c.get(i) {
        match x {
            '\\' => {
                *line += usize::from(c.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            '"' => return i + 1,
            _ => {
                *line += usize::from(x == '\n');
                i += 1;
            }
        }
    }
    i
}

/// Past the end of a raw string with `hashes` hashes whose body starts at `i`.
fn skip_raw(c: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while let Some(&x) = c.get(i) {
        if x == '"'
            && c[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        *line += usize::from(x == '\n');
        i += 1;
    }
    i
}

/// Past a character literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`), or
/// past a lifetime or label (`'a`, `'static`) and its name.
fn skip_quote(c: &[char], i: usize, line: &mut usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while c.get(j).is_some_and(|&x| x != '\'' && x != '\n') {
            j += 1;
        }
        return j + 1;
    }
    if c.get(i + 2) == Some(&'\'') {
        *line += usize::from(c.get(i + 1) == Some(&'\n'));
        return i + 3;
    }
    let mut j = i + 1;
    while c.get(j).is_some_and(|&x| x.is_alphanumeric() || x == '_') {
        j += 1;
    }
    j
}

// ---------------------------------------------------------------- scanning

/// One path in a file, as written.
#[derive(Debug, Clone)]
struct PathUse {
    /// The module the path is written in: its file's module and the inline
    /// modules (`mod tests { … }`) around it.
    scope: ModPath,
    /// The segments as written (`["super", "x", "Y"]`); an absolute path
    /// outside this crate starts with `"::"`.
    segs: Vec<String>,
    /// An import (`use`), or a path inline in code.
    import: bool,
    /// `pub use`, `pub(crate) use`, …
    public: bool,
    /// `use x::*`
    glob: bool,
    /// The name an import binds (its last segment, or its `as` name).
    alias: Option<String>,
    /// Inside `#[cfg(test)]` code.
    test: bool,
    line: usize,
}

/// What the scanner keeps of one file.
#[derive(Debug, Default)]
struct FileScan {
    uses: Vec<PathUse>,
    /// Every identifier outside `use` items.
    code_idents: BTreeSet<String>,
    /// The names the file defines (`fn`, `struct`, `mod`, `macro_rules!`, …).
    defines: BTreeSet<String>,
    /// The child modules it declares `#[cfg(test)] mod name;`.
    test_mods: BTreeSet<String>,
    /// Lines of `#[path = …]`, `include!` and `extern crate self`, which
    /// would hide a file or a path from this scan.
    hidden: Vec<(usize, String)>,
}

/// The tokens of `#[cfg(test)]`.
fn cfg_test() -> [Tok; 7] {
    [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".to_owned()),
        Tok::Punct('('),
        Tok::Ident("test".to_owned()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ]
}

/// The serde attribute keys whose string value is a path of code
/// (`#[serde(with = "crate::wire::b64")]`).
const PATH_KEYS: [&str; 10] = [
    "with",
    "serialize_with",
    "deserialize_with",
    "default",
    "skip_serializing_if",
    "getter",
    "remote",
    "from",
    "try_from",
    "into",
];

const ITEM_KEYWORDS: [&str; 9] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod",
];

/// Scans the text of the file of module `module`.
fn scan(module: &[String], text: &str) -> FileScan {
    let toks = lex(text);
    let ident = |k: usize| match toks.get(k).map(|t| &t.tok) {
        Some(Tok::Ident(w)) => Some(w.as_str()),
        _ => None,
    };
    let is = |k: usize, want: &Tok| toks.get(k).is_some_and(|t| &t.tok == want);
    let mut out = FileScan::default();
    // The inline modules open at this point, with the brace depth inside
    // each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut depth = 0usize;
    // An item under `#[cfg(test)]`: the depth of the attribute until the
    // item's `;`, `,` or body opens, then the depth its body closes to.
    let mut test_item: Option<usize> = None;
    let mut test_body: Option<usize> = None;
    let cfg_test = cfg_test();
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        let scope = || {
            let mut s = module.to_vec();
            s.extend(inline.iter().map(|(m, _)| m.clone()));
            s
        };
        let test = test_item.is_some() || test_body.is_some();
        if toks[i..].iter().take(7).map(|t| &t.tok).eq(cfg_test.iter()) {
            test_item = test_item.or(Some(depth));
            i += 7;
            continue;
        }
        match &t.tok {
            Tok::Punct('{') => {
                if test_item.take().is_some() && test_body.is_none() {
                    test_body = Some(depth);
                }
                depth += 1;
                if let Some(m) = pending_mod.take() {
                    inline.push((m, depth));
                }
                i += 1;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                if test_body == Some(depth) {
                    test_body = None;
                }
                i += 1;
            }
            Tok::Punct(';' | ',') => {
                if test_item == Some(depth) {
                    test_item = None;
                }
                i += 1;
            }
            Tok::Str(body) => {
                // A path in an attribute's string; any other string is text.
                let segs: Vec<String> = body.split("::").map(str::to_owned).collect();
                let key = i.checked_sub(2).and_then(ident);
                if is(i.wrapping_sub(1), &Tok::Punct('='))
                    && key.is_some_and(|k| PATH_KEYS.contains(&k))
                    && segs.len() > 1
                    && segs.iter().all(|s| {
                        s.chars()
                            .next()
                            .is_some_and(|c| c.is_alphabetic() || c == '_')
                            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                    })
                {
                    out.uses.push(PathUse {
                        scope: scope(),
                        segs,
                        import: false,
                        public: false,
                        glob: false,
                        alias: None,
                        test,
                        line: t.line,
                    });
                }
                i += 1;
            }
            Tok::Ident(w) if w == "use" => {
                let public = is_pub(&toks, i);
                let scope = scope();
                let mut found = Vec::new();
                i = use_tree(&toks, i + 1, &[], &mut found);
                for (segs, alias, glob, line) in found {
                    out.uses.push(PathUse {
                        scope: scope.clone(),
                        segs,
                        import: true,
                        public,
                        glob,
                        alias,
                        test,
                        line,
                    });
                }
            }
            Tok::Ident(w) => {
                if ITEM_KEYWORDS.contains(&w.as_str())
                    && let Some(name) = ident(i + 1)
                {
                    out.defines.insert(name.to_owned());
                    if w == "mod" && is(i + 2, &Tok::Punct('{')) {
                        pending_mod = Some(name.to_owned());
                    }
                    if w == "mod" && test && is(i + 2, &Tok::Punct(';')) {
                        out.test_mods.insert(name.to_owned());
                    }
                }
                if w == "macro_rules"
                    && is(i + 1, &Tok::Punct('!'))
                    && let Some(name) = ident(i + 2)
                {
                    out.defines.insert(name.to_owned());
                }
                // An inline path: not the tail of another path, nor
                // `$crate::` in a macro, nor a field or method.
                // `$crate::` in a macro of this crate is this crate's root.
                let after_other = i > 0
                    && (is(i - 1, &Tok::Sep)
                        || (is(i - 1, &Tok::Punct('$')) && w != "crate")
                        || is(i - 1, &Tok::Punct('.')));
                // What would hide a file or a path from this scan.
                let hides = match w.as_str() {
                    "path" => i >= 2 && is(i - 1, &Tok::Punct('[')) && is(i + 1, &Tok::Punct('=')),
                    "include" => is(i + 1, &Tok::Punct('!')),
                    "extern" => ident(i + 1) == Some("crate") && ident(i + 2) == Some("self"),
                    _ => false,
                };
                if hides {
                    out.hidden.push((t.line, w.clone()));
                }
                let mut segs = vec![w.clone()];
                let mut j = i + 1;
                while is(j, &Tok::Sep)
                    && let Some(next) = ident(j + 1)
                {
                    segs.push(next.to_owned());
                    j += 2;
                }
                for s in &segs {
                    out.code_idents.insert(s.clone());
                }
                if segs.len() > 1 && !after_other {
                    out.uses.push(PathUse {
                        scope: scope(),
                        segs,
                        import: false,
                        public: false,
                        glob: false,
                        alias: None,
                        test,
                        line: t.line,
                    });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether the `use` at `i` is `pub` or `pub(…)`.
fn is_pub(toks: &[Token], i: usize) -> bool {
    let Some(mut k) = i.checked_sub(1) else {
        return false;
    };
    if toks[k].tok == Tok::Punct(')') {
        while k > 0 && toks[k].tok != Tok::Punct('(') {
            k -= 1;
        }
        let Some(before) = k.checked_sub(1) else {
            return false;
        };
        k = before;
    }
    toks[k].tok == Tok::Ident("pub".to_owned())
}

/// One leaf of a `use` tree: its full path, the name it binds, whether it
/// is a glob, and its line.
type Leaf = (Vec<String>, Option<String>, bool, usize);

/// Parses the `use` tree at `i` under `prefix`, every group expanded at
/// every depth, and returns the index past it.
fn use_tree(toks: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Leaf>) -> usize {
    let mut segs = prefix.to_vec();
    if prefix.is_empty() && toks.get(i).is_some_and(|t| t.tok == Tok::Sep) {
        // `use ::name::…` names another crate.
        segs.push("::".to_owned());
        i += 1;
    }
    loop {
        let Some(t) = toks.get(i) else {
            return i;
        };
        match &t.tok {
            Tok::Ident(w) => {
                segs.push(w.clone());
                i += 1;
                if toks.get(i).is_some_and(|t| t.tok == Tok::Sep) {
                    i += 1;
                    continue;
                }
                // `x::{self}` is `x` itself.
                if w == "self" && segs.len() > 1 {
                    segs.pop();
                }
                let mut alias = segs.last().cloned();
                if toks
                    .get(i)
                    .is_some_and(|t| t.tok == Tok::Ident("as".to_owned()))
                {
                    if let Some(Tok::Ident(a)) = toks.get(i + 1).map(|t| &t.tok) {
                        alias = Some(a.clone());
                    }
                    i += 2;
                }
                out.push((segs, alias, false, t.line));
                return i;
            }
            Tok::Punct('{') => {
                i += 1;
                while let Some(t) = toks.get(i) {
                    match t.tok {
                        Tok::Punct('}') => return i + 1,
                        Tok::Punct(',') => i += 1,
                        _ => {
                            let next = use_tree(toks, i, &segs, out);
                            if next == i {
                                return i;
                            }
                            i = next;
                        }
                    }
                }
                return i;
            }
            Tok::Punct('*') => {
                out.push((segs, None, true, t.line));
                return i + 1;
            }
            _ => return i,
        }
    }
}

// ---------------------------------------------------------------- the crate

/// One file of `src/lib`.
#[derive(Debug)]
struct File {
    /// `src/lib/…`, for messages.
    shown: String,
    scan: FileScan,
    /// The names its file-level `use` items bind, resolved.
    imports: BTreeMap<String, ModPath>,
    /// Its file-level glob imports, resolved.
    globs: Vec<ModPath>,
}

/// Every file of a crate, by the module path it defines.
#[derive(Debug, Default)]
struct Crate {
    files: BTreeMap<ModPath, File>,
}

/// The module path of the file at `rel` (relative to the crate root's
/// directory): `lib.rs` is the root, `a/mod.rs` and `a.rs` are `a`.
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_owned());
    }
    parts
}

impl Crate {
    /// A crate of `(relative file path, text)` pairs.
    fn new(sources: &[(String, String)]) -> Crate {
        let mut krate = Crate::default();
        for (rel, text) in sources {
            let module = module_of(Path::new(rel));
            krate.files.insert(
                module.clone(),
                File {
                    shown: format!("src/lib/{rel}"),
                    scan: scan(&module, text),
                    imports: BTreeMap::new(),
                    globs: Vec::new(),
                },
            );
        }
        // A file under a `#[cfg(test)] mod name;` is test code.
        let test_files: Vec<ModPath> = krate
            .files
            .keys()
            .filter(|m| {
                (1..=m.len()).any(|n| {
                    krate
                        .files
                        .get(&m[..n - 1])
                        .is_some_and(|parent| parent.scan.test_mods.contains(&m[n - 1]))
                })
            })
            .cloned()
            .collect();
        for m in test_files {
            if let Some(f) = krate.files.get_mut(&m) {
                for u in &mut f.scan.uses {
                    u.test = true;
                }
            }
        }
        let mut resolved = Vec::new();
        for (module, f) in &krate.files {
            let mut imports = BTreeMap::new();
            let mut globs = Vec::new();
            for u in f
                .scan
                .uses
                .iter()
                .filter(|u| u.import && &u.scope == module)
            {
                if let Some(abs) = krate.absolute(module, u) {
                    if u.glob {
                        globs.push(abs);
                    } else if let Some(a) = &u.alias {
                        imports.insert(a.clone(), abs);
                    }
                }
            }
            resolved.push((module.clone(), imports, globs));
        }
        for (module, imports, globs) in resolved {
            if let Some(f) = krate.files.get_mut(&module) {
                f.imports = imports;
                f.globs = globs;
            }
        }
        krate
    }

    /// The absolute path `u` (in the file of `module`) names, or `None`
    /// when it names another crate or a local name.
    fn absolute(&self, module: &[String], u: &PathUse) -> Option<ModPath> {
        let segs = &u.segs;
        let first = segs.first()?;
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "super" | "self" => {
                let mut at = u.scope.clone();
                let mut k = 0;
                while segs.get(k).is_some_and(|s| s == "super") {
                    at.pop()?;
                    k += 1;
                }
                if k == 0 {
                    k = 1;
                }
                at.extend(segs[k..].iter().cloned());
                Some(at)
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                self.files.contains_key(&child).then(|| {
                    child.extend(segs[1..].iter().cloned());
                    child
                })
            }
        }
    }

    /// The module of the file that defines what `abs` names, following
    /// `use` items (re-exports and imports) of the files on the way.
    fn defining_file(&self, abs: &[String], hops: usize) -> ModPath {
        let mut at: ModPath = Vec::new();
        for (k, seg) in abs.iter().enumerate() {
            let mut child = at.clone();
            child.push(seg.clone());
            if self.files.contains_key(&child) {
                at = child;
                continue;
            }
            let rest = &abs[k + 1..];
            if let Some(f) = self.files.get(&at)
                && hops < 16
            {
                if let Some(target) = f.imports.get(seg) {
                    let mut t = target.clone();
                    t.extend(rest.iter().cloned());
                    return self.defining_file(&t, hops + 1);
                }
                if !f.scan.defines.contains(seg) {
                    for g in &f.globs {
                        if let Some(gf) = self.files.get(g)
                            && (gf.scan.defines.contains(seg) || gf.imports.contains_key(seg))
                        {
                            let mut t = g.clone();
                            t.push(seg.clone());
                            t.extend(rest.iter().cloned());
                            return self.defining_file(&t, hops + 1);
                        }
                    }
                }
            }
            return at;
        }
        at
    }

    /// `abs` with every module it reaches through a `use` (a module
    /// re-exported under another name or place: `pub use
    /// crate::workflow::authority;` in `service`, or a glob) replaced by
    /// the module's own path. A re-exported item stays as written: it is
    /// named where it is re-exported.
    fn canonical(&self, abs: &[String], hops: usize) -> ModPath {
        let mut at: ModPath = Vec::new();
        for (k, seg) in abs.iter().enumerate() {
            let mut child = at.clone();
            child.push(seg.clone());
            if self.files.contains_key(&child) {
                at = child;
                continue;
            }
            let rest = &abs[k + 1..];
            if hops < 16
                && let Some(f) = self.files.get(&at)
            {
                let target = f.imports.get(seg).cloned().or_else(|| {
                    f.globs.iter().find_map(|g| {
                        let mut t = g.clone();
                        t.push(seg.clone());
                        self.files.contains_key(&t).then_some(t)
                    })
                });
                if let Some(mut t) = target.filter(|t| self.files.contains_key(t)) {
                    t.extend(rest.iter().cloned());
                    return self.canonical(&t, hops + 1);
                }
            }
            at.extend(abs[k..].iter().cloned());
            return at;
        }
        at
    }

    /// The top-level modules (the crate root's child files).
    fn tops(&self) -> BTreeSet<String> {
        self.files
            .keys()
            .filter(|m| m.len() == 1)
            .map(|m| m[0].clone())
            .collect()
    }

    /// `abs` with a crate-root re-export (`crate::Error`) replaced by the
    /// path it re-exports; `Err` when it names neither a top-level module
    /// nor a root re-export.
    fn rooted(&self, abs: &[String]) -> Result<ModPath, String> {
        let first = abs.first().ok_or("names the crate root itself")?;
        if self.files.contains_key(&vec![first.clone()]) {
            return Ok(abs.to_vec());
        }
        match self
            .files
            .get(&Vec::new())
            .and_then(|root| root.imports.get(first))
        {
            Some(target) if !target.is_empty() => {
                let mut t = target.clone();
                t.extend(abs[1..].iter().cloned());
                Ok(t)
            }
            _ => Err(format!(
                "`crate::{first}` is no module and no re-export of the crate root"
            )),
        }
    }

    /// Every path of every file that names something of this crate, as
    /// `Reach`es; scanning errors apart.
    fn reaches(&self) -> (Vec<Reach>, Vec<String>) {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (module, f) in &self.files {
            for (line, what) in &f.scan.hidden {
                errors.push(format!(
                    "{}:{line}: `{what}` hides code from the layering scan: not in src/lib",
                    f.shown
                ));
            }
            for u in &f.scan.uses {
                let Some(abs) = self.absolute(module, u) else {
                    continue;
                };
                let abs = match self.rooted(&abs) {
                    Ok(a) => self.canonical(&a, 0),
                    Err(e) => {
                        errors.push(format!("{}:{}: {e}", f.shown, u.line));
                        continue;
                    }
                };
                // A `pub use` only hands a name on; it ties its file to
                // the name's file when the file's own code uses the name too.
                let passes_on = u.import
                    && u.public
                    && (u.glob
                        || u.alias
                            .as_ref()
                            .is_none_or(|a| !f.scan.code_idents.contains(a)));
                out.push(Reach {
                    from: module.clone(),
                    file: f.shown.clone(),
                    line: u.line,
                    to_file: self.defining_file(&abs, 0),
                    name: if u.glob {
                        "*".to_owned()
                    } else {
                        u.segs.last().cloned().unwrap_or_default()
                    },
                    to: abs,
                    ties: !passes_on,
                    test: u.test,
                });
            }
        }
        (out, errors)
    }
}

/// One path to something of this crate.
#[derive(Debug, Clone)]
struct Reach {
    /// The module of the file it is written in.
    from: ModPath,
    file: String,
    line: usize,
    /// The absolute path it names (a crate-root re-export replaced).
    to: ModPath,
    /// The module of the file that defines what it names.
    to_file: ModPath,
    /// The last segment as written (`*` for a glob).
    name: String,
    /// Whether it ties its file to `to_file` (everything but a `pub use`
    /// that only hands the name on).
    ties: bool,
    /// In `#[cfg(test)]` code.
    test: bool,
}

impl Reach {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

// ---------------------------------------------------------------- the doc

/// The lines between the `<!-- NAME:begin -->` and `<!-- NAME:end -->`
/// markers, trimmed, without blanks and fences.
fn block<'d>(doc: &'d str, name: &str) -> Vec<&'d str> {
    let (_, rest) = doc
        .split_once(&format!("<!-- {name}:begin -->"))
        .unwrap_or_else(|| panic!("docs/architecture.md: {name}:begin marker"));
    let (block, _) = rest
        .split_once(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("docs/architecture.md: {name}:end marker"));
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```"))
        .collect()
}

/// The graph of `a -> b c` lines in the `name` block.
fn parse_graph(doc: &str, name: &str) -> Graph {
    let mut graph = Graph::new();
    for line in block(doc, name) {
        if let Some((from, to)) = line.split_once("->") {
            let deps = graph.entry(from.trim().to_owned()).or_default();
            deps.extend(to.split_whitespace().map(str::to_owned));
        }
    }
    graph
}

/// The modules a side of a rule selects: those under any of `take` and
/// under none of `but` (`*` takes every module).
#[derive(Debug, Clone, PartialEq)]
struct Select {
    take: Vec<ModPath>,
    but: Vec<ModPath>,
}

fn under(m: &[String], prefix: &[String]) -> bool {
    prefix.first().is_some_and(|p| p == "*") || m.starts_with(prefix)
}

impl Select {
    fn parse(s: &str) -> Select {
        let (take, but) = s.split_once(" but ").unwrap_or((s, ""));
        let paths = |s: &str| -> Vec<ModPath> {
            s.split_whitespace()
                .map(|p| p.split("::").map(str::to_owned).collect())
                .collect()
        };
        Select {
            take: paths(take),
            but: paths(but),
        }
    }

    /// Whether `m` (a module, or a path into one) is selected.
    fn selects(&self, m: &[String]) -> bool {
        self.take.iter().any(|t| under(m, t)) && !self.but.iter().any(|b| under(m, b))
    }

    /// Whether all of `m` is selected (nothing below it is excepted).
    fn selects_all(&self, m: &[String]) -> bool {
        self.selects(m) && !self.but.iter().any(|b| b.starts_with(m))
    }
}

/// One `never` rule: `NAME: FROM never-> TO`, each side a list of module
/// paths with an optional `but` list of exceptions.
#[derive(Debug, Clone)]
struct Rule {
    name: String,
    text: String,
    from: Select,
    to: Select,
}

fn parse_never(doc: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for line in block(doc, "layering:never") {
        let (name, body) = line
            .split_once(':')
            .ok_or_else(|| format!("never rule without a name: `{line}`"))?;
        let (from, to) = body
            .split_once("never->")
            .ok_or_else(|| format!("never rule without `never->`: `{line}`"))?;
        let (from, to) = (Select::parse(from.trim()), Select::parse(to.trim()));
        if from.take.is_empty() || to.take.is_empty() {
            return Err(format!("never rule with an empty side: `{line}`"));
        }
        rules.push(Rule {
            name: name.trim().to_owned(),
            text: body.split_whitespace().collect::<Vec<_>>().join(" "),
            from,
            to,
        });
    }
    Ok(rules)
}

impl Rule {
    fn forbids(&self, from: &[String], to: &[String]) -> bool {
        self.from.selects(from) && self.to.selects(to)
    }

    /// Whether the rule forbids every path of top-level edge `a -> b`.
    fn forbids_edge(&self, a: &str, b: &str) -> bool {
        self.from.selects_all(&[a.to_owned()]) && self.to.selects_all(&[b.to_owned()])
    }

    /// Whether the rule closes door `door` (`module::submodule`) for all
    /// code outside its module: it forbids all of the door, from every
    /// module (`*`) but those inside the door's own module.
    fn forbids_door(&self, door: &[String]) -> bool {
        self.to.selects_all(door)
            && self
                .from
                .take
                .iter()
                .any(|t| t.first().is_some_and(|f| f == "*"))
            && self.from.but.iter().all(|b| b.first() == door.first())
    }

    fn show(&self) -> String {
        format!("never rule `{}` ({})", self.name, self.text)
    }
}

/// The doors of each top-level module: `module: door door …`.
fn parse_surface(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut doors = BTreeMap::new();
    for line in block(doc, "layering:surface") {
        if let Some((m, ds)) = line.split_once(':') {
            doors
                .entry(m.trim().to_owned())
                .or_insert_with(BTreeSet::new)
                .extend(ds.split_whitespace().map(str::to_owned));
        }
    }
    doors
}

// ---------------------------------------------------------------- checks

/// The edges `a -> b` between top-level modules.
fn top_edges(reaches: &[Reach]) -> impl Iterator<Item = (&str, &str, &Reach)> {
    reaches.iter().filter_map(|r| {
        let (a, b) = (r.from.first()?, r.to.first()?);
        (a != b && a != "layering").then_some((a.as_str(), b.as_str(), r))
    })
}

/// The paths `allowed` does not permit (leaving out those a never rule
/// forbids: the never check names them), and the allowed edges nobody uses.
fn check_graph(allowed: &Graph, rules: &[Rule], reaches: &[Reach]) -> (Vec<String>, Vec<String>) {
    let mut forbidden = Vec::new();
    let mut used = BTreeSet::new();
    for (a, b, r) in top_edges(reaches) {
        if allowed.get(a).is_some_and(|d| d.contains(b)) {
            used.insert((a.to_owned(), b.to_owned()));
        } else if !rules.iter().any(|rule| rule.forbids(&r.from, &r.to)) {
            forbidden.push(format!("{}: {a} -> {b} ({})", r.at(), show(&r.to)));
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

/// What breaks the rules: paths, allowed edges and doors.
fn check_never(
    rules: &[Rule],
    allowed: &Graph,
    doors: &BTreeMap<String, BTreeSet<String>>,
    reaches: &[Reach],
) -> Vec<String> {
    let mut bad = Vec::new();
    for rule in rules {
        for (a, deps) in allowed {
            for b in deps {
                if rule.forbids_edge(a, b) {
                    bad.push(format!(
                        "docs/architecture.md allows `{a} -> {b}`, which {} forbids",
                        rule.show()
                    ));
                }
            }
        }
        for (m, ds) in doors {
            for d in ds {
                if rule.forbids_door(&[m.clone(), d.clone()]) {
                    bad.push(format!(
                        "docs/architecture.md opens door `{m}::{d}`, which {} forbids",
                        rule.show()
                    ));
                }
            }
        }
        for r in reaches {
            if rule.forbids(&r.from, &r.to) {
                bad.push(format!(
                    "{}: {} names `{}`, which {} forbids",
                    r.at(),
                    show(&r.from),
                    show(&r.to),
                    rule.show()
                ));
            }
        }
    }
    bad
}

/// Every selector of every rule names a module of `krate` (a misspelt one
/// would select nothing).
fn unknown_selectors(rules: &[Rule], krate: &Crate) -> Vec<String> {
    let mut bad = Vec::new();
    for rule in rules {
        for sel in [&rule.from, &rule.to] {
            for p in sel.take.iter().chain(&sel.but) {
                if p.first().is_none_or(|f| f != "*") && !krate.files.contains_key(p) {
                    bad.push(format!("{} names `{}`, no module", rule.show(), show(p)));
                }
            }
        }
    }
    bad
}

/// Paths from outside a top-level module into one of its submodules that
/// is no door (leaving out those a never rule forbids: the never check
/// names them), and doors nobody outside uses.
fn check_surface(
    krate: &Crate,
    doors: &BTreeMap<String, BTreeSet<String>>,
    rules: &[Rule],
    reaches: &[Reach],
) -> (Vec<String>, Vec<String>) {
    let mut closed = Vec::new();
    let mut used = BTreeSet::new();
    for (a, b, r) in top_edges(reaches) {
        let Some(sub) = r.to.get(1) else {
            continue;
        };
        if rules.iter().any(|rule| rule.forbids(&r.from, &r.to)) {
            continue;
        }
        if !krate.files.contains_key(&vec![b.to_owned(), sub.clone()]) {
            continue;
        }
        if doors.get(b).is_some_and(|d| d.contains(sub)) {
            used.insert((b.to_owned(), sub.clone()));
        } else {
            closed.push(format!(
                "{}: {a} names `{}` through `{b}::{sub}`, no door of `{b}`",
                r.at(),
                show(&r.to)
            ));
        }
    }
    let mut stale = Vec::new();
    for (m, ds) in doors {
        for d in ds {
            if !krate.files.contains_key(&vec![m.clone(), d.clone()]) {
                stale.push(format!("{m}: {d} (no such submodule)"));
            } else if !used.contains(&(m.clone(), d.clone())) {
                stale.push(format!("{m}: {d}"));
            }
        }
    }
    (closed, stale)
}

/// The circles of files inside each top-level module: each a list of
/// `file -> file: names` lines.
fn file_circles(krate: &Crate, reaches: &[Reach]) -> Vec<Vec<String>> {
    // file -> file -> names
    let mut g: BTreeMap<&ModPath, BTreeMap<&ModPath, BTreeSet<&str>>> = BTreeMap::new();
    for r in reaches {
        // A module reaching into its own submodules is its structure, not
        // an import.
        if r.ties
            && !r.test
            && !r.to_file.starts_with(&r.from)
            && r.from.first() == r.to_file.first()
        {
            g.entry(&r.from)
                .or_default()
                .entry(&r.to_file)
                .or_default()
                .insert(&r.name);
        }
    }
    let reach = |start: &ModPath| {
        let mut seen: BTreeSet<&ModPath> = BTreeSet::new();
        let mut todo = vec![start];
        while let Some(v) = todo.pop() {
            for w in g.get(v).into_iter().flat_map(|m| m.keys()) {
                if seen.insert(w) {
                    todo.push(w);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&ModPath, BTreeSet<&ModPath>> =
        g.keys().map(|&k| (k, reach(k))).collect();
    let mut done: BTreeSet<&ModPath> = BTreeSet::new();
    let mut circles = Vec::new();
    for (&f, from_f) in &reachable {
        if done.contains(f) || !from_f.contains(f) {
            continue;
        }
        let members: BTreeSet<&ModPath> = from_f
            .iter()
            .copied()
            .filter(|m| reachable.get(m).is_some_and(|r| r.contains(f)))
            .collect();
        let shown = |m: &ModPath| {
            krate
                .files
                .get(m)
                .map_or_else(|| show(m), |x| x.shown.clone())
        };
        let mut lines = Vec::new();
        for &m in &members {
            for (to, names) in g.get(m).into_iter().flatten() {
                if members.contains(to) {
                    let names: Vec<&str> = names.iter().copied().collect();
                    lines.push(format!(
                        "{} -> {}: {}",
                        shown(m),
                        shown(to),
                        names.join(", ")
                    ));
                }
            }
        }
        done.extend(members);
        circles.push(lines);
    }
    circles
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

// ---------------------------------------------------------------- the tree

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// `src/lib` (this file, the test itself, left out) and the document,
/// read once for all the tests.
fn the_tree() -> &'static (Crate, String) {
    static TREE: std::sync::OnceLock<(Crate, String)> = std::sync::OnceLock::new();
    TREE.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/architecture.md"))
            .expect("docs/architecture.md");
        let lib = root.join("src/lib");
        let mut files = Vec::new();
        rust_files(&lib, &mut files);
        let mut sources = Vec::new();
        for f in files {
            let rel = f.strip_prefix(&lib).expect("under src/lib");
            if rel == Path::new("layering.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&f).expect("read source");
            sources.push((rel.to_string_lossy().into_owned(), text));
        }
        (Crate::new(&sources), doc)
    })
}

/// The tree's paths; panics on a path the scanner cannot place.
fn tree_reaches(krate: &Crate) -> Vec<Reach> {
    let (reaches, errors) = krate.reaches();
    assert!(
        errors.is_empty(),
        "paths to nothing known:\n{}",
        errors.join("\n")
    );
    reaches
}

fn rules_of(doc: &str) -> Vec<Rule> {
    parse_never(doc).unwrap_or_else(|e| panic!("docs/architecture.md (layering:never): {e}"))
}

/// The rule the faces-through-service test checks apart.
const DOOR_RULE: &str = "faces-through-service";

#[test]
fn every_crate_path_follows_the_documented_layering() {
    let (krate, doc) = the_tree();
    let allowed = parse_graph(doc, "layering");
    let documented: BTreeSet<String> = allowed.keys().cloned().collect();
    assert_eq!(
        krate.tops(),
        documented,
        "docs/architecture.md must list every top-level module of src/lib (with `name ->` when it depends on none)"
    );
    let reaches = tree_reaches(krate);
    assert_follows(&allowed, &rules_of(doc), &reaches, "import graph");
}

#[test]
fn the_halves_stay_apart_and_store_stays_below_them() {
    let (krate, doc) = the_tree();
    let rules = rules_of(doc);
    let unknown = unknown_selectors(&rules, krate);
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    let others: Vec<Rule> = rules.into_iter().filter(|r| r.name != DOOR_RULE).collect();
    let bad = check_never(
        &others,
        &parse_graph(doc, "layering"),
        &parse_surface(doc),
        &tree_reaches(krate),
    );
    assert!(bad.is_empty(), "never rules broken:\n{}", bad.join("\n"));
}

#[test]
fn faces_reach_the_workflow_through_its_service_alone() {
    let (krate, doc) = the_tree();
    let door: Vec<Rule> = rules_of(doc)
        .into_iter()
        .filter(|r| r.name == DOOR_RULE)
        .collect();
    assert_eq!(
        door.len(),
        1,
        "docs/architecture.md: the `{DOOR_RULE}` never rule"
    );
    let bad = check_never(
        &door,
        &parse_graph(doc, "layering"),
        &parse_surface(doc),
        &tree_reaches(krate),
    );
    assert!(bad.is_empty(), "never rule broken:\n{}", bad.join("\n"));
}

#[test]
fn outside_code_names_a_module_through_its_surface() {
    let (krate, doc) = the_tree();
    let doors = parse_surface(doc);
    for m in doors.keys() {
        assert!(
            krate.tops().contains(m),
            "layering:surface names `{m}`, no top-level module"
        );
    }
    let (closed, stale) = check_surface(krate, &doors, &rules_of(doc), &tree_reaches(krate));
    assert!(
        closed.is_empty(),
        "paths into a submodule that docs/architecture.md (layering:surface) does not open (re-export the name from the module's root file, or open the door):\n{}",
        closed.join("\n")
    );
    assert!(
        stale.is_empty(),
        "doors in docs/architecture.md (layering:surface) nothing outside uses (remove them):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_files_of_each_top_level_module_form_a_dag() {
    let (krate, _) = the_tree();
    let circles = file_circles(krate, &tree_reaches(krate));
    let shown: Vec<String> = circles
        .iter()
        .enumerate()
        .map(|(n, c)| format!("circle {}:\n  {}", n + 1, c.join("\n  ")))
        .collect();
    assert!(
        circles.is_empty(),
        "files that import each other in a loop (file -> file: the names used); move what both need below both:\n{}",
        shown.join("\n")
    );
}

/// The same rules one level down, between the submodules of `workflow`
/// (the `layering:workflow` block of docs/architecture.md).
#[test]
fn every_workflow_path_follows_the_documented_layering() {
    let (krate, doc) = the_tree();
    let allowed = parse_graph(doc, "layering:workflow");
    let names: BTreeSet<String> = krate
        .files
        .keys()
        .filter(|m| m.len() == 2 && m[0] == "workflow")
        .map(|m| m[1].clone())
        .collect();
    let documented: BTreeSet<String> = allowed.keys().cloned().collect();
    assert_eq!(
        names, documented,
        "docs/architecture.md (layering:workflow) must list every submodule of workflow"
    );
    let within: Vec<Reach> = within(krate, "workflow", &tree_reaches(krate));
    assert_follows(&allowed, &[], &within, "workflow graph");
}

/// The paths between the submodules of top-level module `top`, as paths
/// between top-level modules (`workflow::a::x` naming `workflow::b::y`
/// becomes `a` naming `b::y`).
fn within(krate: &Crate, top: &str, reaches: &[Reach]) -> Vec<Reach> {
    reaches
        .iter()
        .filter(|r| {
            r.from.first().is_some_and(|f| f == top)
                && r.from.len() > 1
                && r.to.first().is_some_and(|t| t == top)
                && r.to
                    .get(1)
                    .is_some_and(|s| krate.files.contains_key(&vec![top.to_owned(), s.clone()]))
        })
        .map(|r| Reach {
            from: r.from[1..].to_vec(),
            to: r.to[1..].to_vec(),
            ..r.clone()
        })
        .collect()
}

/// Fails on a forbidden edge, an allowed edge nothing uses, or a cycle in
/// the allowed `graph` (named `what` in the messages).
fn assert_follows(graph: &Graph, rules: &[Rule], reaches: &[Reach], what: &str) {
    let (forbidden, stale) = check_graph(graph, rules, reaches);
    assert!(
        forbidden.is_empty(),
        "edges the {what} in docs/architecture.md does not allow:\n{}",
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

// ---------------------------------------------------------------- unit tests

/// A crate from `(path, text)` pairs.
fn krate(sources: &[(&str, &str)]) -> Crate {
    let owned: Vec<(String, String)> = sources
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect();
    Crate::new(&owned)
}

/// The absolute paths a crate's file `file` names, as `a::b` strings with
/// their lines.
fn named(k: &Crate, file: &str) -> Vec<(String, usize)> {
    let (reaches, errors) = k.reaches();
    assert!(errors.is_empty(), "{errors:?}");
    reaches
        .iter()
        .filter(|r| r.file == format!("src/lib/{file}"))
        .map(|r| (show(&r.to), r.line))
        .collect()
}

#[test]
fn the_scanner_skips_comments_strings_and_characters_that_look_like_paths() {
    let k = krate(&[
        ("lib.rs", "pub mod http; pub mod store;"),
        ("http.rs", ""),
        (
            "store.rs",
            "// crate::http in a comment\n\
             /* crate::http /* nested */ crate::http */\n\
             const A: &str = \"crate::http::x \\\" crate::http\";\n\
             const B: &str = r#\"crate::http \"quoted\" \"#;\n\
             const C: &[u8] = b\"crate::http\";\n\
             const D: char = '\"'; const E: char = '\\'';\n\
             fn f<'a>(x: &'a str) -> &'a str { x }\n\
             /// crate::http in a doc comment\n\
             fn g() { crate::http::serve(); }\n\
             #[serde(with = \"crate::http::b64\", rename = \"crate::http\")]\n\
             const F: &str = \"crate::http::x\";\n",
        ),
    ]);
    // A serde attribute's path in a string is code.
    assert_eq!(
        named(&k, "store.rs"),
        [("http::serve".to_owned(), 9), ("http::b64".to_owned(), 10)]
    );
}

#[test]
fn the_scanner_expands_groups_at_every_depth() {
    let k = krate(&[
        ("lib.rs", "pub mod a; pub mod d; pub mod workflow;"),
        ("a/mod.rs", "pub mod b; pub mod c;"),
        ("a/b.rs", ""),
        ("a/c.rs", ""),
        ("d.rs", ""),
        (
            "workflow/mod.rs",
            "pub mod service; pub mod authority; pub mod journal;",
        ),
        ("workflow/service.rs", ""),
        ("workflow/authority.rs", "pub mod x;"),
        ("workflow/authority/x.rs", ""),
        (
            "workflow/journal.rs",
            "use crate::workflow::{service, authority::{x::{self, Y}, Z as W}};\n\
             pub use crate::{a::{b, c::*}, d};\n",
        ),
    ]);
    let got = named(&k, "workflow/journal.rs");
    let want = [
        ("workflow::service", 1),
        ("workflow::authority::x", 1),
        ("workflow::authority::x::Y", 1),
        ("workflow::authority::Z", 1),
        ("a::b", 2),
        ("a::c", 2),
        ("d", 2),
    ]
    .map(|(p, l)| (p.to_owned(), l));
    assert_eq!(got, want);
}

#[test]
fn the_scanner_resolves_super_and_self_climbs() {
    let k = krate(&[
        ("lib.rs", "pub mod store; pub mod workflow;"),
        ("store/mod.rs", "pub struct DataDir;"),
        ("workflow/mod.rs", "pub mod authority; pub mod service;"),
        ("workflow/authority.rs", "pub struct X;"),
        ("workflow/service/mod.rs", "pub mod ops;"),
        (
            "workflow/service/ops.rs",
            "use super::super::authority::X;\n\
             use super::super::super::store::DataDir;\n\
             fn f() { super::super::super::store::open(); self::g(); }\n\
             mod tests {\n    use super::*;\n    use super::super::super::authority;\n}\n",
        ),
    ]);
    let got = named(&k, "workflow/service/ops.rs");
    let want = [
        ("workflow::authority::X", 1),
        ("store::DataDir", 2),
        ("store::open", 3),
        ("workflow::service::ops::g", 3),
        ("workflow::service::ops", 5),
        ("workflow::authority", 6),
    ]
    .map(|(p, l)| (p.to_owned(), l));
    assert_eq!(got, want);
    // A climb past the crate root names nothing.
    let k = krate(&[("lib.rs", "pub mod a;"), ("a.rs", "use super::super::x;")]);
    assert!(named(&k, "a.rs").is_empty());
}

#[test]
fn the_scanner_counts_a_crate_root_reexport_as_its_module() {
    let k = krate(&[
        (
            "lib.rs",
            "pub mod error; pub mod http;\npub use error::{Code, Error, Result};",
        ),
        ("error.rs", "pub struct Error;"),
        (
            "http.rs",
            "fn f() -> crate::Result<()> { Err(crate::Error::x()) }\nuse crate::Code as C;",
        ),
    ]);
    let got = named(&k, "http.rs");
    let want = [
        ("error::Result", 1),
        ("error::Error::x", 1),
        ("error::Code", 2),
    ]
    .map(|(p, l)| (p.to_owned(), l));
    assert_eq!(got, want);
    let unknown = krate(&[
        ("lib.rs", "pub mod http;"),
        ("http.rs", "crate::Unknown::x();"),
    ]);
    let (_, errors) = unknown.reaches();
    assert_eq!(
        errors,
        ["src/lib/http.rs:1: `crate::Unknown` is no module and no re-export of the crate root"]
    );
}

#[test]
fn the_scanner_ignores_macro_crates_other_crates_fields_and_locals() {
    let k = krate(&[
        ("lib.rs", "pub mod http; pub mod store;"),
        ("http.rs", ""),
        (
            "store.rs",
            "macro_rules! m { ($t:ty) => { $t::x(); $crate::http::x() } }\n\
             fn f() { my_crate::http::y(); std::mem::drop(1); self.http::z; }\n\
             use ::http::w; use serde::Serialize; pub(crate) fn g() {}\n",
        ),
    ]);
    // `$crate::` in a macro of this crate is this crate's root.
    assert_eq!(named(&k, "store.rs"), [("http::x".to_owned(), 1)]);
}

#[test]
fn the_scanner_sees_through_a_module_reexport_and_refuses_hidden_code() {
    let k = krate(&[
        ("lib.rs", "pub mod http; pub mod workflow;"),
        ("workflow/mod.rs", "pub mod authority; pub mod service;"),
        ("workflow/authority/mod.rs", "pub mod change;"),
        ("workflow/authority/change.rs", "pub struct ChangeSel;"),
        (
            "workflow/service.rs",
            "pub use crate::workflow::authority as auth;\npub use super::authority::*;\n\
             pub use super::authority::change::ChangeSel;\n",
        ),
        (
            "http.rs",
            "use crate::workflow::service::{auth::change::ChangeSel, change, ChangeSel as C};",
        ),
    ]);
    // Through the module re-exports, the first two name the authority;
    // a re-exported item is named where it is re-exported.
    assert_eq!(
        named(&k, "http.rs"),
        [
            ("workflow::authority::change::ChangeSel".to_owned(), 1),
            ("workflow::authority::change".to_owned(), 1),
            ("workflow::service::ChangeSel".to_owned(), 1),
        ]
    );
    let k = krate(&[
        ("lib.rs", "pub mod http;"),
        (
            "http.rs",
            "#[path = \"../x.rs\"]\nmod x;\ninclude!(\"y.rs\");\nextern crate self as me;\n",
        ),
    ]);
    let (_, errors) = k.reaches();
    assert_eq!(
        errors,
        [
            "src/lib/http.rs:1: `path` hides code from the layering scan: not in src/lib",
            "src/lib/http.rs:3: `include` hides code from the layering scan: not in src/lib",
            "src/lib/http.rs:4: `extern` hides code from the layering scan: not in src/lib",
        ]
    );
}

#[test]
fn the_scanner_follows_paths_through_child_modules_and_reexports() {
    let k = krate(&[
        ("lib.rs", "pub mod store;"),
        (
            "store/mod.rs",
            "mod lock; mod session; mod writer;\npub use session::Session;\n\
             pub use writer::Writer;\npub struct DataDir;\nfn f() { lock::take(); }\n",
        ),
        ("store/lock.rs", "pub fn take() {}\n"),
        (
            "store/session.rs",
            "pub struct Session;\nuse super::DataDir;\n",
        ),
        (
            "store/writer.rs",
            "use super::Session;\npub struct Writer;\n",
        ),
    ]);
    let (reaches, _) = k.reaches();
    let t = |a: &str, b: &str, c: bool| (a.to_owned(), b.to_owned(), c);
    let tie = |file: &str| -> Vec<(String, String, bool)> {
        reaches
            .iter()
            .filter(|r| r.file == format!("src/lib/{file}"))
            .map(|r| (show(&r.to), show(&r.to_file), r.ties))
            .collect()
    };
    // A `pub use` only hands its name on; `lock::take` is a child path.
    assert_eq!(
        tie("store/mod.rs"),
        [
            t("store::session::Session", "store::session", false),
            t("store::writer::Writer", "store::writer", false),
            t("store::lock::take", "store::lock", true),
        ]
    );
    // `super::Session` is defined in session.rs, behind mod.rs's re-export.
    assert_eq!(
        tie("store/writer.rs"),
        [t("store::Session", "store::session", true)]
    );
    // mod.rs hands `Session` on and session.rs names mod.rs's `DataDir`:
    // no circle.
    let circles = file_circles(&k, &reaches);
    assert!(circles.is_empty(), "{circles:?}");
    // A sibling that re-exports `Staging` is tied to it once its own
    // code uses the name.
    let sources = |cas: &'static str| {
        krate(&[
            ("lib.rs", "pub mod store;"),
            ("store/mod.rs", "mod cas; mod staging;"),
            ("store/cas.rs", cas),
            (
                "store/staging.rs",
                "pub struct Staging;\nfn f() { super::cas::copy(); }\n",
            ),
        ])
    };
    let k = sources("pub use super::staging::Staging;\npub fn copy() {}\n");
    let (reaches, _) = k.reaches();
    assert!(file_circles(&k, &reaches).is_empty());
    let k = sources("pub use super::staging::Staging;\npub fn copy() -> Staging { Staging }\n");
    let (reaches, _) = k.reaches();
    assert_eq!(
        file_circles(&k, &reaches),
        [vec![
            "src/lib/store/cas.rs -> src/lib/store/staging.rs: Staging".to_owned(),
            "src/lib/store/staging.rs -> src/lib/store/cas.rs: copy".to_owned(),
        ]]
    );
}

#[test]
fn the_cycle_check_prints_each_circle_of_files_with_its_names() {
    let k = krate(&[
        ("lib.rs", "pub mod cli; pub mod data; pub mod http;"),
        (
            "data/mod.rs",
            "pub mod node; pub mod replica; pub mod writer;",
        ),
        (
            "data/node.rs",
            "use super::writer::Writer;\npub struct Node;\n",
        ),
        (
            "data/writer.rs",
            "pub struct Writer;\nfn f() { super::replica::apply(); }\n",
        ),
        (
            "data/replica.rs",
            "pub fn apply() {}\nuse crate::data::{node::{Node, index}, writer::Writer};\n",
        ),
        // b.rs names a.rs in test code only: no circle.
        ("http/mod.rs", "mod a; mod b;"),
        ("http/a.rs", "use super::b::B; pub struct A;"),
        (
            "http/b.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::http::a::A;\n}\n\
             #[cfg(test)] use super::a::A as Z;\n#[cfg(test)]\nfn t() { super::a::f(); }\n",
        ),
        // A module dispatching to its submodules, which use its helpers, is
        // its structure: no circle.
        (
            "cli/mod.rs",
            "mod cmd;\npub fn to_value() {}\nfn main() { cmd::run(); }\n",
        ),
        ("cli/cmd.rs", "pub fn run() { super::to_value(); }\n"),
    ]);
    let (reaches, _) = k.reaches();
    assert_eq!(
        file_circles(&k, &reaches),
        [vec![
            "src/lib/data/node.rs -> src/lib/data/writer.rs: Writer".to_owned(),
            "src/lib/data/replica.rs -> src/lib/data/node.rs: Node, index".to_owned(),
            "src/lib/data/replica.rs -> src/lib/data/writer.rs: Writer".to_owned(),
            "src/lib/data/writer.rs -> src/lib/data/replica.rs: apply".to_owned(),
        ]]
    );
    // A file under `#[cfg(test)] mod tests;` is test code too.
    let k = krate(&[
        ("lib.rs", "pub mod http;"),
        ("http/mod.rs", "mod a; mod b;"),
        ("http/a.rs", "use super::b::B;"),
        ("http/b/mod.rs", "pub struct B;\n#[cfg(test)]\nmod tests;\n"),
        ("http/b/tests.rs", "use crate::http::a;"),
    ]);
    let (reaches, _) = k.reaches();
    assert!(file_circles(&k, &reaches).is_empty());
    let tests: Vec<bool> = reaches.iter().map(|r| r.test).collect();
    assert_eq!(tests, [false, true]);
}

#[test]
fn the_graph_check_refuses_an_unlisted_edge_and_a_stale_edge() {
    let k = krate(&[
        ("lib.rs", "pub mod error; pub mod http; pub mod store;"),
        ("error.rs", ""),
        ("http.rs", ""),
        (
            "store.rs",
            "use crate::error::Result;\nfn f() { crate::http::serve(); }\npub use crate::http::Reply;\n",
        ),
    ]);
    let allowed = parse_graph(
        "<!-- layering:begin -->\nerror ->\nstore -> error\nhttp -> store error\n<!-- layering:end -->",
        "layering",
    );
    let (reaches, _) = k.reaches();
    let (forbidden, stale) = check_graph(&allowed, &[], &reaches);
    assert_eq!(
        forbidden,
        [
            "src/lib/store.rs:2: store -> http (http::serve)",
            "src/lib/store.rs:3: store -> http (http::Reply)"
        ]
    );
    assert_eq!(stale, ["http -> error", "http -> store"]);
    // A path a never rule forbids is the never check's to name.
    let doc = "<!-- layering:never:begin -->\nstore-below: store never-> http\n<!-- layering:never:end -->";
    let rules = parse_never(doc).expect("rules");
    let (forbidden, _) = check_graph(&allowed, &rules, &reaches);
    assert!(forbidden.is_empty(), "{forbidden:?}");
}

#[test]
fn a_never_rule_holds_even_against_the_allowed_graph() {
    let doc = "<!-- layering:never:begin -->\n```text\n\
               halves-apart: workflow contract never-> data sync\n\
               faces-through-service: * but workflow never-> workflow but workflow::service\n\
               ```\n<!-- layering:never:end -->\n\
               <!-- layering:begin -->\nworkflow -> data\nhttp -> workflow\n<!-- layering:end -->\n\
               <!-- layering:surface:begin -->\nworkflow: service authority\n<!-- layering:surface:end -->";
    let rules = parse_never(doc).expect("rules");
    let k = krate(&[
        ("lib.rs", "pub mod data; pub mod http; pub mod workflow;"),
        ("data.rs", ""),
        ("workflow/mod.rs", "pub mod service; pub mod authority;"),
        (
            "workflow/service.rs",
            "use crate::data::Record;\npub use super::authority::Lease;",
        ),
        ("workflow/authority.rs", "pub struct Lease;"),
        (
            "http.rs",
            "use crate::workflow::{service::{self, Lease}, authority::Lease as L};",
        ),
    ]);
    let (reaches, _) = k.reaches();
    let bad = check_never(
        &rules,
        &parse_graph(doc, "layering"),
        &parse_surface(doc),
        &reaches,
    );
    assert_eq!(
        bad,
        [
            "docs/architecture.md allows `workflow -> data`, which never rule `halves-apart` (workflow contract never-> data sync) forbids",
            "src/lib/workflow/service.rs:1: workflow::service names `data::Record`, which never rule `halves-apart` (workflow contract never-> data sync) forbids",
            "docs/architecture.md opens door `workflow::authority`, which never rule `faces-through-service` (* but workflow never-> workflow but workflow::service) forbids",
            "src/lib/http.rs:1: http names `workflow::authority::Lease`, which never rule `faces-through-service` (* but workflow never-> workflow but workflow::service) forbids",
        ]
    );
    // A rule from named modules does not close a door for everybody.
    assert!(!rules[0].forbids_door(&["data".to_owned(), "node".to_owned()]));
    // `http -> workflow` is not wholly forbidden: `workflow::service` stays open.
    assert!(!rules[1].forbids_edge("http", "workflow"));
    assert!(rules[0].forbids_edge("workflow", "sync"));
    assert!(
        parse_never("<!-- layering:never:begin -->\nx never-> y\n<!-- layering:never:end -->")
            .is_err()
    );
    assert!(
        parse_never("<!-- layering:never:begin -->\nr: x -> y\n<!-- layering:never:end -->")
            .is_err()
    );
    assert_eq!(
        unknown_selectors(&rules, &k),
        [
            "never rule `halves-apart` (workflow contract never-> data sync) names `contract`, no module",
            "never rule `halves-apart` (workflow contract never-> data sync) names `sync`, no module"
        ]
    );
}

#[test]
fn outside_code_reaches_a_submodule_only_through_a_door() {
    let k = krate(&[
        ("lib.rs", "pub mod data; pub mod http;"),
        (
            "data/mod.rs",
            "pub mod node; pub mod schema;\npub use node::Node;",
        ),
        ("data/node.rs", "pub struct Node;"),
        ("data/schema.rs", "pub const SPEC: u8 = 0;"),
        (
            "http.rs",
            "use crate::data::{Node, node::Prepared, schema::SPEC};",
        ),
    ]);
    let doors = parse_surface(
        "<!-- layering:surface:begin -->\ndata: schema\nhttp: tls\n<!-- layering:surface:end -->",
    );
    let (reaches, _) = k.reaches();
    let (closed, stale) = check_surface(&k, &doors, &[], &reaches);
    assert_eq!(
        closed,
        [
            "src/lib/http.rs:1: http names `data::node::Prepared` through `data::node`, no door of `data`"
        ]
    );
    assert_eq!(stale, ["http: tls (no such submodule)"]);
}

#[test]
fn the_checker_finds_cycles() {
    let g = parse_graph(
        "<!-- layering:begin -->\na -> b\nb -> c\nc -> a\nd -> a\ne -> e\n<!-- layering:end -->",
        "layering",
    );
    let want: BTreeSet<String> = ["a", "b", "c", "e"].map(str::to_owned).into();
    assert_eq!(on_cycles(&g), want);
    let acyclic = parse_graph(
        "<!-- layering:begin -->\na -> b\nb -> c\nd -> a\n<!-- layering:end -->",
        "layering",
    );
    assert!(on_cycles(&acyclic).is_empty());
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
