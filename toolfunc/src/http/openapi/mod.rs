//! The OpenAPI 3.1 document of an [`Api`](super::Api), served at `GET <prefix>/openapi.json`.
//!
//! It is built from the definitions in the registry (tools are known only at run
//! time) and kept until any registry changes, so serving it costs one lookup and a
//! copy of a reference-counted buffer.
//!
//! What it says, operation by operation, is what [`respond`](super::respond) accepts:
//!
//! * a plain tool is `POST <prefix>/<tool>` with its arguments as the JSON body, and
//!   also `GET <prefix>/<tool>?p=<JSON>` when it is read-only (or the API lets GET
//!   write);
//! * a service with `$` acts is one `POST <prefix>/<service>` whose body is a
//!   `oneOf` of one schema per act, each with `act` as a required `const` (the
//!   `discriminator`). OpenAPI has one operation per path and method, and the act
//!   travels in the body, so the acts cannot be operations of their own: each is
//!   listed under `x-toolfunc-acts` with its own `operationId`, request and
//!   response schemas;
//! * a REST resource maps its verbs: `GET <prefix>/<res>` (`list`),
//!   `GET <prefix>/<res>/{id}` (`get`), `POST <prefix>/<res>` (`post`, and its `$`
//!   acts as above), `PUT`/`PATCH`/`DELETE <prefix>/<res>/{id}` (or without `{id}`
//!   when the method takes no `id`);
//! * the two forms the JavaScript clients send a resource's `put` (or `patch`)
//!   in are operations too, marked `deprecated` and `x-toolfunc-compat`:
//!   `PUT <res>` with the id in the body (the 0.1.1 client) and `POST <res>/{id}`
//!   naming the act (the 1.x client, in `act` or `rpc-act`);
//! * each path lists exactly the methods the server answers there, and any other
//!   answers 405 with them in `Allow` (so does `OPTIONS`, with 204); an act that
//!   does not fit the method and path (`PUT` naming `post`) is 400 at `/act`;
//! * tool schemas become `components/schemas` entries (`add.Params`,
//!   `users.get.Result`); their `$defs` are lifted beside them, namespaced by tool
//!   (`users.NewUser`), and every `$ref` is rewritten to match;
//! * what the server does beyond a tool's schema is written into it: an integer's
//!   `format` (`uint64`) gets the bounds of its Rust type, a number in a result may
//!   be `null` (a non-finite one is sent so), an act that the HTTP method names may
//!   be left out or `null`, and with [`Api::json_only`](super::Api::json_only) a
//!   body is required (a body-less POST is refused with 415).

mod builtins;
mod components;
mod doc;
mod document;
mod kept;
mod schemas;
mod security;
#[cfg(test)]
mod tests;
mod tools;

pub(super) use builtins::FILE;
pub(super) use kept::response;
