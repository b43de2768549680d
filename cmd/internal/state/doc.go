// Package state is where `mcpstdio proxy` keeps its files: the per-user
// state directory (DefaultDir, never the working directory), the record
// on disk (LogFile: private, written as the proxy writes, rotated) and the status
// files that `mcpstdio status` reads (WriteStatus, ReadStatuses). Package
// proxy knows none of it: it writes its record to an io.Writer and reports
// its status through Config.OnStatus.
package state
