//! The catalogue: what a registry offers callers from outside, made once per
//! registry generation and read by every listing (HTTP discovery, OpenAPI, MCP
//! `tools/list`, NATS endpoints) and by [`find`](super::find). (`llm::tools` exports
//! the program's own tools, `api = false` ones included: it does not read it.)

use std::sync::Arc;

use crate::registry::Registry;
use crate::tool::ToolDefinition;

/// The tools of one registry generation, in name order (as advertised: an authored
/// `summary` replaces the description), and the functions they make.
pub(crate) struct Catalog {
    #[cfg_attr(
        not(any(feature = "http-server", feature = "mcp", feature = "nats")),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    tools: Vec<Arc<ToolDefinition>>,
    functions: Vec<Function>,
    /// Every scope a tool or act offered remotely declares, sorted, each once.
    #[cfg_attr(
        not(any(feature = "http-server", feature = "mcp")),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    scopes: Vec<String>,
}

/// One function: a tool that is not a service, or one act of a service named
/// `{service}_{method}`.
pub(crate) struct Function {
    /// The function's name.
    pub(crate) name: String,
    /// The tool that runs it.
    pub(crate) tool: String,
    /// The act of that tool it runs, by index.
    pub(crate) act: Option<usize>,
    /// Whether remote callers may reach it (its tool's `api`).
    pub(crate) api: bool,
    /// Its definition as a function (an act flattened into one of its own); a tool
    /// that is not a service shares its tool's.
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    pub(crate) definition: Arc<ToolDefinition>,
}

/// The key the catalogue is kept under in its registry.
#[derive(PartialEq)]
struct Key;

impl Catalog {
    /// The catalogue of `registry` as it is now: kept until any registry changes.
    pub(crate) fn of(registry: &Registry) -> Arc<Catalog> {
        match registry.derived(Key, || Ok(Arc::new(Self::new(registry)))) {
            Ok(catalog) => catalog,
            // `make` above cannot fail; an empty catalogue offers nothing.
            Err(_) => Arc::new(Self {
                tools: Vec::new(),
                functions: Vec::new(),
                scopes: Vec::new(),
            }),
        }
    }

    fn new(registry: &Registry) -> Self {
        let tools = registry.advertised_definitions();
        let mut functions = Vec::new();
        for (index, def) in tools.iter().enumerate() {
            if def.acts.is_empty() {
                functions.push((index, None, Arc::clone(def)));
            }
            for (act_index, act) in def.acts.iter().enumerate() {
                functions.push((index, Some(act_index), Arc::new(act.as_function(def))));
            }
        }
        // Same name: the tool (no act) before the method, and only it is kept, as
        // a call by that name runs the tool.
        functions.sort_by(|(_, a_act, a), (_, b_act, b)| {
            a.name
                .cmp(&b.name)
                .then(a_act.is_some().cmp(&b_act.is_some()))
        });
        functions.dedup_by(|(_, _, later), (_, _, kept)| later.name == kept.name);
        let functions = functions
            .into_iter()
            .map(|(index, act, definition)| Function {
                name: definition.name.clone(),
                tool: tools[index].name.clone(),
                act,
                api: tools[index].api,
                definition,
            })
            .collect();
        let mut scopes: Vec<String> = tools
            .iter()
            .filter(|def| def.api)
            .flat_map(|def| {
                def.scopes
                    .iter()
                    .chain(def.acts.iter().flat_map(|a| &a.scopes))
            })
            .cloned()
            .collect();
        scopes.sort_unstable();
        scopes.dedup();
        Self {
            tools,
            functions,
            scopes,
        }
    }

    /// Every scope the tools and acts offered remotely declare, sorted: what the
    /// protected-resource metadata lists as `scopes_supported`.
    #[cfg(any(feature = "http-server", feature = "mcp"))]
    pub(crate) fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The tools remote callers may reach (`api`), in name order.
    #[cfg(any(feature = "http-server", feature = "nats"))]
    pub(crate) fn tools(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools
            .iter()
            .map(|def| &**def)
            .filter(|def| offered(def))
    }

    /// The functions remote callers may reach, in name order.
    #[cfg(feature = "mcp")]
    pub(crate) fn functions(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().filter(|f| f.api)
    }

    /// The function named `name`, offered remotely or not.
    pub(crate) fn function(&self, name: &str) -> Option<&Function> {
        let at = self
            .functions
            .binary_search_by(|f| f.name.as_str().cmp(name))
            .ok()?;
        self.functions.get(at)
    }

    /// The tool named `name` (not an alias), offered remotely or not.
    #[cfg(feature = "mcp")]
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolDefinition> {
        let at = self
            .tools
            .binary_search_by(|def| def.name.as_str().cmp(name))
            .ok()?;
        self.tools.get(at).map(|def| &**def)
    }
}

/// Whether the catalogue offers the tool `def` to remote callers: its `api`.
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) fn offered(def: &ToolDefinition) -> bool {
    def.api
}
