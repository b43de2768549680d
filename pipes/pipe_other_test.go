//go:build !linux

package pipes_test

import (
	"errors"
	"testing"

	"github.com/mcpstdio/mcpstdio/pipes"
)

func TestPipeUnsupported(t *testing.T) {
	p, err := pipes.New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.SetCapacity(4096); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("SetCapacity on this system: err = %v, want errors.ErrUnsupported", err)
	}
	if _, err := p.Buffered(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Buffered on this system: err = %v, want errors.ErrUnsupported", err)
	}
}
