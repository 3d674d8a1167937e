//! `ToolError`: codes, HTTP statuses, messages, and the wire form that turns back into
//! the same variant.

use std::error::Error as _;

use serde_json::{Value, json};
use toolfunc::ToolError;

/// One of each variant, with what `code()`, `status()`, `Display` and the wire give.
#[allow(clippy::too_many_lines, reason = "one table of every variant")]
fn cases() -> Vec<(ToolError, &'static str, u16, &'static str, Value)> {
    vec![
        (
            ToolError::not_found("lookup"),
            "NOT_FOUND",
            404,
            "tool not found: lookup",
            json!({"code": "NOT_FOUND", "message": "tool not found: lookup", "status": 404, "data": {"what": "lookup"}}),
        ),
        (
            ToolError::arguments("/items/2/id", "expected u64"),
            "ARGUMENTS",
            400,
            "invalid arguments at /items/2/id: expected u64",
            json!({"code": "ARGUMENTS", "message": "expected u64", "status": 400, "data": {"path": "/items/2/id"}}),
        ),
        (
            ToolError::arguments("", "expected an object"),
            "ARGUMENTS",
            400,
            "invalid arguments at the arguments: expected an object",
            json!({"code": "ARGUMENTS", "message": "expected an object", "status": 400, "data": {"path": ""}}),
        ),
        (
            ToolError::failed("disk full"),
            "FAILED",
            500,
            "disk full",
            json!({"code": "FAILED", "message": "disk full", "status": 500}),
        ),
        (
            ToolError::failed("disk full").with_data(json!({"free": 0})),
            "FAILED",
            500,
            "disk full",
            json!({"code": "FAILED", "message": "disk full", "status": 500, "data": {"free": 0}}),
        ),
        (
            ToolError::Panicked {
                message: "boom".into(),
            },
            "PANICKED",
            500,
            "tool panicked: boom",
            json!({"code": "PANICKED", "message": "boom", "status": 500}),
        ),
        (
            ToolError::cancelled(None),
            "CANCELLED",
            499,
            "call cancelled",
            json!({"code": "CANCELLED", "message": "call cancelled", "status": 499}),
        ),
        (
            ToolError::cancelled(Some("user left".into())),
            "CANCELLED",
            499,
            "call cancelled: user left",
            json!({"code": "CANCELLED", "message": "call cancelled: user left", "status": 499, "data": {"reason": "user left"}}),
        ),
        (
            ToolError::Timeout { after_ms: None },
            "TIMEOUT",
            408,
            "call timed out",
            json!({"code": "TIMEOUT", "message": "call timed out", "status": 408}),
        ),
        (
            ToolError::Timeout {
                after_ms: Some(1500),
            },
            "TIMEOUT",
            408,
            "call timed out after 1500 ms",
            json!({"code": "TIMEOUT", "message": "call timed out after 1500 ms", "status": 408, "data": {"afterMs": 1500}}),
        ),
        (
            ToolError::conflict("alias `x` is taken"),
            "CONFLICT",
            409,
            "alias `x` is taken",
            json!({"code": "CONFLICT", "message": "alias `x` is taken", "status": 409}),
        ),
        (
            ToolError::AsyncOnly {
                name: "slow".into(),
            },
            "ASYNC_ONLY",
            400,
            "tool `slow` is async: use `run` instead of `run_sync`",
            json!({"code": "ASYNC_ONLY", "message": "tool `slow` is async: use `run` instead of `run_sync`", "status": 400, "data": {"name": "slow"}}),
        ),
        (
            ToolError::Sealed {
                name: "late".into(),
            },
            "SEALED",
            403,
            "registry is sealed: cannot register `late`",
            json!({"code": "SEALED", "message": "registry is sealed: cannot register `late`", "status": 403, "data": {"name": "late"}}),
        ),
        (
            ToolError::Definition {
                name: "bad".into(),
                message: "no handler was set".into(),
            },
            "DEFINITION",
            500,
            "invalid definition of `bad`: no handler was set",
            json!({"code": "DEFINITION", "message": "no handler was set", "status": 500, "data": {"name": "bad"}}),
        ),
        (
            ToolError::Output {
                path: None,
                message: "key must be a string".into(),
            },
            "OUTPUT",
            500,
            "tool result could not be serialised: key must be a string",
            json!({"code": "OUTPUT", "message": "key must be a string", "status": 500}),
        ),
        (
            ToolError::BadUrl {
                url: "ftp://x".into(),
                reason: "the scheme is not one of local, http, https, nats, tls".into(),
            },
            "BAD_URL",
            400,
            "cannot open `ftp://x`: the scheme is not one of local, http, https, nats, tls",
            json!({"code": "BAD_URL", "message": "cannot open `ftp://x`: the scheme is not one of local, http, https, nats, tls", "status": 400, "data": {"url": "ftp://x", "reason": "the scheme is not one of local, http, https, nats, tls"}}),
        ),
        (
            ToolError::custom("USER_NOT_FOUND", 404, "no user 7"),
            "USER_NOT_FOUND",
            404,
            "no user 7",
            json!({"code": "USER_NOT_FOUND", "message": "no user 7", "status": 404}),
        ),
        (
            ToolError::custom("QUOTA", 429, "slow down").with_data(json!({"retryAfter": 3})),
            "QUOTA",
            429,
            "slow down",
            json!({"code": "QUOTA", "message": "slow down", "status": 429, "data": {"retryAfter": 3}}),
        ),
    ]
}

#[test]
fn codes_statuses_and_messages() {
    for (err, code, status, message, _) in cases() {
        assert_eq!(err.code(), code, "{err:?}");
        assert_eq!(err.status(), status, "{err:?}");
        assert_eq!(err.to_string(), message, "{err:?}");
    }
}

#[test]
fn wire_form() {
    for (err, _, _, _, wire) in cases() {
        assert_eq!(serde_json::to_value(&err).unwrap(), wire, "{err:?}");
    }
}

/// Whether two errors are the same variant with the same fields (the source of
/// `Failed` is not carried over a wire and is not compared).
fn same(left: &ToolError, right: &ToolError) -> bool {
    use ToolError as E;
    match (left, right) {
        (E::NotFound { name: l, .. }, E::NotFound { name: r, .. })
        | (E::Conflict { message: l }, E::Conflict { message: r })
        | (E::Panicked { message: l }, E::Panicked { message: r })
        | (E::Output { message: l, .. }, E::Output { message: r, .. })
        | (E::AsyncOnly { name: l }, E::AsyncOnly { name: r })
        | (E::Sealed { name: l }, E::Sealed { name: r }) => l == r,
        (
            E::Arguments {
                path: l_key,
                message: l_message,
            },
            E::Arguments {
                path: r_key,
                message: r_message,
            },
        )
        | (
            E::Definition {
                name: l_key,
                message: l_message,
            },
            E::Definition {
                name: r_key,
                message: r_message,
            },
        ) => l_key == r_key && l_message == r_message,
        (
            E::Failed {
                message: l_message,
                data: l_data,
                ..
            },
            E::Failed {
                message: r_message,
                data: r_data,
                ..
            },
        ) => l_message == r_message && l_data == r_data,
        (
            E::BadUrl {
                url: l_url,
                reason: l_reason,
            },
            E::BadUrl {
                url: r_url,
                reason: r_reason,
            },
        ) => l_url == r_url && l_reason == r_reason,
        (E::Cancelled { reason: l }, E::Cancelled { reason: r }) => l == r,
        (E::Timeout { after_ms: l }, E::Timeout { after_ms: r }) => l == r,
        (
            E::Custom {
                code: l_code,
                status: l_status,
                message: l_message,
                data: l_data,
            },
            E::Custom {
                code: r_code,
                status: r_status,
                message: r_message,
                data: r_data,
            },
        ) => l_code == r_code && l_status == r_status && l_message == r_message && l_data == r_data,
        _ => false,
    }
}

#[test]
fn json_round_trip_gives_back_the_same_variant() {
    for (err, _, _, _, _) in cases() {
        let wire = serde_json::to_value(&err).unwrap();
        let back: ToolError = serde_json::from_value(wire.clone()).unwrap();
        assert!(same(&err, &back), "{err:?} came back as {back:?}");
        assert_eq!(serde_json::to_value(&back).unwrap(), wire);

        let text = serde_json::to_string(&err).unwrap();
        let back: ToolError = serde_json::from_str(&text).unwrap();
        assert!(same(&err, &back), "{err:?} came back as {back:?}");
    }
}

#[test]
fn round_trip_variants_by_pattern() {
    let back = |err: &ToolError| -> ToolError {
        serde_json::from_value(serde_json::to_value(err).unwrap()).unwrap()
    };
    assert!(matches!(
        back(&ToolError::not_found("x")),
        ToolError::NotFound { name, .. } if name == "x"
    ));
    assert!(matches!(
        back(&ToolError::arguments("/a", "m")),
        ToolError::Arguments { path, message } if path == "/a" && message == "m"
    ));
    assert!(matches!(
        back(&ToolError::failed("m")),
        ToolError::Failed { message, data: None, source: None } if message == "m"
    ));
    assert!(matches!(
        back(&ToolError::Panicked { message: "p".into() }),
        ToolError::Panicked { message } if message == "p"
    ));
    assert!(matches!(
        back(&ToolError::cancelled(Some("r".into()))),
        ToolError::Cancelled { reason: Some(r) } if r == "r"
    ));
    assert!(matches!(
        back(&ToolError::Timeout { after_ms: Some(5) }),
        ToolError::Timeout { after_ms: Some(5) }
    ));
    assert!(matches!(
        back(&ToolError::conflict("c")),
        ToolError::Conflict { message } if message == "c"
    ));
    assert!(matches!(
        back(&ToolError::AsyncOnly { name: "n".into() }),
        ToolError::AsyncOnly { name } if name == "n"
    ));
    assert!(matches!(
        back(&ToolError::Sealed { name: "n".into() }),
        ToolError::Sealed { name } if name == "n"
    ));
    assert!(matches!(
        back(&ToolError::Definition { name: "n".into(), message: "m".into() }),
        ToolError::Definition { name, message } if name == "n" && message == "m"
    ));
    assert!(matches!(
        back(&ToolError::Output { path: None, message: "o".into() }),
        ToolError::Output { path: None, message } if message == "o"
    ));
    assert!(matches!(
        back(&ToolError::Output { path: Some("/total".into()), message: "o".into() }),
        ToolError::Output { path: Some(path), message } if path == "/total" && message == "o"
    ));
    assert!(matches!(
        back(&ToolError::BadUrl { url: "u".into(), reason: "r".into() }),
        ToolError::BadUrl { url, reason } if url == "u" && reason == "r"
    ));
    assert!(matches!(
        back(&ToolError::custom("TEAPOT", 418, "t").with_data(json!({"cups": [1, 2]}))),
        ToolError::Custom { code, status: 418, message, data: Some(data) }
            if code == "TEAPOT" && message == "t" && data == json!({"cups": [1, 2]})
    ));
}

#[test]
fn minimal_wire_forms_deserialise() {
    let err: ToolError = serde_json::from_value(json!({"code": "FAILED", "message": "x"})).unwrap();
    assert!(matches!(err, ToolError::Failed { message, data: None, .. } if message == "x"));

    // A custom code without a status answers 500.
    let err: ToolError =
        serde_json::from_value(json!({"code": "MY_CODE", "message": "y"})).unwrap();
    assert!(
        matches!(&err, ToolError::Custom { code, status: 500, message, data: None } if code == "MY_CODE" && message == "y"),
        "{err:?}"
    );

    // A `BAD_URL` without data keeps its message as the reason.
    let err: ToolError =
        serde_json::from_value(json!({"code": "BAD_URL", "message": "no host"})).unwrap();
    assert!(
        matches!(&err, ToolError::BadUrl { url, reason } if url.is_empty() && reason == "no host"),
        "{err:?}"
    );
    assert_eq!(err.status(), 400);

    // Not an error object at all.
    assert!(serde_json::from_value::<ToolError>(json!({"message": "no code"})).is_err());
    assert!(serde_json::from_value::<ToolError>(json!("FAILED")).is_err());
}

#[test]
fn custom_status_out_of_range_becomes_500() {
    for status in [0, 99, 600, 999] {
        let err = ToolError::custom("ODD", status, "odd");
        assert_eq!(err.status(), 500, "{status}");
        assert_eq!(err.code(), "ODD");
    }
    assert_eq!(ToolError::custom("EDGE", 100, "e").status(), 100);
    assert_eq!(ToolError::custom("EDGE", 599, "e").status(), 599);
}

#[test]
fn with_data_only_touches_failed_and_custom() {
    let err = ToolError::not_found("x").with_data(json!(1));
    assert_eq!(err.data(), Some(json!({"what": "x"})));
    let err = ToolError::conflict("c").with_data(json!(1));
    assert_eq!(err.data(), None);
    assert_eq!(
        ToolError::failed("f").with_data(json!([1])).data(),
        Some(json!([1]))
    );
    assert_eq!(
        ToolError::custom("C", 400, "c")
            .with_data(json!("d"))
            .data(),
        Some(json!("d"))
    );
}

#[test]
fn from_error_keeps_the_source() {
    let io = std::io::Error::other("pipe broke");
    let err = ToolError::from_error(io);
    assert_eq!(
        (err.code(), err.to_string()),
        ("FAILED", "pipe broke".into())
    );
    assert_eq!(err.source().unwrap().to_string(), "pipe broke");
    // Cloning keeps the source; the wire does not carry it.
    assert!(err.clone().source().is_some());
    let back: ToolError = serde_json::from_value(serde_json::to_value(&err).unwrap()).unwrap();
    assert!(back.source().is_none());
    assert!(ToolError::failed("no source").source().is_none());
}
