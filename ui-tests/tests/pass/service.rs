//! A service under `#![no_implicit_prelude]`, with every kind of method, REST verbs,
//! skipped helpers and a typed client; deny(warnings) holds for the expansion.

#![no_implicit_prelude]
#![deny(warnings, missing_docs)]

mod svc {
    /// A store.
    #[derive(::core::default::Default)]
    pub struct Store {
        items: ::std::sync::Mutex<::std::vec::Vec<::std::string::String>>,
    }

    /// Stores strings.
    #[::toolfunc::tool_service(name = "store", alias = "st", tags = ["x"], timeout = "1s")]
    impl Store {
        /// Every item.
        pub fn list(&self) -> ::std::vec::Vec<::std::string::String> {
            self.items.lock().map(|i| ::core::clone::Clone::clone(&*i)).unwrap_or_default()
        }

        /// Adds one.
        pub async fn post(
            &self,
            ctx: &::toolfunc::Ctx,
            /// The item.
            val: ::std::string::String,
        ) -> ::core::result::Result<usize, ::toolfunc::ToolError> {
            let _ = ctx;
            let mut items = self.items.lock().map_err(|_| ::toolfunc::ToolError::failed("poisoned"))?;
            items.push(val);
            ::core::result::Result::Ok(items.len())
        }

        /// Counts up to `n`.
        #[tool(annotations(read_only))]
        pub fn count(
            self: ::std::sync::Arc<Self>,
            n: u64,
        ) -> impl ::futures::Stream<Item = u64> {
            ::futures::stream::iter(0..n)
        }

        /// Not exposed.
        #[tool(skip)]
        pub fn helper() -> u8 {
            1
        }
    }
}

fn main() {
    let client = svc::StoreClient::new(::core::clone::Clone::clone(::toolfunc::Registry::global()));
    let _ = &client;
    let _ = svc::Store::helper();
}
