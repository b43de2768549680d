// The programs built against pinned SDK releases for the history test
// (../history_test.go). This go.mod only marks the module root: each build
// names its release's go.mod with -modfile=pins/SDK-VERSION.mod (and its
// go.sum, pins/SDK-VERSION.sum), so `go build ./...` here is not meant to
// work and this module is outside the integration module's ./... .
module mcpstdio-history

go 1.24
