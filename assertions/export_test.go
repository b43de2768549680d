package assertions

import (
	"context"
	"os/exec"
)

// SetFakeCommand puts run in the place of the test binary re-executed as the
// fake for the host criteria (fakeCommand): the tests under the race
// detector give a fake built without it. Call it before the tests run.
func SetFakeCommand(run func(ctx context.Context, flags ...string) (*exec.Cmd, error)) {
	fakeCommand = run
}
