"""Schemathesis hooks for tests/http_schemathesis.rs (loaded through SCHEMATHESIS_HOOKS).

* `ndjson_lines_conform`: a check that validates every line of an NDJSON answer
  (a streamed `countdown`) against the schema the document gives for it, which
  Schemathesis cannot do by itself (it has no NDJSON deserializer).
* `before_call`: bounds the calls that could run for ever (`sleep`, `countdown`,
  `report`) with a short valid `rpc-timeout`, leaving a malformed one as sent.
* `filter_failure`: drops the failures of the server's findings still to fix
  (`FINDINGS`), each matched narrowly, and counts them (`LENIENCIES`, the wire's
  answers the document would leave out, is empty: the document lists them all); the counts are printed at the end of the run,
  so one that no longer happens shows as 0 and its entry can go.
"""

import atexit
import json
import sys

import jsonschema_rs
import schemathesis
from schemathesis.core.failures import Failure

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


# --- The calls that would not end -------------------------------------------------

# `sleep`, `countdown` (both of its operations) and `report` take any duration or
# count up to 2^64 - 1, and `rpc-timeout: 0` means no bound: a valid case could run
# for ever. A valid `rpc-timeout` (or none) is sent as at most 300 ms, so every
# call ends within it (408 `TIMEOUT`, documented). A value the server refuses is
# sent as generated, so the cases that negate the header still reach it.
BOUNDED_MS = 300
BOUNDED = {"sleep", "countdown", "countdown.query", "report"}
U64_MAX = 2**64 - 1


def _valid_timeout(sent):
    """Whether the server reads `sent` as a timeout: ASCII digits between blanks,
    at most 2^64 - 1 (`wire::millis`, and the `maximum` the document gives)."""
    if isinstance(sent, int) and not isinstance(sent, bool):
        return 0 <= sent <= U64_MAX
    if not isinstance(sent, str):
        return False
    digits = sent.strip(" \t")
    return digits.isascii() and digits.isdigit() and int(digits) <= U64_MAX


@schemathesis.hook
def before_call(context, case, **kwargs):
    if case.operation.definition.raw.get("operationId") not in BOUNDED:
        return
    headers = dict(case.headers or {})
    sent = headers.get("rpc-timeout")
    if sent is None or (_valid_timeout(sent) and not 0 < int(str(sent).strip(" \t")) <= BOUNDED_MS):
        headers["rpc-timeout"] = str(BOUNDED_MS)
        case.headers = headers


# --- Known server findings ----------------------------------------------------------


# The wire's documented leniencies: answers the document does not describe, which
# the JavaScript clients rely on. None: the clients' REST forms are operations of
# the document (marked `x-toolfunc-compat`).
LENIENCIES = {}
# Mismatches of the server still to fix (each says where). None.
FINDINGS = {}
KNOWN = {**LENIENCIES, **FINDINGS}
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
    for title, entries in (("wire leniencies", LENIENCIES), ("server findings still to fix", FINDINGS)):
        counts = [f"  {name}: {SEEN[name]} failure(s) dropped" for name in entries]
        print(f"{title} (see hooks.py):", *counts, sep="\n", file=sys.stderr)
