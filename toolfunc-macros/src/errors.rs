//! The error collector every phase writes to, so one build reports every mistake; a
//! leaf module that depends on no other phase.

/// Collects errors and combines them.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
