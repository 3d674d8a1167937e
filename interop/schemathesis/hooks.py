"""Schemathesis hooks for tests/http_schemathesis.rs (loaded through SCHEMATHESIS_HOOKS).

* `ndjson_lines_conform`: a check that validates every line of an NDJSON answer
  (a streamed `countdown`) against the schema the document gives for it, which
  Schemathesis cannot do by itself (it has no NDJSON deserializer).
* `filter_failure`: drops the failures of the server's known findings, each
  matched narrowly (`KNOWN` says what and why), and counts them; the counts are
  printed at the end of the run, so a finding that is fixed shows as 0 and its
  entry can go.
"""

import atexit
import json
import re
import sys

import jsonschema_rs
import schemathesis
from schemathesis.core.failures import AcceptedNegativeData, Failure
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import negated_parameters
from schemathesis.openapi.checks import (
    AllowHeaderMismatch,
    RejectedPositiveData,
    UnsupportedMethodResponse,
)

NDJSON = "application/x-ndjson"


class NdjsonLineMismatch(Failure):
    """An NDJSON line that does not match the documented schema."""

    code = "ST901"
    kind_title = "NDJSON line violates schema"


def _documented_ndjson_schema(case, status):
    operation = case.operation.definition.raw
    responses = operation.get("responses", {})
    response = responses.get(str(status)) or responses.get("default")
    if not response or "$ref" in response:
        return None
    return response.get("content", {}).get(NDJSON, {}).get("schema")


_VALIDATORS = {}
NDJSON_CHECKED = {"answers": 0, "lines": 0}


def _validator(case, schema):
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        components = case.operation.schema.raw_schema.get("components", {})
        _VALIDATORS[key] = jsonschema_rs.validator_for({**schema, "components": components})
    return _VALIDATORS[key]


@schemathesis.check
def ndjson_lines_conform(ctx, response, case):
    content_type = (response.headers.get("content-type") or [""])[0]
    if content_type.split(";")[0].strip() != NDJSON:
        return None
    schema = _documented_ndjson_schema(case, response.status_code)
    if schema is None:
        raise NdjsonLineMismatch(
            operation=case.operation.label,
            message=f"{NDJSON} answered with {response.status_code}, and none is documented for it",
        )
    validator = _validator(case, schema)
    NDJSON_CHECKED["answers"] += 1
    for number, line in enumerate(response.content.decode("utf-8").splitlines(), 1):
        NDJSON_CHECKED["lines"] += 1
        try:
            item = json.loads(line)
        except ValueError as err:
            raise NdjsonLineMismatch(
                operation=case.operation.label, message=f"line {number} is not JSON ({err}): {line!r}"
            ) from None
        errors = [error.message for error in validator.iter_errors(item)]
        if errors:
            raise NdjsonLineMismatch(
                operation=case.operation.label,
                message=f"line {number} does not match {json.dumps(schema)}: {line}\n" + "\n".join(errors),
            )
    return None


# --- Known findings -------------------------------------------------------------


def _error_body(response):
    try:
        body = json.loads(response.content)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _request_schema(case):
    content = case.operation.definition.raw.get("requestBody", {}).get("content", {})
    return content.get("application/json", {}).get("schema")


def _timeout_held_valid(failure, case, response):
    """Not a finding: for `sleep` and `countdown` the config holds `rpc-timeout`
    at 300 ms, so a case generated with an invalid `rpc-timeout` (and nothing
    else invalid) is sent with a valid one, and the server rightly runs it.
    Matched only when the header actually sent is a whole number."""
    if not isinstance(failure, AcceptedNegativeData):
        return False
    if set(negated_parameters(case.meta)) != {("rpc-timeout", ParameterLocation.HEADER)}:
        return False
    sent = (case.headers or {}).get("rpc-timeout")
    return isinstance(sent, str) and sent.isdigit()


# What the server answers `OPTIONS` with on every path.
_SERVER_ALLOW = "GET, POST, PUT, PATCH, DELETE, OPTIONS"


def _methods_the_wire_accepts(failure, case, response):
    """By design, not a finding: the `@isdk/tool-rpc` wire runs a plain tool
    whatever the method ("the HTTP method does not matter"), and its clients send
    REST `put` as `PUT <tool>` with the id in the body (0.1.1) or as `POST
    <tool>/<id>` with `rpc-act: put` (1.x). So PUT, PATCH, DELETE (and POST on
    `users/{id}`) run the tool or the act the request names instead of answering
    405, and discovery and `openapi.json` answer other methods with 404 or 415.
    The document lists the one method per operation a new client should use.
    Cross-site pages cannot send these methods without a preflight the server
    never grants, and GET still runs only what is read-only. `OPTIONS` lists the
    same methods on every path. (TRACE and made-up methods answer 405 and are not
    matched here.)"""
    if isinstance(failure, UnsupportedMethodResponse):
        return failure.method in ("GET", "POST", "PUT", "PATCH", "DELETE")
    if isinstance(failure, AllowHeaderMismatch):
        return failure.allow_header == _SERVER_ALLOW and not failure.missing_methods
    return False


def _resolve(case, schema):
    raw = case.operation.schema.raw_schema
    while isinstance(schema, dict) and "$ref" in schema:
        node = raw
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
        schema = node
    return schema if isinstance(schema, dict) else {}


def _array_for_object(case, schema, value):
    schema = _resolve(case, schema)
    branches = schema.get("oneOf", []) + schema.get("anyOf", [])
    if any(_array_for_object(case, branch, value) for branch in branches):
        return True
    if isinstance(value, list):
        return schema.get("type") == "object"
    if not isinstance(value, dict):
        return False
    properties = schema.get("properties", {})
    return any(_array_for_object(case, properties[k], v) for k, v in value.items() if k in properties)


def _array_read_as_struct(failure, case, response):
    """A struct argument sent as a JSON array is read field by field, in order
    (serde's derive accepts both), where the schema says object: `PUT
    users/1 {"val": [null, null]}` updates the user."""
    if not isinstance(failure, AcceptedNegativeData) or response.status_code != 200:
        return False
    meta = case.meta
    if {location for location in meta.components if meta.is_negative_at(location)} != {ParameterLocation.BODY}:
        return False
    return _array_for_object(case, _request_schema(case) or {}, case.body)


KNOWN = {
    "rpc-timeout held valid by the config (not a finding)": _timeout_held_valid,
    "methods the wire accepts beyond the documented one (by design)": _methods_the_wire_accepts,
    "array read as a struct": _array_read_as_struct,
}
SEEN = {name: 0 for name in KNOWN}


@schemathesis.hook
def filter_failure(context, failure, case, response):
    for name, matches in KNOWN.items():
        if matches(failure, case, response):
            SEEN[name] += 1
            return False
    return True


@atexit.register
def _report():
    answers, lines = NDJSON_CHECKED["answers"], NDJSON_CHECKED["lines"]
    print(f"ndjson_lines_conform: {answers} NDJSON answer(s), {lines} line(s) checked", file=sys.stderr)
    known = [f"  {name}: {count} failure(s) dropped" for name, count in SEEN.items()]
    print("known server findings (see hooks.py):", *known, sep="\n", file=sys.stderr)
