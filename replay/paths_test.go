package replay

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

func TestParseRules(t *testing.T) {
	for _, bad := range []string{"", ".a", "a.", "a..b", "-"} {
		if _, err := parseRules([]string{bad}); err == nil {
			t.Errorf("parseRules(%q) did not fail", bad)
		}
	}
	rs, err := parseRules([]string{"a.b", "-c"})
	if err != nil || len(rs) != 2 || rs[0].Edit != wire.Hash || rs[1].Edit != wire.Drop || rs[1].Path.String() != "c" {
		t.Errorf("parseRules(a.b, -c) = %+v, %v; want a hash and a drop", rs, err)
	}
}

func TestMapOffset(t *testing.T) {
	old, new := []byte(`{"id":7,"x":"abc"}`), []byte(`{"id":12345,"x":"abc"}`)
	for _, tt := range []struct{ p, want int }{{0, 0}, {6, 6}, {7, 11}, {8, 12}, {len(old), len(new)}} {
		if got := mapOffset(old, new, tt.p); got != tt.want {
			t.Errorf("mapOffset(%d) = %d, want %d", tt.p, got, tt.want)
		}
	}
}
