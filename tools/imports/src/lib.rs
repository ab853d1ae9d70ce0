//! The import graph of a crate's source files, and its circles.
//!
//! A file names another when a path written in it (a `use`, an expression, a
//! type, or the tokens of a macro such as `view!`) resolves to an item the
//! other file defines. Paths are followed through `pub use` re-exports to the
//! file that defines the item, so a `mod.rs` that re-exports its children is a
//! facade, not a knot; a name re-exported from another crate (`pub use
//! domain::x::*`) is the re-exporting file's, since that file is what was named; an item a parent module defines itself (a helper in
//! `runs/mod.rs` that `runs/runner.rs` calls) is an edge to the parent. Test
//! modules (`#[cfg(test)]`) are left out: they may reach anywhere.
//!
//! A circle is a strongly connected component of more than one file: files
//! that cannot be understood, or moved, one without the other.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module's absolute path inside its crate (`["runs", "live"]`; the root is empty).
type ModPath = Vec<String>;

/// What one module (a file, or a module written inline in one) holds.
#[derive(Default, Debug)]
struct Module {
    file: usize,
    /// Items defined here (functions, types, traits, constants, macros, modules).
    items: BTreeSet<String>,
    /// `use` names in scope: the name → the path it stands for (absolute or not yet resolved).
    imports: BTreeMap<String, Vec<String>>,
    /// `use a::*`: the paths whose items are all in scope.
    globs: Vec<Vec<String>>,
    /// Which of `imports` and `globs` are public (re-exports others may name through this module).
    public: BTreeSet<String>,
    public_globs: Vec<Vec<String>>,
    /// Every path written here, as written.
    paths: Vec<Vec<String>>,
}

/// A crate's files and which names which.
pub struct Graph {
    /// Paths relative to the crate's source directory, `/`-separated.
    pub files: Vec<String>,
    /// `(from, to)` indices into `files`.
    pub edges: BTreeSet<(usize, usize)>,
}

#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Reads every `.rs` file under `src` (a library crate: `lib.rs` is the root;
/// `main.rs` and `bin/` are other crates and left out).
pub fn read_crate(src: &Path) -> Result<Graph, Error> {
    let mut sources = Vec::new();
    collect(src, src, &mut sources)?;
    sources.sort();
    let mut files = Vec::new();
    let mut modules: HashMap<ModPath, Module> = HashMap::new();
    for (relative, path) in &sources {
        let text = std::fs::read_to_string(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
        let parsed = syn::parse_file(&text).map_err(|e| Error(format!("{}: {e}", path.display())))?;
        let file = files.len();
        files.push(relative.clone());
        let mut reader = Reader { file, stack: vec![module_path(relative)], modules: &mut modules };
        reader.module_mut().file = file;
        reader.visit_file(&parsed);
    }
    let mut edges = BTreeSet::new();
    let resolver = Resolver { modules: &modules };
    for (at, module) in &modules {
        for path in &module.paths {
            for target in resolver.files_named(at, path) {
                if std::env::var_os("IMPORTS_DEBUG").is_some() && target != module.file {
                    eprintln!("{} → {}: {}", files[module.file], files[target], path.join("::"));
                }
                if target != module.file {
                    edges.insert((module.file, target));
                }
            }
        }
    }
    Ok(Graph { files, edges })
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    for entry in entries {
        let path = entry.map_err(|e| Error(format!("{}: {e}", dir.display())))?.path();
        let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        if path.is_dir() {
            if relative != "bin" {
                collect(root, &path, out)?;
            }
        } else if relative.ends_with(".rs") && relative != "main.rs" {
            out.push((relative, path));
        }
    }
    Ok(())
}

/// `runs/mod.rs` → `["runs"]`, `runs/live.rs` → `["runs", "live"]`, `lib.rs` → `[]`.
fn module_path(relative: &str) -> ModPath {
    let stem = relative.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Walks one file, filling in the modules it holds.
struct Reader<'a> {
    file: usize,
    /// The module being read: the file's, then inline ones inside it.
    stack: Vec<ModPath>,
    modules: &'a mut HashMap<ModPath, Module>,
}

impl Reader<'_> {
    fn module_mut(&mut self) -> &mut Module {
        let at = self.stack.last().cloned().unwrap_or_default();
        let file = self.file;
        self.modules.entry(at).or_insert_with(|| Module { file, ..Module::default() })
    }

    fn define(&mut self, ident: &syn::Ident) {
        self.module_mut().items.insert(ident.to_string());
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut path = prefix.clone();
                // `use a::b::{self}` names `a::b`.
                if name != "self" {
                    path.push(name.clone());
                }
                let alias = path.last().cloned().unwrap_or(name);
                self.import(alias, path, public);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                self.import(r.rename.to_string(), path, public);
            }
            syn::UseTree::Glob(_) => {
                let module = self.module_mut();
                module.globs.push(prefix.clone());
                if public {
                    module.public_globs.push(prefix.clone());
                } else {
                    module.paths.push(prefix.clone());
                }
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree, public);
                }
            }
        }
    }

    fn import(&mut self, alias: String, path: Vec<String>, public: bool) {
        let module = self.module_mut();
        // A re-export is the module's interface, followed by whoever names it
        // through here; it makes an edge only where this file's own code uses it.
        if public {
            module.public.insert(alias.clone());
        } else {
            module.paths.push(path.clone());
        }
        module.imports.insert(alias, path);
    }

    /// Paths inside a macro's tokens (`view! { <crate::pages::Foo/> }`): every
    /// run of `ident :: ident …`.
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) => {
                    if colons != 2 {
                        self.macro_path(&mut current);
                    }
                    current.push(ident.to_string());
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                other => {
                    self.macro_path(&mut current);
                    colons = 0;
                    if let proc_macro2::TokenTree::Group(g) = other {
                        self.macro_tokens(g.stream());
                    }
                }
            }
        }
        self.macro_path(&mut current);
    }

    fn macro_path(&mut self, current: &mut Vec<String>) {
        if current.len() > 1 {
            self.module_mut().paths.push(std::mem::take(current));
        }
        current.clear();
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
}

fn is_public(vis: &syn::Visibility) -> bool {
    !matches!(vis, syn::Visibility::Inherited)
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            _ => &Vec::new(),
        };
        if is_cfg_test(attrs) {
            return;
        }
        match item {
            syn::Item::Fn(i) => self.define(&i.sig.ident),
            syn::Item::Struct(i) => self.define(&i.ident),
            syn::Item::Enum(i) => self.define(&i.ident),
            syn::Item::Union(i) => self.define(&i.ident),
            syn::Item::Trait(i) => self.define(&i.ident),
            syn::Item::TraitAlias(i) => self.define(&i.ident),
            syn::Item::Type(i) => self.define(&i.ident),
            syn::Item::Const(i) => self.define(&i.ident),
            syn::Item::Static(i) => self.define(&i.ident),
            syn::Item::Macro(i) => {
                if let Some(ident) = &i.ident {
                    self.define(ident);
                }
            }
            syn::Item::Mod(m) => {
                self.define(&m.ident);
                if let Some((_, items)) = &m.content {
                    let mut inner = self.stack.last().cloned().unwrap_or_default();
                    inner.push(m.ident.to_string());
                    self.stack.push(inner);
                    self.module_mut();
                    for item in items {
                        self.visit_item(item);
                    }
                    self.stack.pop();
                }
                return;
            }
            syn::Item::Use(u) => {
                self.use_tree(&mut Vec::new(), &u.tree, is_public(&u.vis));
                return;
            }
            _ => {}
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // Single names too: `Store` in `impl Store` is what `use super::Store` brought in.
        let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.module_mut().paths.push(segments);
        syn::visit::visit_path(self, path);
    }

    /// `pub(super)` and `pub(in crate::x)` say who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

struct Resolver<'a> {
    modules: &'a HashMap<ModPath, Module>,
}

impl Resolver<'_> {
    /// The files a path written in module `at` names (none for other crates' items).
    fn files_named(&self, at: &ModPath, path: &[String]) -> Vec<usize> {
        let Some(absolute) = self.absolute(at, path, 0) else { return Vec::new() };
        self.defining_file(&absolute, 0).into_iter().collect()
    }

    /// The path from the crate root, or `None` if it leaves the crate.
    fn absolute(&self, at: &ModPath, path: &[String], depth: usize) -> Option<Vec<String>> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some(path[1..].to_vec()),
            "self" => Some(at.iter().chain(&path[1..]).cloned().collect()),
            "super" => {
                let mut base = at.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            _ => {
                let mut child = at.clone();
                child.push(first.clone());
                if self.modules.contains_key(&child) {
                    return Some(at.iter().chain(path).cloned().collect());
                }
                let module = self.modules.get(at)?;
                if path.len() == 1 && module.items.contains(first) {
                    return Some(at.iter().chain(path).cloned().collect());
                }
                if depth < 8
                    && let Some(imported) = module.imports.get(first)
                    && imported.len() > 1
                {
                    let base = self.absolute(at, imported, depth + 1)?;
                    return Some(base.into_iter().chain(path[1..].iter().cloned()).collect());
                }
                None
            }
        }
    }

    /// The file that defines the item at `absolute`, following re-exports.
    fn defining_file(&self, absolute: &[String], depth: usize) -> Option<usize> {
        // The deepest module on the path.
        let mut module_len = 0;
        for len in (0..=absolute.len()).rev() {
            if self.modules.contains_key(&absolute[..len].to_vec()) {
                module_len = len;
                break;
            }
        }
        let at: ModPath = absolute[..module_len].to_vec();
        let module = self.modules.get(&at)?;
        let Some(name) = absolute.get(module_len) else { return Some(module.file) };
        if module.items.contains(name) || depth > 8 {
            return Some(module.file);
        }
        let rest = &absolute[module_len + 1..];
        if let Some(target) = module.imports.get(name) {
            // Re-exported from another crate: this module is the interface
            // the name was reached through, so naming it imports this file.
            let Some(target) = self.absolute(&at, target, 0) else { return Some(module.file) };
            let full: Vec<String> = target.into_iter().chain(rest.iter().cloned()).collect();
            return self.defining_file(&full, depth + 1).or(Some(module.file));
        }
        let mut external_glob = false;
        for glob in &module.globs {
            let Some(base) = self.absolute(&at, glob, 0) else {
                external_glob = true;
                continue;
            };
            let Some(source) = self.modules.get(&base) else { continue };
            if source.items.contains(name) || source.imports.contains_key(name) {
                let full: Vec<String> =
                    base.into_iter().chain(std::iter::once(name.clone())).chain(rest.iter().cloned()).collect();
                return self.defining_file(&full, depth + 1);
            }
        }
        // Not defined here, and brought in whole from another crate: reached
        // through this module, so an import of this file (a re-export is one).
        if external_glob {
            return Some(module.file);
        }
        // Not found here (a method, an enum variant, something a macro made): the module's file.
        Some(module.file)
    }
}

impl Graph {
    /// Every circle: files that name each other, directly or around a loop,
    /// each sorted, largest first.
    pub fn circles(&self) -> Vec<Vec<&str>> {
        let mut components: Vec<Vec<&str>> = strongly_connected(self.files.len(), &self.edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut names: Vec<&str> = c.into_iter().map(|i| self.files[i].as_str()).collect();
                names.sort();
                names
            })
            .collect();
        components.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        components
    }

    /// One loop inside `circle`, as file names (`a → b → a`): where to start reading.
    pub fn a_loop(&self, circle: &[&str]) -> Vec<String> {
        let index: HashMap<&str, usize> = self.files.iter().enumerate().map(|(i, f)| (f.as_str(), i)).collect();
        let members: BTreeSet<usize> = circle.iter().filter_map(|f| index.get(f).copied()).collect();
        let Some(&start) = members.iter().next() else { return Vec::new() };
        // Breadth-first from `start` back to it, inside the circle.
        let mut previous: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            for &(from, to) in self.edges.range((at, 0)..=(at, usize::MAX)) {
                debug_assert_eq!(from, at);
                if !members.contains(&to) {
                    continue;
                }
                if to == start {
                    let mut path = vec![at];
                    while let Some(&p) = previous.get(path.last().unwrap_or(&start)) {
                        path.push(p);
                    }
                    path.reverse();
                    path.push(start);
                    return path.into_iter().map(|i| self.files[i].clone()).collect();
                }
                if to != start && !previous.contains_key(&to) {
                    previous.insert(to, at);
                    queue.push_back(to);
                }
            }
        }
        Vec::new()
    }
}

/// Tarjan's algorithm, iteratively (no recursion depth to worry about).
fn strongly_connected(n: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut adjacency = vec![Vec::new(); n];
    for &(a, b) in edges {
        adjacency[a].push(b);
    }
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adjacency[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// A report for people: each circle with one loop through it.
pub fn report(name: &str, graph: &Graph) -> String {
    let circles = graph.circles();
    let in_circles: usize = circles.iter().map(Vec::len).sum();
    let mut out = format!(
        "{name}: {} files, {} import edges, {} circles ({} files in them)\n",
        graph.files.len(),
        graph.edges.len(),
        circles.len(),
        in_circles
    );
    for circle in &circles {
        out.push_str(&format!("  circle of {}: {}\n", circle.len(), circle.join(", ")));
        out.push_str(&format!("    e.g. {}\n", graph.a_loop(circle).join(" → ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("imports-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_child_calling_its_parent_that_uses_the_child_is_a_circle() {
        let dir = temp("parent");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod runs;"),
                (
                    "runs/mod.rs",
                    "mod runner; pub use runner::Runner; pub fn helper() {} fn f() { let _ = runner::start(); }",
                ),
                ("runs/runner.rs", "pub struct Runner; pub fn start() { super::helper() }"),
            ],
        );
        let graph = read_crate(&dir).unwrap();
        assert_eq!(graph.circles(), vec![vec!["runs/mod.rs", "runs/runner.rs"]]);
    }

    #[test]
    fn a_name_re_exported_from_another_crate_imports_the_file_that_re_exports_it() {
        // snippet.rs re-exports the domain's types and uses annotation.rs's view;
        // annotation.rs names a domain type through snippet.rs: a circle, which
        // following the name to the other crate would miss.
        let dir = temp("external");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod steps;"),
                ("steps/mod.rs", "pub mod snippet; pub mod annotation;"),
                ("steps/snippet.rs", "pub use domain::snippet::*; fn f() { super::annotation::view() }"),
                ("steps/annotation.rs", "pub fn view() { let _ = super::snippet::NewAnnotation {}; }"),
            ],
        );
        let graph = read_crate(&dir).unwrap();
        assert_eq!(graph.circles(), vec![vec!["steps/annotation.rs", "steps/snippet.rs"]]);
        // Named from the other crate itself, there is no circle.
        write(&dir, &[("steps/annotation.rs", "pub fn view() { let _ = domain::snippet::NewAnnotation {}; }")]);
        assert!(read_crate(&dir).unwrap().circles().is_empty());
    }

    #[test]
    fn re_exports_are_followed_to_the_defining_file() {
        let dir = temp("facade");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod runs; pub mod notebook;"),
                ("runs/mod.rs", "mod runner; pub use runner::Runner;"),
                ("runs/runner.rs", "pub struct Runner; fn f(_: crate::notebook::Service) {}"),
                ("notebook.rs", "use crate::runs::Runner; pub struct Service(Runner);"),
            ],
        );
        let graph = read_crate(&dir).unwrap();
        // notebook → runner → notebook, but not through runs/mod.rs.
        assert_eq!(graph.circles(), vec![vec!["notebook.rs", "runs/runner.rs"]]);
        let loop_ = graph.a_loop(&graph.circles()[0]);
        assert_eq!(loop_.first(), loop_.last());
    }

    #[test]
    fn paths_in_macros_and_through_use_aliases_count_and_tests_do_not() {
        let dir = temp("macros");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod pages; pub mod model; pub mod db;"),
                ("pages.rs", "fn f() { view! { <crate::model::Thing/> } }"),
                ("model.rs", "use crate::db; pub struct Thing; fn g() -> db::Store { todo!() }"),
                (
                    "db.rs",
                    "pub struct Store; #[cfg(test)] mod tests { use crate::pages::*; fn t() { crate::pages::f() } }",
                ),
            ],
        );
        let graph = read_crate(&dir).unwrap();
        let named: BTreeSet<(&str, &str)> =
            graph.edges.iter().map(|&(a, b)| (graph.files[a].as_str(), graph.files[b].as_str())).collect();
        assert!(named.contains(&("pages.rs", "model.rs")), "{named:?}");
        assert!(named.contains(&("model.rs", "db.rs")), "{named:?}");
        assert!(!named.iter().any(|(from, _)| *from == "db.rs"), "{named:?}");
        assert!(graph.circles().is_empty());
    }

    #[test]
    fn who_may_see_an_item_is_not_what_it_uses() {
        let dir = temp("visibility");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod policy;"),
                ("policy/mod.rs", "mod roles; pub use roles::Role; fn f(_: roles::Role) {}"),
                ("policy/roles.rs", "pub enum Role {} pub(super) fn role() {} pub(in crate::policy) fn other() {}"),
            ],
        );
        let graph = read_crate(&dir).unwrap();
        assert!(graph.circles().is_empty(), "{}", report("x", &graph));
        assert_eq!(graph.edges.len(), 1);
    }

    #[test]
    fn tarjan_finds_separate_components() {
        let edges: BTreeSet<(usize, usize)> = [(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (4, 5)].into();
        let mut found: Vec<Vec<usize>> = strongly_connected(6, &edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|mut c| {
                c.sort();
                c
            })
            .collect();
        found.sort();
        assert_eq!(found, vec![vec![0, 1], vec![2, 3, 4]]);
    }
}
