"""Drives a toolfunc MCP server serving the demo catalog with the official Python
MCP SDK, and checks every answer.

    mcp_client.py --mode legacy|auto --http http://127.0.0.1:PORT/mcp [--list-changed]
    mcp_client.py --mode legacy|auto --stdio COMMAND [ARG...] [--errlog FILE]

`legacy` connects with the `initialize` handshake (protocol 2025-11-25); `auto` lets
the SDK discover the newest protocol the server speaks (2026-07-28, sessionless).

Prints one line per check and ends with `mcp client: N checks passed` (exit 0), or
prints the failing check and exits 1. With `--list-changed` it prints `CHANGE` once
it listens for tool list changes, waits for a line on stdin (the caller changes the
server's registry, then writes one), and checks that the notification arrives.
"""

import argparse
import sys

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.shared.subscriptions import ToolsListChanged

checks = 0


def check(name, ok, detail=""):
    global checks
    if not ok:
        print(f"FAIL {name}: {detail}", flush=True)
        sys.exit(1)
    checks += 1
    print(f"ok {name}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def check_tools(client):
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    expected = {"add", "greeter_hello", "greeter_mul", "users_list", "users_get",
                "users_post", "users_put", "users_delete", "users_promote",
                "countdown", "fail", "sleep"}
    check("tools/list names", expected <= set(tools), sorted(tools))
    add = tools["add"]
    check("add inputSchema", add.input_schema.get("type") == "object"
          and set(add.input_schema.get("required", [])) == {"a", "b"}, add.input_schema)
    check("add annotations", add.annotations is not None and add.annotations.read_only_hint is True
          and add.annotations.idempotent_hint is True, add.annotations)
    user = tools["users_get"]
    check("users_get outputSchema", user.output_schema is not None
          and user.output_schema.get("type") == "object"
          and "name" in user.output_schema.get("properties", {}), user.output_schema)
    check("countdown has no outputSchema", tools["countdown"].output_schema is None)


async def check_calls(client):
    result = await client.call_tool("add", {"a": 2, "b": 3})
    check("call add", not result.is_error and text_of(result) == "5.0", result)

    result = await client.call_tool("greeter_hello", {"name": "Ann"})
    check("call greeter_hello", not result.is_error and "Ann" in text_of(result), result)

    result = await client.call_tool("users_get", {"id": "1"})
    check("call users_get structuredContent", not result.is_error
          and isinstance(result.structured_content, dict)
          and result.structured_content.get("id") == "1", result)

    result = await client.call_tool("users_get", {"id": "nobody"})
    check("users_get unknown id isError", result.is_error
          and (result.meta or {}).get("io.github.toolfunc/error", {}).get("code") == "USER_NOT_FOUND", result)

    result = await client.call_tool("countdown", {"count": 3})
    check("call countdown collects the stream", not result.is_error
          and text_of(result) == '[{"tick":3},{"tick":2},{"tick":1}]', result)

    result = await client.call_tool("add", {"a": "two", "b": 3})
    error = (result.meta or {}).get("io.github.toolfunc/error", {})
    check("bad arguments isError", result.is_error and error.get("code") == "ARGUMENTS"
          and "/a" in text_of(result), result)

    result = await client.call_tool("add", {"a": 1})
    check("missing argument isError", result.is_error and "b" in text_of(result), result)

    result = await client.call_tool("fail", {})
    check("handler error isError", result.is_error and "boom" in text_of(result), result)

    try:
        await client.call_tool("no_such_tool", {})
        check("unknown tool is a protocol error", False, "no error")
    except MCPError as err:
        check("unknown tool is a protocol error", err.code == types.INVALID_PARAMS
              and "no_such_tool" in err.message, (err.code, err.message))


async def check_prompts_and_resources(client):
    prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    check("prompts listed", "review" in prompts, sorted(prompts))
    arguments = {arg.name: arg.required for arg in prompts["review"].arguments or []}
    check("prompt arguments", arguments == {"code": True, "focus": False}, arguments)
    got = await client.get_prompt("review", {"code": "fn main() {}", "focus": "bugs"})
    first = got.messages[0]
    check("prompt rendered", first.role == "user" and "fn main() {}" in first.content.text
          and "bugs" in first.content.text, got)
    try:
        await client.get_prompt("review", {})
        check("prompt without its argument refused", False)
    except MCPError as err:
        check("prompt without its argument refused", err.error.code == -32602, err)

    resources = {str(r.uri): r for r in (await client.list_resources()).resources}
    check("resources listed", "demo://readme" in resources, sorted(resources))
    readme = await client.read_resource("demo://readme")
    check("fixed resource read", readme.contents[0].mime_type == "text/markdown"
          and "toolfunc" in readme.contents[0].text, readme)
    templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
    check("templates listed", "demo://users/{id}" in templates, templates)
    user = await client.read_resource("demo://users/1")
    check("template read", '"Alice"' in user.contents[0].text, user)
    try:
        await client.read_resource("demo://users/nobody")
        check("unknown user refused", False)
    except MCPError as err:
        check("unknown user refused", err.error.code in (-32602, -32603), err)

    completion = await client.complete(types.PromptReference(type="ref/prompt", name="review"),
                                       {"name": "focus", "value": "b"})
    check("argument completed", completion.completion.values == ["bugs"], completion)


async def check_progress_and_cancel(client):
    reports = []

    async def on_progress(progress, total, message):
        reports.append((progress, total, message))

    result = await client.call_tool("sleep", {"ms": 350}, progress_callback=on_progress)
    check("sleep answers", not result.is_error and result.structured_content == {"slept": 350}, result)
    check("progress notifications", len(reports) >= 3
          and all(total == 350 for _, total, _ in reports)
          and [p for p, _, _ in reports] == sorted(p for p, _, _ in reports), reports)

    reports.clear()
    with anyio.move_on_after(0.45) as scope:
        await client.call_tool("sleep", {"ms": 5000}, progress_callback=on_progress)
    check("slow call cancelled", scope.cancelled_caught)
    seen = len(reports)
    check("progress before cancel", seen >= 2, reports)
    await anyio.sleep(0.4)
    check("no progress after cancel", len(reports) == seen, reports)

    result = await client.call_tool("add", {"a": 1, "b": 1})
    check("server healthy after cancel", not result.is_error and text_of(result) == "2.0", result)


async def check_list_changed(client, mode, changed, handler_events):
    if mode == "legacy":
        print("CHANGE", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        with anyio.fail_after(5):
            await changed.wait()
        check("tools/list_changed notification", changed.is_set())
    else:
        async with client.listen(tools_list_changed=True) as subscription:
            print("CHANGE", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            with anyio.fail_after(5):
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        break
        check("tools/list_changed through subscriptions/listen", True)
    tools = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
    check("tools/list shows the new tool", "added_later" in tools, sorted(tools))


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["legacy", "auto"], default="auto")
    parser.add_argument("--http")
    parser.add_argument("--errlog")
    parser.add_argument("--list-changed", action="store_true")
    parser.add_argument("--stdio", nargs=argparse.REMAINDER)
    args = parser.parse_args()

    changed = anyio.Event()
    handler_events = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()
        handler_events.append(message)

    if args.http:
        target = args.http
    else:
        params = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
        errlog = open(args.errlog, "w") if args.errlog else sys.stderr
        target = stdio_client(params, errlog=errlog)

    async with Client(target, mode=args.mode, message_handler=on_message,
                      read_timeout_seconds=20) as client:
        expected = "2026-07-28" if args.mode == "auto" else "2025-11-25"
        check(f"protocol {expected}", client.protocol_version == expected, client.protocol_version)
        await check_tools(client)
        await check_calls(client)
        await check_prompts_and_resources(client)
        await check_progress_and_cancel(client)
        if args.list_changed:
            await check_list_changed(client, args.mode, changed, handler_events)
    print(f"mcp client: {checks} checks passed", flush=True)


anyio.run(main)
