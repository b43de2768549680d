module github.com/mcpstdio/mcpstdio/integration

go 1.25.5

replace github.com/mcpstdio/mcpstdio => ../

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mark3labs/mcp-go v1.2.1 // indirect
	github.com/mcpstdio/mcpstdio v0.0.0-00010101000000-000000000000 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
