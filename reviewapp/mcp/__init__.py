"""The MCP server: reviewapp's tools for agents, over streamable HTTP at /mcp.

`server.py` builds the ASGI app (the official `mcp` SDK's `MCPServer`),
`auth.py` admits the API's bearer tokens, `tools.py` holds what each tool
does against the database, `db.py` runs those calls off the event loop and
`watch.py` lets any number of `wait_for_review` calls wait on one poll.
"""
