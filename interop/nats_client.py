"""Calls a toolfunc NATS service from Python with nats-py, using nothing but the
subjects and headers the README documents: discovery ($SRV.INFO, <prefix>.tools),
a plain request, a service act, an error's headers, a stream with credits, and a
cancel. Prints "checks passed" when every check holds.

Usage: python nats_client.py nats://127.0.0.1:4222
"""

import asyncio
import json
import secrets
import sys

import nats


def check(cond, what):
    if not cond:
        raise SystemExit(f"check failed: {what}")
    print(f"ok: {what}")


async def main(url):
    nc = await nats.connect(url)
    info = json.loads((await nc.request("$SRV.INFO.toolfunc", b"", timeout=5)).data)
    subjects = {e["subject"] for e in info["endpoints"]}
    check("toolfunc.call.add" in subjects, "$SRV.INFO lists the tool endpoints")
    tools = json.loads((await nc.request("toolfunc.tools", b"", timeout=5)).data)
    check(tools["add"]["params"]["required"] == ["a", "b"], "the definitions carry schemas")

    answer = await nc.request("toolfunc.call.add", b'{"a": 1, "b": 2}', timeout=5)
    check(json.loads(answer.data) == 3.0, "add answers 3.0")
    answer = await nc.request(
        "toolfunc.call.greeter", json.dumps({"act": "$hello", "name": "Ann"}).encode(), timeout=5
    )
    check(json.loads(answer.data) == "hello Ann", "a service act runs")

    answer = await nc.request(
        "toolfunc.call.users", json.dumps({"act": "get", "id": "99"}).encode(), timeout=5
    )
    headers = answer.headers or {}
    check(headers.get("Nats-Service-Error-Code") == "404", "an error has its status")
    check(headers.get("Tf-Error-Code") == "USER_NOT_FOUND", "and its stable code")
    check(json.loads(headers["Tf-Error"])["data"]["what"] == "99", "and its data")

    # A stream, two items ahead at most, granting one credit per item taken. Control
    # messages show the secret the call was sent with (Tf-Control-Key).
    key = secrets.token_hex(16)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(
        "toolfunc.call.countdown",
        json.dumps({"count": 5, "stream": True}).encode(),
        reply=inbox,
        headers={"Tf-Stream": "2", "Tf-Call-Id": "py-stream-1", "Tf-Control-Key": key},
    )
    items = []
    while True:
        msg = await sub.next_msg(timeout=5)
        kind = (msg.headers or {}).get("Tf-Kind")
        if kind == "heartbeat":
            continue
        if kind == "end":
            break
        check(kind == "item", "a stream message is an item")
        items.append(json.loads(msg.data))
        await nc.publish(
            msg.headers["Tf-Control"],
            b"",
            headers={"Tf-Call-Id": "py-stream-1", "Tf-Control-Key": key, "Tf-Credit": "1"},
        )
    await sub.unsubscribe()
    check(items == [{"tick": n} for n in (5, 4, 3, 2, 1)], "the stream's items in order, then its end")

    # A long call, cancelled on the broadcast control subject: by its id and secret;
    # the id alone (or a wrong secret) cancels nothing.
    key = secrets.token_hex(16)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(
        "toolfunc.call.sleep",
        b'{"ms": 30000}',
        reply=inbox,
        headers={"Tf-Call-Id": "py-sleep-1", "Tf-Heartbeat": "100", "Tf-Control-Key": key},
    )
    beat = await sub.next_msg(timeout=5)
    check((beat.headers or {}).get("Tf-Kind") == "heartbeat", "a running call sends heartbeats")
    for guess in ({}, {"Tf-Control-Key": "guess"}):
        await nc.publish("toolfunc.ctl", b"", headers={"Tf-Call-Id": "py-sleep-1", "Tf-Cancel": "no", **guess})
    msg = await sub.next_msg(timeout=5)
    check((msg.headers or {}).get("Tf-Kind") == "heartbeat", "a cancel without the call's secret is ignored")
    await nc.publish(
        "toolfunc.ctl", b"", headers={"Tf-Call-Id": "py-sleep-1", "Tf-Control-Key": key, "Tf-Cancel": "enough"}
    )
    while True:
        msg = await sub.next_msg(timeout=5)
        if (msg.headers or {}).get("Tf-Kind") != "heartbeat":
            break
    check((msg.headers or {}).get("Tf-Error-Code") == "CANCELLED", "a cancelled call answers CANCELLED")
    await nc.close()
    print("checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
