//! Prompts and resources in a registry: kinds of their own beside the tools, each
//! found by its name (a prompt) or its URI (a resource, fixed or by template), up
//! the chain of registries as tools are.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use super::{Registry, RegistryEvent};
use crate::complete::Completers;
use crate::content::ResourceLink;
use crate::error::ToolError;
use crate::prompt::PromptFunc;
use crate::resource::ResourceFunc;
use crate::tool::service::KindTool;

/// The prompts and resources of one registry.
#[derive(Default)]
pub(super) struct Kinds {
    prompts: BTreeMap<String, Arc<PromptFunc>>,
    /// Fixed resources by URI.
    resources: BTreeMap<String, Arc<ResourceFunc>>,
    /// Templates, in the order they were registered (the first that makes a URI
    /// reads it).
    templates: Vec<Arc<ResourceFunc>>,
}

impl Kinds {
    /// The `#[prompt]` and `#[resource]` functions of the program, and the
    /// methods of its `Default` services (`services`, by where each service is
    /// declared); what cannot be built or clashes is told in `problems`.
    pub(super) fn from_inventory(
        services: Vec<(&'static str, Vec<KindTool>)>,
        problems: &mut Vec<String>,
    ) -> Self {
        let mut kinds = Self::default();
        for (location, made) in services {
            for kind in made {
                let added = Made::of(kind)
                    .map_err(|err| err.to_string())
                    .and_then(|made| kinds.add(made));
                if let Err(why) = added {
                    problems.push(format!("{why} (at {location})"));
                }
            }
        }
        for spec in inventory::iter::<crate::prompt::PromptSpec> {
            let added = spec
                .build()
                .map_err(|err| err.to_string())
                .and_then(|prompt| kinds.add_prompt(prompt));
            if let Err(why) = added {
                problems.push(format!("{why} (at {})", spec.tool.location));
            }
        }
        for spec in inventory::iter::<crate::resource::ResourceSpec> {
            let added = spec
                .build()
                .map_err(|err| err.to_string())
                .and_then(|resource| kinds.add_resource(resource));
            if let Err(why) = added {
                problems.push(format!("{why} (at {})", spec.tool.location));
            }
        }
        kinds
    }

    /// Why a prompt named `name` cannot be added here, if it cannot.
    fn prompt_clash(&self, name: &str) -> Option<String> {
        self.prompts
            .contains_key(name)
            .then(|| format!("two prompts are named `{name}`"))
    }

    /// Why `resource` cannot be added here, if it cannot.
    fn resource_clash(&self, resource: &ResourceFunc) -> Option<String> {
        let address = resource.address();
        let taken = if resource.template().is_some() {
            self.templates.iter().any(|t| t.address() == address)
        } else {
            self.resources.contains_key(address)
        };
        taken.then(|| format!("two resources are at `{address}`"))
    }

    pub(super) fn add_prompt(&mut self, prompt: PromptFunc) -> Result<(), String> {
        if let Some(why) = self.prompt_clash(prompt.name()) {
            return Err(why);
        }
        self.prompts
            .insert(prompt.name().to_owned(), Arc::new(prompt));
        Ok(())
    }

    pub(super) fn add_resource(&mut self, resource: ResourceFunc) -> Result<(), String> {
        if let Some(why) = self.resource_clash(&resource) {
            return Err(why);
        }
        let address = resource.address().to_owned();
        let resource = Arc::new(resource);
        if resource.template().is_some() {
            self.templates.push(resource);
        } else {
            self.resources.insert(address, resource);
        }
        Ok(())
    }
}

/// A service's `#[prompt]` or `#[resource]` method, made into what it declares.
pub(super) enum Made {
    Prompt(PromptFunc),
    Resource(ResourceFunc),
}

impl Made {
    pub(super) fn of(kind: KindTool) -> Result<Self, ToolError> {
        let completers = Completers::of(kind.completers);
        match kind.uri {
            None => PromptFunc::with_completers(kind.tool, completers).map(Made::Prompt),
            Some(uri) => ResourceFunc::with_completers(uri, kind.mime_type, kind.tool, completers)
                .map(Made::Resource),
        }
    }
}

impl Kinds {
    /// Why `made` cannot be added here, if it cannot.
    fn clash(&self, made: &Made) -> Option<String> {
        match made {
            Made::Prompt(prompt) => self.prompt_clash(prompt.name()),
            Made::Resource(resource) => self.resource_clash(resource),
        }
    }

    pub(super) fn add(&mut self, made: Made) -> Result<(), String> {
        match made {
            Made::Prompt(prompt) => self.add_prompt(prompt),
            Made::Resource(resource) => self.add_resource(resource),
        }
    }
}

impl Registry {
    /// Registers a service's prompts and resources, all or none: `CONFLICT` (and
    /// none registered) when one clashes with what is here.
    pub(super) fn register_made(&self, made: Vec<Made>) -> Result<(), ToolError> {
        if made.is_empty() {
            return Ok(());
        }
        if self.is_sealed() {
            let name = match &made[0] {
                Made::Prompt(prompt) => prompt.name().to_owned(),
                Made::Resource(resource) => resource.address().to_owned(),
            };
            return Err(ToolError::Sealed { name });
        }
        let (mut prompts, mut resources) = (false, false);
        {
            let mut kinds = self.kinds_mut();
            let mut staged = Kinds::default();
            for one in made {
                if let Some(why) = kinds.clash(&one) {
                    return Err(ToolError::conflict(why));
                }
                match &one {
                    Made::Prompt(_) => prompts = true,
                    Made::Resource(_) => resources = true,
                }
                staged.add(one).map_err(ToolError::conflict)?;
            }
            kinds.prompts.append(&mut staged.prompts);
            kinds.resources.append(&mut staged.resources);
            kinds.templates.append(&mut staged.templates);
        }
        if prompts {
            self.changed(RegistryEvent::PromptsChanged);
        }
        if resources {
            self.changed(RegistryEvent::ResourcesChanged);
        }
        Ok(())
    }

    /// Takes a service's prompts and resources out again (its tool was refused).
    pub(super) fn unregister_made(&self, names: &[(bool, String)]) {
        for (prompt, name) in names {
            if *prompt {
                self.unregister_prompt(name);
            } else {
                self.unregister_resource(name);
            }
        }
    }

    fn kinds(&self) -> std::sync::RwLockReadGuard<'_, Kinds> {
        // No user code runs under the lock: a poisoned lock still holds a consistent map.
        self.inner
            .kinds
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn kinds_mut(&self) -> std::sync::RwLockWriteGuard<'_, Kinds> {
        self.inner
            .kinds
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a prompt. `CONFLICT` when a prompt of that name is registered here
    /// already, `SEALED` on a sealed registry. Subscribers see
    /// [`RegistryEvent::PromptsChanged`].
    ///
    /// ```
    /// use toolfunc::prompt::PromptFunc;
    /// use toolfunc::Registry;
    ///
    /// let registry = Registry::new();
    /// let hello = PromptFunc::builder("hello").handler_sync(|_, _| Ok("Say hello.")).build().unwrap();
    /// registry.register_prompt(hello).unwrap();
    /// assert_eq!(registry.prompt_definitions()[0].name, "hello");
    /// ```
    pub fn register_prompt(&self, prompt: PromptFunc) -> Result<(), ToolError> {
        if self.is_sealed() {
            return Err(ToolError::Sealed {
                name: prompt.name().to_owned(),
            });
        }
        self.kinds_mut()
            .add_prompt(prompt)
            .map_err(ToolError::conflict)?;
        self.changed(RegistryEvent::PromptsChanged);
        Ok(())
    }

    /// Takes a prompt out of this registry; whether it was here.
    pub fn unregister_prompt(&self, name: &str) -> bool {
        if self.is_sealed() {
            return false;
        }
        let removed = self.kinds_mut().prompts.remove(name).is_some();
        if removed {
            self.changed(RegistryEvent::PromptsChanged);
        }
        removed
    }

    /// The prompt named `name`, here or up the chain.
    pub fn get_prompt(&self, name: &str) -> Option<Arc<PromptFunc>> {
        let mut at = Some(self);
        while let Some(registry) = at {
            if let Some(prompt) = registry.kinds().prompts.get(name) {
                return Some(Arc::clone(prompt));
            }
            at = registry.parent();
        }
        None
    }

    /// Every prompt reachable here, by name (one shadowed up the chain appears once,
    /// as its shadow).
    pub(crate) fn prompts(&self) -> Vec<Arc<PromptFunc>> {
        let mut all: BTreeMap<String, Arc<PromptFunc>> = BTreeMap::new();
        let mut at = Some(self);
        while let Some(registry) = at {
            for (name, prompt) in &registry.kinds().prompts {
                all.entry(name.clone())
                    .or_insert_with(|| Arc::clone(prompt));
            }
            at = registry.parent();
        }
        all.into_values().collect()
    }

    /// The definitions of every prompt reachable here, by name.
    pub fn prompt_definitions(&self) -> Vec<crate::prompt::PromptDefinition> {
        self.prompts()
            .iter()
            .map(|p| p.definition().clone())
            .collect()
    }

    /// Registers a resource or a resource template. `CONFLICT` when one is at the
    /// same URI (or template) here already, `SEALED` on a sealed registry.
    /// Subscribers see [`RegistryEvent::ResourcesChanged`].
    pub fn register_resource(&self, resource: ResourceFunc) -> Result<(), ToolError> {
        if self.is_sealed() {
            return Err(ToolError::Sealed {
                name: resource.address().to_owned(),
            });
        }
        self.kinds_mut()
            .add_resource(resource)
            .map_err(ToolError::conflict)?;
        self.changed(RegistryEvent::ResourcesChanged);
        Ok(())
    }

    /// Takes the resource at `address` (a fixed URI or a template, as registered)
    /// out of this registry; whether it was here.
    pub fn unregister_resource(&self, address: &str) -> bool {
        if self.is_sealed() {
            return false;
        }
        let removed = {
            let mut kinds = self.kinds_mut();
            let before = kinds.templates.len();
            kinds.templates.retain(|t| t.address() != address);
            kinds.resources.remove(address).is_some() || kinds.templates.len() != before
        };
        if removed {
            self.changed(RegistryEvent::ResourcesChanged);
        }
        removed
    }

    /// The resource that reads `uri`: a fixed one at that URI, else the first
    /// template that makes it, here or up the chain (this registry's first).
    pub fn get_resource(&self, uri: &str) -> Option<Arc<ResourceFunc>> {
        let mut at = Some(self);
        while let Some(registry) = at {
            {
                let kinds = registry.kinds();
                if let Some(resource) = kinds.resources.get(uri) {
                    return Some(Arc::clone(resource));
                }
                if let Some(template) = kinds.templates.iter().find(|t| t.arguments(uri).is_some())
                {
                    return Some(Arc::clone(template));
                }
            }
            at = registry.parent();
        }
        None
    }

    /// Every fixed resource reachable here, by URI, then every template (this
    /// registry's first, each in the order registered).
    pub(crate) fn resources(&self) -> (Vec<Arc<ResourceFunc>>, Vec<Arc<ResourceFunc>>) {
        let mut fixed: BTreeMap<String, Arc<ResourceFunc>> = BTreeMap::new();
        let mut templates: Vec<Arc<ResourceFunc>> = Vec::new();
        let mut at = Some(self);
        while let Some(registry) = at {
            let kinds = registry.kinds();
            for (uri, resource) in &kinds.resources {
                fixed
                    .entry(uri.clone())
                    .or_insert_with(|| Arc::clone(resource));
            }
            for template in &kinds.templates {
                if !templates.iter().any(|t| t.address() == template.address()) {
                    templates.push(Arc::clone(template));
                }
            }
            drop(kinds);
            at = registry.parent();
        }
        (fixed.into_values().collect(), templates)
    }

    /// The definitions of every fixed resource reachable here (by URI), then of
    /// every template.
    pub fn resource_definitions(&self) -> Vec<crate::resource::ResourceDefinition> {
        let (fixed, templates) = self.resources();
        fixed
            .iter()
            .chain(&templates)
            .map(|r| r.definition().clone())
            .collect()
    }

    /// A link to the resource that reads `uri` (its name, description and MIME
    /// type filled in from its definition), for a tool's [`Content`](crate::Content)
    /// to point at it; `None` when no resource reads `uri`.
    ///
    /// ```
    /// use toolfunc::resource::ResourceFunc;
    /// use toolfunc::{Content, Registry};
    ///
    /// let registry = Registry::new();
    /// let logs = ResourceFunc::builder("file:///logs/{day}", "logs")
    ///     .mime_type("text/plain")
    ///     .handler_sync(|_, _| Ok("…"))
    ///     .build()
    ///     .unwrap();
    /// registry.register_resource(logs).unwrap();
    /// let link = registry.resource_link("file:///logs/2026-12-01").unwrap();
    /// assert_eq!(link.mime_type.as_deref(), Some("text/plain"));
    /// let answer = Content::text("See the log.").link(link);
    /// # let _ = answer;
    /// ```
    pub fn resource_link(&self, uri: &str) -> Option<ResourceLink> {
        let resource = self.get_resource(uri)?;
        let def = resource.definition();
        let mut link = ResourceLink::new(uri, def.name.clone());
        link.title.clone_from(&def.title);
        link.description.clone_from(&def.description);
        link.mime_type.clone_from(&def.mime_type);
        Some(link)
    }

    /// Tells subscribers that the resource at `uri` changed
    /// ([`RegistryEvent::ResourceUpdated`]): an MCP client that subscribed to it
    /// is sent `notifications/resources/updated`.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.changed(RegistryEvent::ResourceUpdated { uri: uri.into() });
    }

    fn changed(&self, event: RegistryEvent) {
        // The prompts and resources are part of what derived views show (the
        // OpenAPI document, whether any of them needs scopes): a change to their
        // lists makes those views anew, as a change to the tools does.
        if matches!(
            event,
            RegistryEvent::PromptsChanged | RegistryEvent::ResourcesChanged
        ) {
            super::cache::invalidate();
        }
        self.emit(event);
    }
}
