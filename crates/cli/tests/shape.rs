//! The shape DESIGN.md promises, checked on every test run:
//!
//! * crates depend only on crates in a lower layer of DESIGN.md's
//!   `crate-layers` table (read from DESIGN.md, so picture and check agree);
//! * within a crate, no file-level import circle and no module using what
//!   an ancestor module defines: the files' imports (`use`
//!   and qualified paths, in code and in macro arguments) form a graph with
//!   no cycle, so every import points down. A parent declaring `mod child;`
//!   is structure, not an import; test-only modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(layer, crate dir name)` from DESIGN.md's fenced `crate-layers` block:
/// one line per layer, lowest first, `N: a b c`.
fn layers() -> BTreeMap<String, usize> {
    let design = std::fs::read_to_string(root().join("docs/DESIGN.md")).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in design.lines() {
        if line.trim() == "```crate-layers" {
            inside = true;
            continue;
        }
        if inside && line.trim() == "```" {
            break;
        }
        if !inside {
            continue;
        }
        let Some((n, names)) = line.split_once(':') else { continue };
        let Ok(n) = n.trim().parse::<usize>() else { continue };
        for name in names.split_whitespace() {
            out.insert(name.to_string(), n);
        }
    }
    out
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.join("Cargo.toml").exists()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn dir_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The workspace crates a crate's `[dependencies]` names (dev-dependencies
/// may reach anywhere: tests drive the whole system).
fn ringleader_deps(dir: &Path) -> Vec<String> {
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    let mut section = String::new();
    let mut out = Vec::new();
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_string();
            continue;
        }
        if section == "[dependencies]" {
            if let Some(name) = t.split(['=', ' ', '.']).next().and_then(|n| n.strip_prefix("ringleader-")) {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let layers = layers();
    assert!(!layers.is_empty(), "docs/DESIGN.md has no ```crate-layers block");
    let mut bad = Vec::new();
    for dir in crate_dirs() {
        let name = dir_name(&dir);
        let Some(&mine) = layers.get(&name) else {
            bad.push(format!("crate {name} is missing from DESIGN.md's crate-layers table"));
            continue;
        };
        for dep in ringleader_deps(&dir) {
            match layers.get(&dep) {
                Some(&theirs) if theirs < mine => {}
                Some(&theirs) => bad.push(format!("{name} (layer {mine}) depends on {dep} (layer {theirs})")),
                None => bad.push(format!("{name} depends on {dep}, which is not in the crate-layers table")),
            }
        }
    }
    assert!(bad.is_empty(), "crate layering broken:\n  {}", bad.join("\n  "));
}

/// One source file as a module: its path from the crate root, and the
/// `pub use` names it re-exports (name -> absolute path).
struct Module {
    path: Vec<String>,
    reexports: BTreeMap<String, Vec<String>>,
    children: BTreeSet<String>,
    /// Absolute paths this file names, with the line of each.
    refs: Vec<(Vec<String>, usize)>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().trim() == "test"))
}

/// Collects the paths a file names, made absolute from the file's module.
struct Collector<'a> {
    here: &'a [String],
    children: &'a BTreeSet<String>,
    refs: Vec<(Vec<String>, usize)>,
    reexports: BTreeMap<String, Vec<String>>,
    /// Names `use` brought into scope, so `name::item` resolves through them.
    aliases: BTreeMap<String, Vec<String>>,
}

impl Collector<'_> {
    /// `crate::a`, `super::a`, `self::a` or `child::a` made absolute; other
    /// first segments are extern crates, std, or local names.
    fn absolute(&self, segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.here.to_vec(),
            "super" => {
                let mut b = self.here.to_vec();
                let mut rest = segs;
                while rest.first().map(String::as_str) == Some("super") {
                    b.pop()?;
                    rest = &rest[1..];
                }
                b.extend(rest.iter().cloned());
                return Some(b);
            }
            name if self.aliases.contains_key(name) => {
                let mut b = self.aliases.get(name)?.clone();
                b.extend(segs[1..].iter().cloned());
                return Some(b);
            }
            name if self.children.contains(name) => {
                let mut b = self.here.to_vec();
                b.push(name.to_string());
                b.extend(segs[1..].iter().cloned());
                return Some(b);
            }
            _ => return None,
        };
        base.extend(segs[1..].iter().cloned());
        Some(base)
    }

    fn add(&mut self, segs: Vec<String>, line: usize) {
        if let Some(abs) = self.absolute(&segs) {
            self.refs.push((abs, line));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, n.ident.to_string(), None, public, &n.ident),
            syn::UseTree::Rename(r) => {
                self.use_leaf(prefix, r.ident.to_string(), Some(r.rename.to_string()), public, &r.ident)
            }
            syn::UseTree::Glob(g) => {
                let line = g.star_token.spans[0].start().line;
                self.add(prefix.clone(), line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, public);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], name: String, rename: Option<String>, public: bool, at: &syn::Ident) {
        let mut segs = prefix.to_vec();
        if name != "self" {
            segs.push(name.clone());
        }
        let line = at.span().start().line;
        if let Some(abs) = self.absolute(&segs) {
            let alias =
                rename
                    .unwrap_or_else(|| if name == "self" { prefix.last().cloned().unwrap_or_default() } else { name });
            if public {
                self.reexports.insert(alias.clone(), abs.clone());
            }
            self.aliases.insert(alias, abs.clone());
            self.refs.push((abs, line));
        }
    }

    /// Paths inside macro arguments (`format!`, `json!`, `select!`…):
    /// runs of `ident :: ident …` in the tokens.
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        let toks: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                proc_macro2::TokenTree::Group(g) => {
                    self.tokens(g.stream());
                    i += 1;
                }
                proc_macro2::TokenTree::Ident(id) => {
                    let line = id.span().start().line;
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < toks.len() + 1 {
                        let colons = matches!((&toks.get(j), &toks.get(j + 1)),
                            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                            if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, toks.get(j + 2)) {
                            (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                                segs.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segs.len() > 1 {
                        self.add(segs, line);
                    }
                    i = j.max(i + 1);
                }
                _ => i += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test_only(&u.attrs) {
            return;
        }
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        self.use_tree(&mut Vec::new(), &u.tree, public);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // Inline modules belong to their file; test modules are left out.
        if is_test_only(&m.attrs) {
            return;
        }
        if m.content.is_some() {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if f.attrs.iter().any(|a| a.path().is_ident("test")) || is_test_only(&f.attrs) {
            return;
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test_only(&i.attrs) {
            return;
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() > 1 {
            let segs = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = p.segments[0].ident.span().start().line;
            self.add(segs, line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
}

/// Every non-test source file of a crate, by module path.
fn modules(src: &Path) -> BTreeMap<PathBuf, Module> {
    let mut out = BTreeMap::new();
    let lib = if src.join("lib.rs").exists() { src.join("lib.rs") } else { src.join("main.rs") };
    walk(&lib, Vec::new(), &mut out);
    out
}

fn walk(file: &Path, path: Vec<String>, out: &mut BTreeMap<PathBuf, Module>) {
    let Ok(text) = std::fs::read_to_string(file) else { return };
    let ast = match syn::parse_file(&text) {
        Ok(ast) => ast,
        Err(e) => panic!("{}: {e}", file.display()),
    };
    // Where this file's children live: `a.rs` -> `a/`, `mod.rs`/`lib.rs` -> its dir.
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = match name.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => file.parent().map(Path::to_path_buf).unwrap_or_default(),
        _ => file.with_extension(""),
    };
    let mut children = BTreeSet::new();
    let mut files = Vec::new();
    for item in &ast.items {
        if let syn::Item::Mod(m) = item {
            children.insert(m.ident.to_string());
            if m.content.is_none() && !is_test_only(&m.attrs) {
                let id = m.ident.to_string();
                let a = dir.join(format!("{id}.rs"));
                let b = dir.join(&id).join("mod.rs");
                let child = if a.exists() { a } else { b };
                files.push((child, id));
            }
        }
    }
    let mut c = Collector {
        here: &path,
        children: &children,
        refs: Vec::new(),
        reexports: BTreeMap::new(),
        aliases: BTreeMap::new(),
    };
    c.visit_file(&ast);
    let (refs, reexports) = (c.refs, c.reexports);
    out.insert(file.to_path_buf(), Module { path: path.clone(), reexports, children, refs });
    for (child, id) in files {
        let mut p = path.clone();
        p.push(id);
        walk(&child, p, out);
    }
}

/// The file an absolute path lands in: the deepest module named, following
/// `pub use` re-exports so `crate::Thing` points at the file defining it.
fn resolve(
    abs: &[String],
    by_path: &BTreeMap<Vec<String>, PathBuf>,
    mods: &BTreeMap<PathBuf, Module>,
    depth: u32,
) -> Option<PathBuf> {
    let mut best = by_path.get(&Vec::new())?.clone();
    let mut i = 0;
    while i < abs.len() {
        let next = abs[..=i].to_vec();
        match by_path.get(&next) {
            Some(f) => best = f.clone(),
            None => {
                let m = mods.get(&best)?;
                if depth < 8 {
                    if let Some(target) = m.reexports.get(&abs[i]) {
                        let mut t = target.clone();
                        t.extend(abs[i + 1..].iter().cloned());
                        if t != abs {
                            return resolve(&t, by_path, mods, depth + 1);
                        }
                    }
                }
                return Some(best);
            }
        }
        i += 1;
    }
    Some(best)
}

/// Tarjan's strongly connected components of size > 1.
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct T<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn go<'a>(t: &mut T<'a>, v: &'a PathBuf) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.edges.get(v) {
            for w in ws {
                if !t.index.contains_key(w) {
                    go(t, w);
                    let lw = t.low[w];
                    let lv = t.low[v];
                    t.low.insert(v, lv.min(lw));
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low[v];
                    t.low.insert(v, lv.min(iw));
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            go(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_crate_has_a_file_level_import_circle() {
    let mut report = Vec::new();
    let mut total_files = 0;
    // SHAPE_CRATES=agent,api narrows the report while working on a few crates.
    let only: Vec<String> =
        std::env::var("SHAPE_CRATES").map(|v| v.split(',').map(str::to_string).collect()).unwrap_or_default();
    for dir in crate_dirs() {
        if !only.is_empty() && !only.contains(&dir_name(&dir)) {
            continue;
        }
        let src = dir.join("src");
        let mods = modules(&src);
        total_files += mods.len();
        let by_path: BTreeMap<Vec<String>, PathBuf> = mods.iter().map(|(f, m)| (m.path.clone(), f.clone())).collect();
        let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        let mut why: BTreeMap<(PathBuf, PathBuf), usize> = BTreeMap::new();
        for (file, m) in &mods {
            let _ = &m.children;
            edges.entry(file.clone()).or_default();
            for (abs, line) in &m.refs {
                if let Some(to) = resolve(abs, &by_path, &mods, 0) {
                    if &to != file {
                        edges.entry(file.clone()).or_default().insert(to.clone());
                        why.entry((file.clone(), to)).or_insert(*line);
                    }
                }
            }
        }
        let rel = |p: &PathBuf| p.strip_prefix(&src).map(|r| r.display().to_string()).unwrap_or_default();
        // SHAPE_EDGES=1 prints every edge, for planning a move.
        if std::env::var_os("SHAPE_EDGES").is_some() {
            for ((a, b), line) in &why {
                eprintln!("edge {}: {}:{line} -> {}", dir_name(&dir), rel(a), rel(b));
            }
        }
        // A module using what an ancestor module defines imports upward even
        // when the ancestor does not use it back (re-exports were followed,
        // so an edge to an ancestor means an item defined there).
        for ((a, b), line) in &why {
            let (Some(ma), Some(mb)) = (mods.get(a), mods.get(b)) else { continue };
            if ma.path.len() > mb.path.len() && ma.path.starts_with(&mb.path) {
                report.push(format!("{}: {}:{line} imports upward from {}", dir_name(&dir), rel(a), rel(b)));
            }
        }
        for comp in circles(&edges) {
            let set: BTreeSet<&PathBuf> = comp.iter().collect();
            let mut lines = Vec::new();
            for a in &comp {
                for b in edges.get(a).into_iter().flatten().filter(|b| set.contains(b)) {
                    let line = why.get(&(a.clone(), b.clone())).copied().unwrap_or(0);
                    lines.push(format!("      {}:{line} -> {}", rel(a), rel(b)));
                }
            }
            report.push(format!(
                "{}: {}\n{}",
                dir_name(&dir),
                comp.iter().map(rel).collect::<Vec<_>>().join(" <-> "),
                lines.join("\n")
            ));
        }
    }
    assert!(!only.is_empty() || total_files > 100, "found only {total_files} source files: is the walk broken?");
    assert!(report.is_empty(), "{} import circle(s):\n{}", report.len(), report.join("\n"));
}
