//! `#[tool(setup)]` and `#[tool(dispose)]` methods of a `#[tool_service]`: the
//! service tool's lifecycle hooks, sync or async. Setup runs when the service is
//! registered, before its first call (an async one holds calls until it finishes);
//! dispose runs when it is removed (`unregister`, `unregister_async`, `clear`, a
//! replacement). Neither is an act.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::timeout;
use toolfunc::{RegisterOptions, Registry, ToolError, UnregisterOptions, tool_service};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// What happened, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, entry: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry.to_owned());
    }

    fn entries(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

// ---------------------------------------------------------------------------------
// Sync hooks.

/// A connection opened at registration and closed at removal.
struct Db {
    log: Log,
    open: AtomicBool,
    fail_setup: bool,
}

impl Db {
    fn new(log: &Log) -> Self {
        Self {
            log: log.clone(),
            open: AtomicBool::new(false),
            fail_setup: false,
        }
    }
}

#[tool_service(name = "db", client = false)]
impl Db {
    /// Opens the connection.
    #[tool(setup)]
    fn connect(&self) -> Result<(), ToolError> {
        if self.fail_setup {
            return Err(ToolError::custom("NO_DB", 503, "the database is down"));
        }
        self.open.store(true, Ordering::SeqCst);
        self.log.push("setup");
        Ok(())
    }

    /// Whether the connection is open.
    fn status(&self) -> bool {
        self.log.push("call");
        self.open.load(Ordering::SeqCst)
    }

    #[tool(dispose)]
    fn close(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.log.push("dispose");
    }
}

#[tokio::test]
async fn sync_setup_runs_at_registration_and_dispose_at_removal() {
    let log = Log::default();
    let db = Arc::new(Db::new(&log));
    let registry = Registry::new();
    assert!(log.entries().is_empty(), "nothing runs before registration");

    assert!(
        registry
            .register_service::<Db>(Arc::clone(&db))
            .expect("registers")
    );
    assert_eq!(log.entries(), ["setup"]);
    assert_eq!(
        registry.run_sync("db", json!({"act": "$status"})).unwrap(),
        true
    );
    assert_eq!(
        registry.run("db", json!({"act": "status"})).await.unwrap(),
        true
    );
    assert_eq!(log.entries(), ["setup", "call", "call"]);

    // A second registration counts; only the last one taken back disposes.
    assert!(!registry.register_service::<Db>(Arc::clone(&db)).unwrap());
    assert!(registry.unregister("db"));
    assert_eq!(log.entries().last().map(String::as_str), Some("call"));
    assert!(registry.unregister("db"));
    assert_eq!(log.entries(), ["setup", "call", "call", "dispose"]);
    assert!(!db.open.load(Ordering::SeqCst));
    assert!(!registry.has("db"));

    // Registering again sets it up again; `clear` disposes it.
    registry.register_service::<Db>(Arc::clone(&db)).unwrap();
    assert!(db.open.load(Ordering::SeqCst));
    registry.clear().await.expect("clears");
    assert_eq!(
        log.entries(),
        ["setup", "call", "call", "dispose", "setup", "dispose"]
    );
}

#[tokio::test]
async fn setup_and_dispose_are_not_acts() {
    let registry = Registry::new();
    registry.register_service(Db::new(&Log::default())).unwrap();
    let tool = registry.get("db").expect("registered");
    assert_eq!(tool.definition().methods, ["$status"]);
    assert_eq!(tool.definition().acts.len(), 1);
    for act in ["$connect", "connect", "$close", "close"] {
        let err = registry.run("db", json!({"act": act})).await.unwrap_err();
        assert_eq!(err.code(), "UNKNOWN_ACT", "{act}: {err}");
    }
    // They stay ordinary methods.
    let db = Db::new(&Log::default());
    db.connect().unwrap();
    db.close();
}

#[tokio::test]
async fn a_failed_setup_refuses_the_registration() {
    let log = Log::default();
    let db = Db {
        fail_setup: true,
        ..Db::new(&log)
    };
    let registry = Registry::new();
    let err = registry.register_service(db).unwrap_err();
    assert_eq!(err.code(), "NO_DB");
    assert!(!registry.has("db"));
    assert!(
        log.entries().is_empty(),
        "no dispose for what was never set up"
    );
}

#[tokio::test]
async fn a_replacement_disposes_the_old_service() {
    let (old, new) = (Log::default(), Log::default());
    let registry = Registry::new();
    registry.register_service(Db::new(&old)).unwrap();
    registry
        .register_with(
            toolfunc::ToolFunc::from_service(Db::new(&new)).unwrap(),
            RegisterOptions::new().allow_override(true),
        )
        .unwrap();
    assert_eq!(old.entries(), ["setup", "dispose"]);
    assert_eq!(new.entries(), ["setup"]);
}

// ---------------------------------------------------------------------------------
// Async hooks.

/// A cache warmed asynchronously; its `self: Arc<Self>` hooks may keep it alive.
struct Cache {
    log: Log,
    warm: AtomicBool,
    /// Setup waits for this.
    go: Arc<Notify>,
    disposed: AtomicUsize,
}

#[tool_service(name = "cache", client = false)]
impl Cache {
    #[tool(setup)]
    async fn warm_up(self: Arc<Self>) -> Result<(), std::io::Error> {
        self.go.notified().await;
        tokio::task::yield_now().await;
        self.warm.store(true, Ordering::SeqCst);
        self.log.push("setup");
        Ok(())
    }

    /// Whether the cache was warm when called.
    async fn is_warm(&self) -> bool {
        tokio::task::yield_now().await;
        self.log.push("call");
        self.warm.load(Ordering::SeqCst)
    }

    #[tool(dispose)]
    async fn flush(&self) -> Result<(), String> {
        tokio::task::yield_now().await;
        self.disposed.fetch_add(1, Ordering::SeqCst);
        self.log.push("dispose");
        if self.disposed.load(Ordering::SeqCst) > 1 {
            return Err("flushed twice".to_owned());
        }
        Ok(())
    }
}

fn cache(log: &Log) -> (Arc<Cache>, Arc<Notify>) {
    let go = Arc::new(Notify::new());
    let cache = Arc::new(Cache {
        log: log.clone(),
        warm: AtomicBool::new(false),
        go: Arc::clone(&go),
        disposed: AtomicUsize::new(0),
    });
    (cache, go)
}

#[tokio::test]
async fn async_setup_holds_calls_until_it_finishes() {
    let log = Log::default();
    let (cache, go) = cache(&log);
    let registry = Registry::new();
    registry
        .register_service::<Cache>(Arc::clone(&cache))
        .unwrap();
    assert!(registry.has("cache"), "placed at once, pending");

    // While pending: a sync call is refused, an async one waits.
    let err = registry
        .run_sync("cache", json!({"act": "$is_warm"}))
        .unwrap_err();
    assert_eq!(err.code(), "NOT_READY");
    let waiting = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.run("cache", json!({"act": "$is_warm"})).await })
    };
    tokio::task::yield_now().await;
    assert!(log.entries().is_empty(), "the call waits for the setup");

    go.notify_one();
    let warm = timeout(LIMIT, waiting).await.unwrap().unwrap().unwrap();
    assert_eq!(warm, true, "the first call sees the finished setup");
    assert_eq!(log.entries(), ["setup", "call"]);
    timeout(LIMIT, registry.ready("cache"))
        .await
        .unwrap()
        .unwrap();

    // An async dispose, awaited and reported by `unregister_async`.
    let found = registry
        .unregister_async("cache", UnregisterOptions::new())
        .await
        .unwrap();
    assert!(found);
    assert_eq!(log.entries(), ["setup", "call", "dispose"]);
}

#[tokio::test]
async fn async_dispose_errors_are_reported() {
    let log = Log::default();
    let (cache, go) = cache(&log);
    go.notify_one();
    let registry = Registry::new();
    for round in 0..2 {
        registry
            .register_service::<Cache>(Arc::clone(&cache))
            .unwrap();
        timeout(LIMIT, registry.ready("cache"))
            .await
            .unwrap()
            .unwrap();
        if round == 0 {
            registry.clear().await.expect("the first flush succeeds");
        } else {
            let err = registry.clear().await.unwrap_err();
            assert_eq!(err.code(), "FAILED", "{err}");
            assert!(err.to_string().contains("flushed twice"), "{err}");
        }
        go.notify_one();
    }
    assert_eq!(cache.disposed.load(Ordering::SeqCst), 2);
    assert_eq!(
        registry.run("cache", Value::Null).await.unwrap_err().code(),
        "NOT_FOUND"
    );
}

/// How often `Warm`'s setup ran (it is in the global registry of this binary).
static WARM_SETUPS: AtomicUsize = AtomicUsize::new(0);

/// A `Default` service: registered globally by itself, set up there too.
#[derive(Default)]
struct Warm {
    ready: AtomicBool,
}

#[tool_service(name = "warm")]
impl Warm {
    #[tool(setup)]
    fn warm_up(&self) {
        WARM_SETUPS.fetch_add(1, Ordering::SeqCst);
        self.ready.store(true, Ordering::SeqCst);
    }

    /// Whether the setup ran before this call.
    fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_global_service_is_set_up_before_its_first_call() {
    let out = Registry::global()
        .run("warm", json!({"act": "$ready"}))
        .await
        .unwrap();
    assert_eq!(out, json!(true));
    assert_eq!(WARM_SETUPS.load(Ordering::SeqCst), 1);
}
