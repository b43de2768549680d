// Package fill fills the defaults of configurations: the one rule for
// "zero (or less) means the default" that proxy.Config and mcptest's
// limits share.
package fill

import "time"

// Default sets *v to d when *v is zero or negative.
func Default[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
