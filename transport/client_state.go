package transport

import (
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// clientState is what a session learns about its client: whether it has
// initialized, the log level it asked for, its info, capabilities and
// protocol version. The stdio and HTTP sessions embed it; it is safe for
// concurrent use.
type clientState struct {
	initialized        atomic.Bool
	logLevel           atomic.Value // mcp.LoggingLevel
	clientInfo         atomic.Value // mcp.Implementation
	clientCapabilities atomic.Value // mcp.ClientCapabilities
	protocolVersion    atomic.Value // string
}

// Initialize marks the session initialized and resets the log level to
// error, matching mcp-go's own sessions.
func (c *clientState) Initialize() {
	c.logLevel.Store(mcp.LoggingLevelError)
	c.initialized.Store(true)
}

// Initialized reports whether initialize has been handled.
func (c *clientState) Initialized() bool { return c.initialized.Load() }

// SetLogLevel sets the least severe level of log notifications sent.
func (c *clientState) SetLogLevel(level mcp.LoggingLevel) { c.logLevel.Store(level) }

// GetLogLevel returns the log level, error if none was set.
func (c *clientState) GetLogLevel() mcp.LoggingLevel {
	if l, ok := c.logLevel.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

// GetClientInfo returns the client's implementation info.
func (c *clientState) GetClientInfo() mcp.Implementation {
	v, _ := c.clientInfo.Load().(mcp.Implementation)
	return v
}

// SetClientInfo records the client's implementation info.
func (c *clientState) SetClientInfo(v mcp.Implementation) { c.clientInfo.Store(v) }

// GetClientCapabilities returns the client's capabilities.
func (c *clientState) GetClientCapabilities() mcp.ClientCapabilities {
	v, _ := c.clientCapabilities.Load().(mcp.ClientCapabilities)
	return v
}

// SetClientCapabilities records the client's capabilities.
func (c *clientState) SetClientCapabilities(v mcp.ClientCapabilities) { c.clientCapabilities.Store(v) }

// ProtocolVersion returns the negotiated protocol version, or "".
func (c *clientState) ProtocolVersion() string {
	v, _ := c.protocolVersion.Load().(string)
	return v
}

// SetProtocolVersion records the negotiated protocol version.
func (c *clientState) SetProtocolVersion(v string) { c.protocolVersion.Store(v) }
