module github.com/mcpstdio/mcpstdio

go 1.24.0

require golang.org/x/sys v0.41.0

require go.uber.org/goleak v1.3.0
