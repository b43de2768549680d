package mcptest

import (
	"encoding/json"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Response is the server's answer to one request.
type Response struct {
	ID     int64
	Result json.RawMessage // nil when Error is set
	Error  *wire.RPCError
	Late   bool // arrived after the request was cancelled
}
