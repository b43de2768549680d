//go:build !unix

package main

import "errors"

// startDaemon: without sessions there is no setsid daemon to leave.
func startDaemon() { fail(errors.New("-daemon needs Unix")) }

// startDetached: without sessions there is no detached daemon to leave.
func startDetached(string) { fail(errors.New("-detach needs Unix")) }
