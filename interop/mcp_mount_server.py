"""An MCP server written with the official Python SDK (MCPServer, which was
FastMCP), served over stdio, that tests/mount_mcp.rs mounts into a toolfunc
registry: structured and text results, a raising tool, a tool list that changes,
a prompt, a resource and a template, and a process that can be made to die.

    mcp_mount_server.py              # over stdio
    mcp_mount_server.py --http PORT  # streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import os
import sys

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("mount-test")


class Sum(BaseModel):
    sum: float


@server.tool()
def add(a: float, b: float) -> Sum:
    """Adds two numbers."""
    return Sum(sum=a + b)


@server.tool()
def shout(text: str) -> str:
    """Upper-cases a text."""
    return text.upper()


@server.tool()
def boom(why: str) -> str:
    """Always fails."""
    raise ValueError(f"boom: {why}")


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool named `name` and says the tool list changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.prompt()
def review(code: str) -> str:
    """Asks for a review of some code."""
    return f"Please review:\n{code}"


@server.resource("demo://readme", mime_type="text/plain")
def readme() -> str:
    """The server's readme."""
    return "mounted from Python"


@server.resource("notes://{day}")
def notes(day: str) -> str:
    """The notes of a day."""
    return f"notes of {day}"


@server.tool()
def die() -> str:
    """Ends this process at once."""
    os._exit(3)


if len(sys.argv) == 3 and sys.argv[1] == "--http":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    server.run("stdio")
