//! A generated catalogue, for trying search on thousands of tools: each tool has a
//! distinct name, a sentence of description and five typed parameters, drawn from
//! a varied vocabulary by a fixed pseudo-random sequence (the same tools every
//! run). Each schema is made the first time something reads it
//! (`ToolBuilder::params_schema_with`), so a start with thousands of tools makes
//! only those its first listing shows. `cargo run --example server -- --extra-tools
//! 10000` serves them; `benches/search.rs` searches them; `benches/cold_start.rs`
//! times a start with them.

use serde_json::{Map, Value, json};
use toolfunc::{ToolError, ToolFunc};

const VERBS: &[&str] = &[
    "fetch",
    "list",
    "create",
    "update",
    "delete",
    "archive",
    "restore",
    "export",
    "import",
    "sync",
    "validate",
    "approve",
    "reject",
    "assign",
    "schedule",
    "cancel",
    "merge",
    "split",
    "publish",
    "translate",
    "summarise",
    "classify",
    "rank",
    "forecast",
    "estimate",
    "convert",
    "compress",
    "encrypt",
    "sign",
    "verify",
    "notify",
    "invite",
    "refund",
    "charge",
    "ship",
    "track",
    "audit",
    "tag",
    "rename",
    "clone",
    "resize",
    "transcode",
    "index",
    "search",
    "monitor",
    "restart",
    "deploy",
    "rollback",
    "scale",
    "backup",
    "lock",
    "unlock",
    "rotate",
    "measure",
    "compare",
    "reconcile",
    "annotate",
    "escalate",
    "snooze",
    "subscribe",
];

const NOUNS: &[&str] = &[
    "invoice",
    "customer",
    "order",
    "payment",
    "refund",
    "shipment",
    "parcel",
    "warehouse",
    "product",
    "price",
    "discount",
    "coupon",
    "cart",
    "subscription",
    "plan",
    "account",
    "user",
    "team",
    "role",
    "permission",
    "token",
    "session",
    "password",
    "document",
    "folder",
    "file",
    "image",
    "video",
    "audio",
    "transcript",
    "caption",
    "message",
    "thread",
    "channel",
    "email",
    "calendar",
    "meeting",
    "room",
    "ticket",
    "incident",
    "alert",
    "metric",
    "dashboard",
    "report",
    "chart",
    "query",
    "table",
    "column",
    "schema",
    "database",
    "backup",
    "snapshot",
    "volume",
    "cluster",
    "node",
    "container",
    "pod",
    "service",
    "endpoint",
    "route",
    "domain",
    "certificate",
    "secret",
    "key",
    "repository",
    "branch",
    "commit",
    "release",
    "build",
    "pipeline",
    "artifact",
    "package",
    "license",
    "contract",
    "employee",
    "payroll",
    "expense",
    "budget",
    "forecast",
    "ledger",
    "tax",
    "vendor",
    "supplier",
    "lead",
    "opportunity",
    "campaign",
    "audience",
    "survey",
    "feedback",
    "review",
    "rating",
    "article",
    "page",
    "comment",
    "post",
    "feed",
    "notification",
    "device",
    "sensor",
    "reading",
    "location",
    "route",
    "vehicle",
    "driver",
    "trip",
    "flight",
    "booking",
    "hotel",
    "weather",
    "station",
    "patient",
    "appointment",
    "prescription",
    "lab",
    "sample",
    "experiment",
    "model",
    "dataset",
    "label",
    "prompt",
    "embedding",
    "translation",
    "language",
    "glossary",
    "recipe",
    "ingredient",
    "menu",
    "table",
    "reservation",
    "course",
    "lesson",
    "student",
    "grade",
    "assignment",
    "quiz",
];

const ADJECTIVES: &[&str] = &[
    "active",
    "archived",
    "pending",
    "overdue",
    "recent",
    "draft",
    "public",
    "private",
    "shared",
    "failed",
    "successful",
    "urgent",
    "scheduled",
    "expired",
    "verified",
    "flagged",
    "duplicate",
    "missing",
    "primary",
    "secondary",
    "monthly",
    "weekly",
    "daily",
    "annual",
    "regional",
    "global",
    "local",
    "remote",
    "encrypted",
    "compressed",
    "large",
    "small",
    "new",
    "old",
    "open",
    "closed",
    "approved",
    "rejected",
    "disputed",
    "paid",
    "unpaid",
    "partial",
    "external",
    "internal",
    "temporary",
    "permanent",
    "default",
    "custom",
    "critical",
    "minor",
];

const TYPES: [&str; 5] = ["string", "integer", "number", "boolean", "array"];

/// A fixed pseudo-random sequence (xorshift64*), seeded by the tool's number.
#[derive(Clone, Copy)]
struct Words(u64);

impl Words {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn pick(&mut self, list: &[&'static str]) -> &'static str {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let n = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33;
        // `n` is below 2^31: it fits any `usize` this runs on.
        list[usize::try_from(n).unwrap_or_default() % list.len()]
    }
}

/// The first `count` generated tools.
pub(crate) fn tools(count: usize) -> impl Iterator<Item = Result<ToolFunc, ToolError>> {
    (0..count).map(tool)
}

/// The `n`th generated tool: `{verb}_{noun}_{n}`, answering its name and arguments.
pub(crate) fn tool(n: usize) -> Result<ToolFunc, ToolError> {
    let mut words = Words::new(n as u64);
    let verb = words.pick(VERBS);
    let noun = words.pick(NOUNS);
    // Words joined by hand, not with `format!`: ten thousand tools feel it at start.
    let name = join(&[verb, "_", noun, "_", &n.to_string()]);
    let description = join(&[
        &capitalised(verb),
        " the ",
        words.pick(ADJECTIVES),
        " ",
        noun,
        " of a ",
        words.pick(ADJECTIVES),
        " ",
        words.pick(NOUNS),
        " for the ",
        words.pick(NOUNS),
        ".",
    ]);
    let answer = name.clone();
    ToolFunc::builder(name)
        .description(description)
        // Made the first time a listing, a search or a call needs it, from where the
        // sequence stands now: a start with thousands of these makes none of them.
        .params_schema_with(move || params(words))
        .handler_sync(move |_, args| Ok(json!({"tool": answer, "args": args})))
        .build()
}

/// The parameters schema of a tool: five typed parameters drawn from `words`.
fn params(mut words: Words) -> Value {
    let mut properties = Map::new();
    for kind in TYPES {
        let mut param = words.pick(NOUNS).to_owned();
        while properties.contains_key(&param) {
            param = join(&[words.pick(ADJECTIVES), "_", &param]);
        }
        let text = join(&[
            "The ",
            words.pick(ADJECTIVES),
            " ",
            words.pick(NOUNS),
            " to ",
            words.pick(VERBS),
            ".",
        ]);
        // Built as maps, not with `json!`: `json!` serialises a variable into a copy,
        // which ten thousand tools would feel at start.
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from(kind));
        match kind {
            "array" => {
                let mut items = Map::new();
                items.insert("type".into(), Value::from("string"));
                schema.insert("items".into(), Value::Object(items));
            }
            "integer" => {
                schema.insert("minimum".into(), Value::from(0));
            }
            _ => {}
        }
        schema.insert("description".into(), Value::String(text));
        properties.insert(param, Value::Object(schema));
    }
    // The first two parameters are required.
    let required: Vec<Value> = properties
        .keys()
        .take(2)
        .cloned()
        .map(Value::from)
        .collect();
    let mut params = Map::new();
    params.insert("type".into(), Value::from("object"));
    params.insert("properties".into(), Value::Object(properties));
    params.insert("required".into(), Value::Array(required));
    Value::Object(params)
}

/// `count` queries of one to three words of the same vocabulary, the way people
/// and models ask (`"refund invoice"`, `"overdue payment customer"`), every tenth one
/// a tool's exact name.
#[allow(dead_code)] // the bench's; the example server takes queries over HTTP
pub(crate) fn queries(count: usize, tools: usize) -> Vec<String> {
    let mut words = Words::new(0x00C0_FFEE);
    (0..count)
        .map(|i| {
            if i % 10 == 9 {
                let n = (i * 7919) % tools.max(1);
                let mut named = Words::new(n as u64);
                let verb = named.pick(VERBS);
                return format!("{verb}_{}_{n}", named.pick(NOUNS));
            }
            match i % 3 {
                0 => words.pick(NOUNS).to_owned(),
                1 => format!("{} {}", words.pick(VERBS), words.pick(NOUNS)),
                _ => format!(
                    "{} {} {}",
                    words.pick(ADJECTIVES),
                    words.pick(NOUNS),
                    words.pick(NOUNS)
                ),
            }
        })
        .collect()
}

fn join(parts: &[&str]) -> String {
    let mut joined = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        joined.push_str(part);
    }
    joined
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
