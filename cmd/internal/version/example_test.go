package version_test

import (
	"fmt"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/version"
)

// A test binary is built without a stamp or a commit: its version is the
// toolchain's "(devel)".
func ExampleGet() {
	v := version.Get()
	fmt.Println(v.Version, strings.HasPrefix(v.String(), v.Version+" "))
	// Output: (devel) true
}
