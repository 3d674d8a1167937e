//! Items used by the code that `#[tool]` and `#[tool_service]` generate. Not public
//! API: no semver guarantees; do not use directly.

pub use ::futures::future::BoxFuture;
pub use ::inventory;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json::{self, Map, Value};

pub use crate::error::convert;
pub use crate::schema::{field_order, result_schema_of, schema_of};
pub use crate::tool::service::{
    HookHandler, KindSpec, MethodHandler, MethodSpec, ServiceEntry, ServiceParts, ServiceSpec,
    ToolService,
};
pub use crate::tool::{
    Annotations, Answer, ItemStream, SpecHandler, ToolSpec, failed_future, to_output,
};
pub use ::futures::future::LocalBoxFuture;
pub use ::futures::stream::BoxStream;
pub use ::std::borrow::Cow;
pub use ::std::sync::Arc;

/// The `Answer` a `#[tool]` returns: only the crate's own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `toolfunc::Answer`",
    label = "a #[tool] returning `Answer` answers a stream or one value",
    note = "to return a type of your own named `Answer` as a value, name it by another path (`self::Answer`)"
)]
pub trait IsAnswer {}
impl IsAnswer for Answer {}

/// Checks, at the return type, that an `Answer` is toolfunc's.
pub const fn assert_answer<T: IsAnswer + ?Sized>() {}

/// Chosen for `toolfunc::Answer`.
pub trait ViaAnswer<T> {
    fn answer(&self, value: T) -> Answer;
}

impl ViaAnswer<Answer> for &Checked<Answer> {
    fn answer(&self, value: Answer) -> Answer {
        value
    }
}

/// Chosen for the others (a compile error is reported already).
pub trait FallbackAnswer<T> {
    fn answer(&self, value: T) -> Answer;
}

impl<T> FallbackAnswer<T> for Checked<T> {
    fn answer(&self, _: T) -> Answer {
        ::core::unreachable!("reported at compile time by assert_answer")
    }
}

/// The arguments object of a client call: `args` serialised, with `act`.
pub fn client_args<T: ClientArg + ?Sized>(args: &T, act: &str) -> Result<Value, ToolError> {
    let mut value = ::serde_json::to_value(args).map_err(|e| {
        ToolError::arguments(
            "",
            ::std::format!("the arguments cannot be serialised: {e}"),
        )
    })?;
    match &mut value {
        Value::Object(map) => {
            map.insert("act".into(), Value::String(act.into()));
        }
        _ => {
            return Err(ToolError::arguments(
                "",
                "the arguments must serialise to a JSON object",
            ));
        }
    }
    Ok(value)
}

/// One argument of a client call as JSON.
fn client_value<T: ::serde::Serialize>(value: &T) -> Result<Value, ToolError> {
    ::serde_json::to_value(value).map_err(|e| {
        ToolError::arguments(
            "",
            ::std::format!("the arguments cannot be serialised: {e}"),
        )
    })
}

/// The arguments object of a client call: its named values, with `act`; the
/// first value that could not be serialised is the error.
pub fn client_object<const N: usize>(
    act: &str,
    fields: [(&str, Result<Value, ToolError>); N],
) -> Result<Value, ToolError> {
    let mut map = ::serde_json::Map::new();
    for (name, value) in fields {
        map.insert(name.into(), value?);
    }
    map.insert("act".into(), Value::from(act));
    Ok(Value::Object(map))
}

/// A client call of `name` with `args` (or the error that built them) through
/// `transport`.
pub fn client_run(
    transport: &dyn crate::transport::Transport,
    name: &str,
    args: Result<Value, ToolError>,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    match args {
        Ok(args) => transport.run(name, args),
        Err(err) => failed_future(err),
    }
}

/// A client call's answer, read by `read` (a [`client_output`]) once `run` is
/// done. `T` has no bound here: `read` names it where the method's type is
/// written, for one error there when it cannot be read.
pub async fn client_result<T>(
    run: BoxFuture<'static, Result<Value, ToolError>>,
    read: fn(Value) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    read(run.await?)
}

/// A parameter type of a `#[tool_service]` method, as its typed client sends it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent by a #[tool_service] client",
    label = "the typed client needs `serde::Serialize` on this type",
    note = "derive `Serialize` for it, or turn the client off with #[tool_service(client = false)]"
)]
pub trait ClientArg: ::serde::Serialize {}
impl<T: ::serde::Serialize + ?Sized> ClientArg for T {}

/// Checks, at the parameter's type, that the client can send it.
pub const fn assert_client_arg<T: ClientArg + ?Sized>() {}

/// Chosen for client parameters that are `Serialize`.
pub trait ViaClientArg<T> {
    fn serialize_arg<S: ::serde::Serializer>(
        &self,
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error>;
    /// The value as JSON, for the arguments object.
    fn client_value(&self, value: &T) -> Result<Value, ToolError>;
}

impl<T: ::serde::Serialize> ViaClientArg<T> for &Checked<T> {
    fn serialize_arg<S: ::serde::Serializer>(
        &self,
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        ::serde::Serialize::serialize(value, serializer)
    }
    fn client_value(&self, value: &T) -> Result<Value, ToolError> {
        client_value(value)
    }
}

/// Chosen for the others (a compile error is reported already).
pub trait FallbackClientArg<T> {
    fn serialize_arg<S: ::serde::Serializer>(
        &self,
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error>;
    fn client_value(&self, value: &T) -> Result<Value, ToolError>;
}

impl<T> FallbackClientArg<T> for Checked<T> {
    fn serialize_arg<S: ::serde::Serializer>(&self, _: &T, _: S) -> Result<S::Ok, S::Error> {
        ::core::unreachable!("reported at compile time by assert_client_arg")
    }
    fn client_value(&self, _: &T) -> Result<Value, ToolError> {
        ::core::unreachable!("reported at compile time by assert_client_arg")
    }
}

/// The result type of a typed client method.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a #[tool_service] client",
    label = "the typed client needs `serde::Deserialize` on this type",
    note = "derive `Deserialize` for it, or turn the client off with #[tool_service(client = false)]"
)]
pub trait ClientOutput: ::serde::de::DeserializeOwned {}
impl<T: ::serde::de::DeserializeOwned> ClientOutput for T {}

/// A client call's result as `T` (`OUTPUT` when it does not fit).
pub fn client_output<T: ClientOutput>(value: Value) -> Result<T, ToolError> {
    ::serde_json::from_value(value).map_err(|e| ToolError::Output {
        path: None,
        message: ::std::format!("the result does not match the method's type: {e}"),
    })
}

/// A client stream's items as `T`.
pub fn client_stream<T: ClientOutput + Send + 'static>(
    items: BoxStream<'static, Result<Value, ToolError>>,
) -> BoxStream<'static, Result<T, ToolError>> {
    ::std::boxed::Box::pin(StreamExt::map(items, |item| {
        item.and_then(client_output::<T>)
    }))
}

/// A client stream that fails at once.
pub fn client_failed_stream<T: Send + 'static>(
    err: ToolError,
) -> BoxStream<'static, Result<T, ToolError>> {
    ::std::boxed::Box::pin(::futures::stream::once(::core::future::ready(Err(err))))
}

/// Registers a `#[tool_service]` type in the global registry only when it is
/// `Default` (autoref specialisation on the concrete type).
pub struct DefaultProbe<S>(::core::marker::PhantomData<S>);

impl<S> DefaultProbe<S> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(::core::marker::PhantomData)
    }
}

/// Chosen for `Default` services.
pub trait ViaDefault {
    fn service_tool(&self) -> Option<Result<ServiceParts, ToolError>>;
}

impl<S: ToolService + Default> ViaDefault for &DefaultProbe<S> {
    fn service_tool(&self) -> Option<Result<ServiceParts, ToolError>> {
        Some(ServiceParts::of(S::default()))
    }
}

/// Chosen for the others.
pub trait NoDefault {
    fn service_tool(&self) -> Option<Result<ServiceParts, ToolError>>;
}

impl<S> NoDefault for DefaultProbe<S> {
    fn service_tool(&self) -> Option<Result<ServiceParts, ToolError>> {
        None
    }
}
pub use ::futures::stream::{Stream, StreamExt};

/// Boxes a tool's item stream.
pub fn box_stream<S>(stream: S) -> ItemStream
where
    S: Stream<Item = Result<Value, ToolError>> + Send + 'static,
{
    ::std::boxed::Box::pin(stream)
}
pub use crate::error::ToolError;
pub use crate::exec::ctx::Ctx;
pub use ::core::option::Option::{self, None, Some};
pub use ::core::result::Result::{self, Err, Ok};

/// A handler future that can move between threads: every async tool's, unless it
/// is `local`.
#[diagnostic::on_unimplemented(
    message = "the future of this async tool is not `Send`",
    label = "it holds something that is not `Send` across an `.await`",
    note = "drop the `Rc`, `RefCell` or other `!Send` value before the `.await`, or mark the tool `#[tool(local)]` to run it on toolfunc's local executor"
)]
pub trait SendFuture: ::core::future::Future + Send {}
impl<F: ::core::future::Future + Send + ?Sized> SendFuture for F {}

/// Boxes a handler future. (A compile error here means the tool's future is not
/// `Send`; rustc prints the bound's line, so it carries the way out.)
pub fn box_future<F>(future: F) -> BoxFuture<'static, F::Output>
where
    F: SendFuture + 'static, // not `Send`? drop the `Rc`/`RefCell` before `.await`, or use `#[tool(local)]`
{
    ::std::boxed::Box::pin(future)
}

/// Boxes an async function's future when it is `Send` (autoref dispatch on the
/// future's type, made by a function of its own so that the type is known here).
pub struct FutureProbe<F>(::core::marker::PhantomData<fn() -> F>);

impl<F> FutureProbe<F> {
    pub const fn of(_: &F) -> Self {
        Self(::core::marker::PhantomData)
    }
}

/// Chosen for `Send` futures: every async tool's, unless it is `local`.
pub trait ViaSendFuture<F: ::core::future::Future> {
    fn boxed_future(&self, future: F) -> BoxFuture<'static, F::Output>;
}

impl<F: ::core::future::Future + Send + 'static> ViaSendFuture<F> for &FutureProbe<F> {
    fn boxed_future(&self, future: F) -> BoxFuture<'static, F::Output> {
        ::std::boxed::Box::pin(future)
    }
}

/// What a future that is not `Send` lacks: the error under an async function whose
/// future holds something that is not `Send` across an `.await`.
#[diagnostic::on_unimplemented(
    message = "the future of this async function is not `Send`",
    label = "it holds a value that is not `Send` across an `.await`",
    note = "drop the `Rc`, `RefCell` borrow or other value that is not `Send` before the `.await`, or run the function on toolfunc's local executor: `#[tool(local)]` (`#[prompt(local)]`, `#[resource(local)]`)"
)]
pub trait LocalOnly {}

/// No future is `LocalOnly`: the bound of the fallback below is the error.
pub enum NotAFuture {}
#[diagnostic::do_not_recommend]
impl LocalOnly for NotAFuture {}

/// Chosen for futures that are not `Send`: an error at compile time.
pub trait FallbackLocalFuture<F: ::core::future::Future> {
    fn boxed_future(&self, future: F) -> BoxFuture<'static, F::Output>
    where
        F: LocalOnly;
}

impl<F: ::core::future::Future> FallbackLocalFuture<F> for FutureProbe<F> {
    fn boxed_future(&self, _: F) -> BoxFuture<'static, F::Output>
    where
        F: LocalOnly,
    {
        ::core::unreachable!("reported at compile time: the future is not `Send`")
    }
}

/// A `#[tool(local)]` handler's call: `make` builds the (not `Send`) future on
/// the local executor.
pub fn run_local(
    ctx: Ctx,
    args: Value,
    make: fn(Ctx, Value) -> ::futures::future::LocalBoxFuture<'static, Result<Value, ToolError>>,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    crate::local::run(ctx, args, ::std::boxed::Box::new(make))
}

/// Boxes a `#[tool(local)]` handler's future (which need not be `Send`).
pub fn box_local<F>(future: F) -> ::futures::future::LocalBoxFuture<'static, F::Output>
where
    F: ::core::future::Future + 'static,
{
    ::std::boxed::Box::pin(future)
}

/// A parameter type of a `#[tool]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a #[tool] function",
    label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
    note = "derive both: #[derive(serde::Deserialize, schemars::JsonSchema)]"
)]
pub trait ToolParam {}
impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ToolParam for T {}

/// Checks, at the parameter's type, that it can be a tool parameter.
pub const fn assert_param<T: ToolParam + ?Sized>() {}

/// How a tool's arguments are read into its parameters type: what `ViaParams`
/// does, and what the macro calls directly for a type it knows to fit (every
/// field a standard type: `String`, `i64`, `Vec<bool>`...), with no autoref
/// probing for the compiler to do and no checks to expand.
pub fn parse_plain<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema>(
    args: &Value,
) -> Result<T, ToolError> {
    crate::schema::parse_args_of::<T>(args, schema_of::<T>)
}

/// How a tool's result becomes JSON: what `ViaOutput` does, and what the macro
/// calls directly for a standard result type.
pub fn output_plain<T: ToolOutput>(value: T) -> Result<Value, ToolError> {
    to_output(&value)
}

/// The output type of a `#[tool]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a #[tool] function",
    label = "this type must implement `serde::Serialize` and `schemars::JsonSchema`",
    note = "derive both: #[derive(serde::Serialize, schemars::JsonSchema)]"
)]
pub trait ToolOutput: ::serde::Serialize + ::schemars::JsonSchema {}
impl<T: ::serde::Serialize + ::schemars::JsonSchema + ?Sized> ToolOutput for T {}

/// Checks, at the return type (a stream's item type), that it can be a result.
pub const fn assert_output<T: ToolOutput + ?Sized>() {}

/// Autoref dispatch over the user's parameter and result types. A type that lacks
/// the traits takes the `Fallback*` impl, which never runs: `assert_param` and
/// `assert_output` in the same expansion already report it under the user's type,
/// so one mistake gives one error instead of one per use.
pub struct Checked<T>(::core::marker::PhantomData<fn() -> T>);

impl<T> Checked<T> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(::core::marker::PhantomData)
    }
}

/// Chosen for parameters types that are `Deserialize` and `JsonSchema`.
pub trait ViaParams<T> {
    fn parse_args(&self, args: &Value) -> Result<T, ToolError>;
    fn params_schema(&self) -> Value;
    fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String>;
}

impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ViaParams<T> for &Checked<T> {
    fn parse_args(&self, args: &Value) -> Result<T, ToolError> {
        parse_plain(args)
    }
    fn params_schema(&self) -> Value {
        schema_of::<T>()
    }
    fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String> {
        field_order::<T>(schema)
    }
}

/// Chosen for the others (a compile error is reported already).
pub trait FallbackParams<T> {
    fn parse_args(&self, args: &Value) -> Result<T, ToolError>;
    fn params_schema(&self) -> Value;
    fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String>;
}

impl<T> FallbackParams<T> for Checked<T> {
    fn parse_args(&self, _: &Value) -> Result<T, ToolError> {
        ::core::unreachable!("reported at compile time by assert_param")
    }
    fn params_schema(&self) -> Value {
        ::core::unreachable!("reported at compile time by assert_param")
    }
    fn param_order(&self, _: &Value) -> ::std::vec::Vec<::std::string::String> {
        ::core::unreachable!("reported at compile time by assert_param")
    }
}

/// Chosen for result types that are `Serialize` and `JsonSchema`.
pub trait ViaOutput<T> {
    fn output(&self, value: T) -> Result<Value, ToolError>;
    fn result_schema(&self) -> Value;
}

impl<T: ToolOutput> ViaOutput<T> for &Checked<T> {
    fn output(&self, value: T) -> Result<Value, ToolError> {
        output_plain(value)
    }
    fn result_schema(&self) -> Value {
        result_schema_of::<T>()
    }
}

/// Chosen for the others (a compile error is reported already).
pub trait FallbackOutput<T> {
    fn output(&self, value: T) -> Result<Value, ToolError>;
    fn result_schema(&self) -> Value;
}

impl<T> FallbackOutput<T> for Checked<T> {
    fn output(&self, _: T) -> Result<Value, ToolError> {
        ::core::unreachable!("reported at compile time by assert_output")
    }
    fn result_schema(&self) -> Value {
        ::core::unreachable!("reported at compile time by assert_output")
    }
}

/// A parameter taken as the call context.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is taken as the call context because it is named `Ctx`",
    label = "#[tool] injects `toolfunc::Ctx` into parameters named `Ctx` or `&Ctx`",
    note = "import `toolfunc::Ctx`, or rename your own type"
)]
pub trait IsCtx {}
impl IsCtx for Ctx {}
impl IsCtx for &Ctx {}

/// Checks, at the parameter's type, that a `Ctx` parameter is toolfunc's.
pub const fn assert_ctx<T: IsCtx + ?Sized>() {}

/// The error type of a `#[tool]` function returning `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error of a #[tool] function",
    label = "this type must implement `std::fmt::Display` (or be a `ToolError`)",
    note = "implement `Display` or `std::error::Error`, or return `ToolError`"
)]
pub trait ToolFailure {}
impl<E: ::core::fmt::Display + ?Sized> ToolFailure for E {}

/// Checks, at the error type, that it can become a `ToolError`.
pub const fn assert_error<E: ToolFailure + ?Sized>() {}

pub use crate::complete::{Completion, CompletionRequest};
pub use crate::prompt::PromptSpec;
pub use crate::resource::ResourceSpec;

/// What a completer named in `complete(arg = function)` returns.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be what a completer returns",
    label = "a completer returns a `Completion`, or anything `Into<Completion>`",
    note = "a completer is a `fn(&CompletionRequest) -> Completion` (or `-> Vec<String>`, `-> Vec<&str>`)"
)]
pub trait IntoCompletion {
    fn into_completion(self) -> Completion;
}
impl<C: Into<Completion>> IntoCompletion for C {
    fn into_completion(self) -> Completion {
        self.into()
    }
}

/// A completer's answer as a `Completion`.
pub fn into_completion<C: IntoCompletion>(value: C) -> Completion {
    value.into_completion()
}

/// A parameter type of a `#[prompt]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an argument of a #[prompt] function",
    label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
    note = "derive both: #[derive(serde::Deserialize, schemars::JsonSchema)]"
)]
pub trait PromptParam {}
impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> PromptParam for T {}

/// Checks, at the parameter's type, that it can be a prompt's argument.
pub const fn assert_prompt_param<T: PromptParam + ?Sized>() {}

/// A parameter type of a `#[resource]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a variable of a #[resource] function",
    label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
    note = "use `String`, a number, or a type deriving both"
)]
pub trait ResourceParam {}
impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ResourceParam for T {}

/// Checks, at the parameter's type, that it can be a template's variable.
pub const fn assert_resource_param<T: ResourceParam + ?Sized>() {}

/// The output type of a `#[prompt]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the answer of a #[prompt] function",
    label = "a prompt answers with messages",
    note = "return a `String`, a `PromptMessage`, a `Vec<PromptMessage>` or a `PromptResult`"
)]
pub trait PromptOutput: ::serde::Serialize {}
impl<T: ::serde::Serialize + ?Sized> PromptOutput for T {}

/// Checks, at the return type, that a prompt's answer serialises.
pub const fn assert_prompt_output<T: PromptOutput + ?Sized>() {}

/// The output type of a `#[resource]` function.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the contents of a #[resource] function",
    label = "this type must implement `serde::Serialize`",
    note = "return a `String` (text), a `Vec<u8>` (a blob), a `toolfunc::content::Resource`, or a `Serialize` value (its JSON text)"
)]
pub trait ResourceOutput: ::serde::Serialize {}
impl<T: ::serde::Serialize + ?Sized> ResourceOutput for T {}

/// Checks, at the return type, that a resource's contents serialise.
pub const fn assert_resource_output<T: ResourceOutput + ?Sized>() {}

/// Chosen for prompt and resource results that are `Serialize`.
pub trait ViaSerialized<T> {
    fn serialized(&self, value: T) -> Result<Value, ToolError>;
}

impl<T: ::serde::Serialize> ViaSerialized<T> for &Checked<T> {
    fn serialized(&self, value: T) -> Result<Value, ToolError> {
        to_output(&value)
    }
}

/// Chosen for the others (a compile error is reported already).
pub trait FallbackSerialized<T> {
    fn serialized(&self, value: T) -> Result<Value, ToolError>;
}

impl<T> FallbackSerialized<T> for Checked<T> {
    fn serialized(&self, _: T) -> Result<Value, ToolError> {
        ::core::unreachable!(
            "reported at compile time by assert_prompt_output or assert_resource_output"
        )
    }
}

/// `check_output` of `#[tool]`: `true` with the `validate` feature, which checks each
/// result against its JSON Schema; without it, a compile error at the word.
#[cfg(feature = "validate")]
#[doc(hidden)]
#[macro_export]
macro_rules! __toolfunc_check_output {
    () => {
        true
    };
}

/// `check_output` of `#[tool]`: `true` with the `validate` feature, which checks each
/// result against its JSON Schema; without it, a compile error at the word.
#[cfg(not(feature = "validate"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __toolfunc_check_output {
    () => {
        ::core::compile_error!(
            "`check_output` checks each result against its JSON Schema, which needs toolfunc's `validate` feature"
        )
    };
}

pub use crate::__toolfunc_check_output as check_output;
