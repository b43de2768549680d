package replay

import (
	"fmt"
	"strings"

	"github.com/mcpstdio/mcpstdio/wire"
)

// parseRules reads Redact's paths (wire.Path): "-" before a path drops the
// value, else it is hashed.
func parseRules(paths []string) ([]wire.Rule, error) {
	var rs []wire.Rule
	for _, s := range paths {
		edit := wire.Hash
		if rest, ok := strings.CutPrefix(s, "-"); ok {
			s, edit = rest, wire.Drop
		}
		p, err := wire.ParsePath(s)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		rs = append(rs, wire.Rule{Path: p, Edit: edit})
	}
	return rs, nil
}

// mapOffset maps offset p of old to the same place in new, when new is
// old with one stretch changed (an id rewritten, a value redacted): bytes
// before the first difference keep their offset, bytes after the last
// keep their distance from the end, and an offset inside the changed
// stretch goes to its start. With several changes it is exact outside the
// stretch from the first to the last.
func mapOffset(old, new []byte, p int) int {
	pre := 0
	for pre < len(old) && pre < len(new) && old[pre] == new[pre] {
		pre++
	}
	if p <= pre {
		return p
	}
	suf := 0
	for suf < len(old)-pre && suf < len(new)-pre && old[len(old)-1-suf] == new[len(new)-1-suf] {
		suf++
	}
	if p >= len(old)-suf {
		return p - len(old) + len(new)
	}
	return pre
}
