//! `Scope`: what the calls of one runner share (the caller's options over an enclosing
//! runner's or call's), resolved once when the runner is made.

use std::any::{Any, TypeId};
use std::sync::Arc;
use std::time::Duration;

use crate::time::Instant;

use tokio_util::sync::{CancellationToken, DropGuard};

use crate::ask::AnswerFn;
use crate::identity::Identity;
use crate::layer::{Extensions, Layer, Layers, Viewer};
use crate::options::{Binding, CallOptions, CollectLimit, LogFn, ProgressFn, Surface};

/// What the calls of one runner share: resolved once when the runner is made.
#[derive(Clone, Default)]
pub(crate) struct Scope(pub(super) Option<Arc<ScopeData>>);

pub(crate) struct ScopeData {
    pub(super) binding: Binding,
    extensions: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
    /// Outer layers' extensions, searched after these.
    parent: Option<Arc<ScopeData>>,
    pub(super) caller: Option<Arc<str>>,
    pub(super) identity: Option<Identity>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) cancel: Vec<CancellationToken>,
    /// With several cancellation sources: one token that fires when any does, kept
    /// by a watcher task that lives as long as this scope.
    merged: Option<(CancellationToken, DropGuard)>,
    /// The id of the call that nested calls belong to.
    pub(super) call_id: Option<Arc<str>>,
    pub(super) progress: Option<ProgressFn>,
    pub(super) log: Option<LogFn>,
    pub(super) answer: Option<AnswerFn>,
    collect_limit: Option<CollectLimit>,
    surface: Option<Surface>,
    /// Call middleware of the runner (and its outer runners), outermost first.
    layers: Option<Layers>,
}

impl ScopeData {
    pub(super) fn overlay(parent: Option<&Arc<ScopeData>>, options: CallOptions) -> Self {
        let CallOptions {
            binding,
            extensions,
            caller,
            identity,
            call_id,
            timeout,
            cancel,
            progress,
            log,
            answer,
            collect_limit,
            surface,
        } = options;
        let inherited = |f: fn(&ScopeData) -> Option<Duration>| parent.and_then(|p| f(p));
        let timeout = match (timeout, inherited(|p| p.timeout)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            binding: binding
                .or_else(|| parent.map(|p| p.binding))
                .unwrap_or_default(),
            extensions,
            parent: parent.cloned(),
            caller: caller.or_else(|| parent.and_then(|p| p.caller.clone())),
            identity: identity.or_else(|| parent.and_then(|p| p.identity.clone())),
            timeout,
            deadline: parent.and_then(|p| p.deadline),
            cancel: parent
                .map(|p| p.cancel.clone())
                .unwrap_or_default()
                .into_iter()
                .chain(cancel)
                .collect(),
            merged: None,
            call_id: call_id.or_else(|| parent.and_then(|p| p.call_id.clone())),
            progress: progress.or_else(|| parent.and_then(|p| p.progress.clone())),
            log: log.or_else(|| parent.and_then(|p| p.log.clone())),
            answer: answer.or_else(|| parent.and_then(|p| p.answer.clone())),
            collect_limit: collect_limit.or_else(|| parent.and_then(|p| p.collect_limit)),
            surface: surface.or_else(|| parent.and_then(|p| p.surface)),
            layers: parent.and_then(|p| p.layers.clone()),
        }
    }

    /// With several cancellation sources, makes one token that follows them all (when
    /// a tokio runtime can run the watcher); calls then derive their token from it.
    pub(super) fn merge_cancellation(&mut self) {
        if self.cancel.len() < 2 {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let merged = CancellationToken::new();
        let alive = CancellationToken::new();
        let sources: Vec<_> = self
            .cancel
            .iter()
            .map(|t| Box::pin(t.clone().cancelled_owned()))
            .collect();
        let (target, stop) = (merged.clone(), alive.clone());
        runtime.spawn(async move {
            let any = futures::future::select_all(sources);
            if let futures::future::Either::Right(_) =
                futures::future::select(Box::pin(stop.cancelled_owned()), any).await
            {
                target.cancel();
            }
        });
        self.merged = Some((merged, alive.drop_guard()));
    }

    /// The one token a call's token derives from, if there is one.
    pub(super) fn parent_token(&self) -> Option<&CancellationToken> {
        match (self.cancel.as_slice(), &self.merged) {
            ([one], _) => Some(one),
            (_, Some((merged, _))) => Some(merged),
            _ => None,
        }
    }

    fn get(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        let mut layer = Some(self);
        while let Some(data) = layer {
            if let Some((_, value)) = data.extensions.iter().rev().find(|(t, _)| *t == id) {
                return Some(&**value);
            }
            layer = data.parent.as_deref();
        }
        None
    }
}

impl Scope {
    pub(crate) const fn none() -> Self {
        Self(None)
    }

    pub(crate) fn with(&self, options: CallOptions) -> Self {
        let mut data = ScopeData::overlay(self.0.as_ref(), options);
        data.merge_cancellation();
        Self(Some(Arc::new(data)))
    }

    /// This scope with `layer` added after its own.
    pub(crate) fn with_layer(&self, layer: Arc<dyn Layer>) -> Self {
        let mut data = ScopeData::overlay(self.0.as_ref(), CallOptions::new());
        data.merge_cancellation();
        let layers = data.layers.iter().flat_map(|l| l.iter().cloned());
        data.layers = Some(layers.chain(std::iter::once(layer)).collect());
        Self(Some(Arc::new(data)))
    }

    /// The runner's layers, outermost first.
    pub(crate) fn layers(&self) -> Option<&Layers> {
        self.0.as_ref().and_then(|d| d.layers.as_ref())
    }

    pub(crate) fn surface(&self) -> Surface {
        self.0.as_ref().and_then(|d| d.surface).unwrap_or_default()
    }

    pub(crate) fn viewer(&self) -> Viewer<'_> {
        Viewer::new(
            self.0.as_ref().and_then(|d| d.caller.as_deref()),
            self.0.as_ref().and_then(|d| d.identity.as_ref()),
            self.surface(),
            self,
        )
    }

    pub(crate) fn data(&self) -> Option<&Arc<ScopeData>> {
        self.0.as_ref()
    }

    pub(super) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_ref()?.get(TypeId::of::<T>())?.downcast_ref::<T>()
    }

    /// The deadline of an enclosing call, for calls nested in it.
    pub(crate) fn inherited_deadline(&self) -> Option<Instant> {
        self.0.as_ref().and_then(|d| d.deadline)
    }

    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.0.as_ref().and_then(|d| d.timeout)
    }

    /// The bound on collecting a stream into one value, for calls of this scope.
    pub(crate) fn collect_limit(&self) -> CollectLimit {
        self.0
            .as_ref()
            .and_then(|d| d.collect_limit)
            .unwrap_or_default()
    }

    pub(crate) fn cancel_sources(&self) -> &[CancellationToken] {
        self.0.as_ref().map_or(&[], |d| d.cancel.as_slice())
    }

    /// The sources a running call must watch itself: none when its token derives
    /// from them (one source, or several merged).
    pub(crate) fn unmerged_sources(&self) -> &[CancellationToken] {
        match self.0.as_deref() {
            Some(data) if data.parent_token().is_none() => &data.cancel,
            _ => &[],
        }
    }

    pub(super) fn any_cancelled(&self) -> bool {
        self.cancel_sources()
            .iter()
            .any(CancellationToken::is_cancelled)
    }
}

impl Extensions for Scope {
    fn extension(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        self.0.as_ref()?.get(id)
    }
}
