// Command wink-mcp serves MCP tools on sections with validation, policies and
// transactional sessions.
package main

func main() {}
