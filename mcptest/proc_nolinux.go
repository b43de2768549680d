//go:build !linux

package mcptest

import (
	"errors"
	"os"
	"strconv"
	"time"
)

func threadStates(int, *os.File) ([]threadState, error) { return nil, errors.ErrUnsupported }

func syscallName(n int64) string { return "#" + strconv.FormatInt(n, 10) }

func pipeFill(*os.File) (int, int, error) { return 0, 0, errors.ErrUnsupported }

// pipeHolders: other systems have no /proc to tell who holds a pipe.
func pipeHolders(*os.File) []string { return nil }

// treeStates: other systems have no /proc to show threads.
func treeStates(int, *os.File) ([]threadState, time.Duration, bool) { return nil, 0, false }
