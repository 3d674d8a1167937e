//! The nats-server roles the project ships (`interop/nats/roles.conf`), on a real
//! server: workers and clients do their work, and a client user cannot publish
//! catalogue events, control another caller's call, write the result bucket or
//! read another owner's outcome.

#[path = "support/nats.rs"]
mod nats_server;
#[path = "support/process.rs"]
mod process;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::auth::ApiKeys;
use toolfunc::nats::async_nats::{self, ConnectOptions};
use toolfunc::nats::{Client, DurableSettings, Worker};
use toolfunc::{Identity, Registry, ToolFunc};

use nats_server::NatsServer;

const PASSWORDS: [(&str, &str); 3] = [
    ("TOOLFUNC_WORKER_PASSWORD", "worker-pass"),
    ("TOOLFUNC_ALICE_PASSWORD", "alice-pass"),
    ("TOOLFUNC_BOB_PASSWORD", "bob-pass"),
];

fn server() -> NatsServer {
    let roles = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/interop/nats/roles.conf"
    ))
    .expect("interop/nats/roles.conf");
    NatsServer::with_setup("include roles.conf", &[("roles.conf", roles)], &PASSWORDS)
}

/// A connection as `user`; clients read their answers in their own inbox.
async fn connect(server: &NatsServer, user: &str, password: &str) -> async_nats::Client {
    let mut options = ConnectOptions::with_user_and_password(user.into(), password.into());
    if user != "worker" {
        options = options.custom_inbox_prefix(format!("_INBOX.{user}"));
    }
    options.connect(server.url()).await.expect("a connection")
}

async fn client(server: &NatsServer, user: &str, password: &str) -> Client {
    Client::builder()
        .token(format!("{user}-key"))
        .attach(connect(server, user, password).await)
        .await
        .expect("the client loads the tools")
}

/// `echo`; `count`, a stream; `nap`, which notes its call id and runs 1.5 s.
fn catalog(ids: &Arc<Mutex<Vec<String>>>) -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("echo")
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("count")
                .stream_handler(|_ctx, _args| async {
                    Ok(futures::stream::iter((0..3).map(|n| Ok(json!(n)))))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let ids = Arc::clone(ids);
    registry
        .register(
            ToolFunc::builder("nap")
                .handler(move |ctx, _args| {
                    ids.lock()
                        .unwrap()
                        .push(ctx.call_id().unwrap_or_default().to_owned());
                    async move {
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        Ok(json!("done"))
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

#[tokio::test]
async fn the_shipped_roles_keep_clients_to_their_own_calls() {
    let server = server();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let worker = Worker::builder(catalog(&ids))
        .authenticate(
            ApiKeys::new()
                .key("alice-key", Identity::new("alice"))
                .key("bob-key", Identity::new("bob")),
        )
        .durable(DurableSettings::new())
        .inbox_per_subject(true)
        .start(connect(&server, "worker", "worker-pass").await)
        .await
        .expect("a worker starts under the worker role");
    let alice = client(&server, "alice", "alice-pass").await;
    let bob_nats = connect(&server, "bob", "bob-pass").await;
    let bob = Client::builder()
        .token("bob-key")
        .attach(bob_nats.clone())
        .await
        .unwrap();

    // The normal flows: a call, a stream, a durable call and its outcome.
    assert_eq!(
        alice.run("echo", json!({"x": 1})).await.unwrap(),
        json!({"x": 1})
    );
    let items: Vec<Value> = alice
        .run_stream("count", json!({}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, [json!(0), json!(1), json!(2)]);
    let id = alice.submit("echo", json!({"kept": true})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), alice.wait(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, json!({"kept": true}));

    // Alice cancels a durable call of hers (the roles let her ask).
    let queued = alice.submit("nap", json!({})).await.unwrap();
    let cancelled = alice.cancel(&queued).await.unwrap();
    assert!(
        cancelled["status"] == "cancelling" || cancelled["status"] == "completed",
        "{cancelled}"
    );

    bob_cannot_point_answers_at_alices_inbox(&worker, &bob_nats).await;

    // Bob cannot read Alice's outcome, through the workers or the bucket.
    assert_eq!(bob.poll(&id).await.unwrap_err().code(), "NOT_FOUND");
    let js = async_nats::jetstream::new(bob_nats.clone());
    let opened = tokio::time::timeout(Duration::from_secs(1), js.get_key_value("toolfunc_results"));
    assert!(
        !matches!(opened.await, Ok(Ok(_))),
        "bob opened the result bucket"
    );

    bob_cannot_write_the_bucket(&server, &bob_nats, &alice, &id).await;
    bob_cannot_announce_a_catalogue(&server, &bob_nats).await;

    // Bob cannot control Alice's call, even knowing its id.
    let call = tokio::spawn({
        let alice = alice.clone();
        async move { alice.run("nap", json!({})).await }
    });
    for _ in 0..250 {
        if !ids.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let call_id = ids.lock().unwrap()[0].clone();
    for subject in [
        "toolfunc.ctl".to_owned(),
        format!("toolfunc.ctl.{}", worker.id()),
    ] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Authorization", "Bearer bob-key");
        headers.insert("Tf-Call-Id", call_id.as_str());
        headers.insert("Tf-Control-Key", "a guess");
        headers.insert("Tf-Cancel", "not yours");
        bob_nats
            .publish_with_headers(subject, headers, "".into())
            .await
            .unwrap();
    }
    bob_nats.flush().await.unwrap();
    assert_eq!(call.await.unwrap().unwrap(), json!("done"));
    // Nor can he listen where calls travel.
    let mut snoop = bob_nats.subscribe("toolfunc.call.>").await.unwrap();
    bob_nats.flush().await.unwrap();
    assert_eq!(
        alice.run("echo", json!({"x": 2})).await.unwrap(),
        json!({"x": 2})
    );
    let heard = tokio::time::timeout(Duration::from_millis(300), snoop.next()).await;
    assert!(
        !matches!(heard, Ok(Some(_))),
        "bob heard a call on the workers' subjects"
    );
}

/// Bob cannot point a worker's answers at Alice's inbox: with inboxes per
/// subject, a request of his naming her inbox is dropped unanswered.
async fn bob_cannot_point_answers_at_alices_inbox(worker: &Worker, bob_nats: &async_nats::Client) {
    let dropped = worker.dropped_replies();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Authorization", "Bearer bob-key");
    bob_nats
        .publish_with_reply_and_headers(
            "toolfunc.call.echo",
            "_INBOX.alice.forged",
            headers,
            "{}".into(),
        )
        .await
        .unwrap();
    bob_nats.flush().await.unwrap();
    for _ in 0..100 {
        if worker.dropped_replies() > dropped {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(worker.dropped_replies(), dropped + 1);
}

/// A forged record Bob publishes to the bucket never lands.
async fn bob_cannot_write_the_bucket(
    server: &NatsServer,
    bob_nats: &async_nats::Client,
    alice: &Client,
    id: &str,
) {
    // Bob cannot write the bucket: a forged record never lands.
    let admin = async_nats::jetstream::new(connect(server, "worker", "worker-pass").await);
    let bucket = admin.get_key_value("toolfunc_results").await.unwrap();
    let before = bucket.entry(id).await.unwrap().unwrap();
    let forged = json!({"id": id, "status": "completed", "result": "forged"});
    bob_nats
        .publish(
            format!("$KV.toolfunc_results.{id}"),
            forged.to_string().into(),
        )
        .await
        .unwrap();
    bob_nats.flush().await.unwrap();
    let after = bucket.entry(id).await.unwrap().unwrap();
    assert_eq!(after.revision, before.revision, "bob wrote the bucket");
    assert_eq!(alice.wait(id).await.unwrap(), json!({"kept": true}));
}

/// The first event a worker-role listener hears is the one published after Bob's.
async fn bob_cannot_announce_a_catalogue(server: &NatsServer, bob_nats: &async_nats::Client) {
    // Bob cannot publish catalogue events: the first event a worker-role
    // listener hears is the one published after his.
    let listener = connect(server, "worker", "worker-pass").await;
    let mut events = listener.subscribe("toolfunc.events").await.unwrap();
    listener.flush().await.unwrap();
    bob_nats
        .publish(
            "toolfunc.events",
            json!({"worker": "bob"}).to_string().into(),
        )
        .await
        .unwrap();
    bob_nats.flush().await.unwrap();
    listener
        .publish(
            "toolfunc.events",
            json!({"worker": "marker"}).to_string().into(),
        )
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .unwrap()
        .unwrap();
    let first: Value = serde_json::from_slice(&first.payload).unwrap();
    assert_eq!(first["worker"], "marker", "bob published a catalogue event");
}

/// The NATS examples log in under the shipped roles: the worker as `worker`, the
/// client as `alice` (its answers in `_INBOX.alice.`), and the client calls the
/// tools; without a login the server turns them away with a clear error.
#[tokio::test]
async fn the_examples_log_in_under_the_shipped_roles() {
    use tokio::io::AsyncBufReadExt;

    let server = server();
    let url = server.url();
    let mut worker = tokio::process::Command::new(process::example("nats_worker"))
        .args([
            "--url",
            &url,
            "--user",
            "worker",
            "--password",
            "worker-pass",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the worker starts");
    let mut lines = tokio::io::BufReader::new(worker.stdout.take().expect("piped")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the worker says it is ready")
        .unwrap_or_default()
        .unwrap_or_default();
    assert!(ready.starts_with("toolfunc NATS worker"), "{ready}");
    let client = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(process::example("nats_client"))
            .args(["--url", &url, "--user", "alice", "--password", "alice-pass"])
            .output(),
    )
    .await
    .expect("the client ends")
    .expect("the client runs");
    let printed = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(printed.contains("add(1, 2) = 3.0"), "{printed}");
    // Without a login: refused, and said so.
    let refused = tokio::process::Command::new(process::example("nats_client"))
        .args(["--url", &url])
        .output()
        .await
        .expect("the client runs");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr).to_lowercase();
    assert!(
        said.contains("author") || said.contains("cannot connect"),
        "{said}"
    );
}
