module github.com/mcpstdio/mcpstdio

go 1.24.0

require (
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.41.0
)

require github.com/pelletier/go-toml/v2 v2.4.3
