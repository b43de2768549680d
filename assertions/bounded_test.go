package assertions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/assertions"
)

func TestCheckResultContract(t *testing.T) {
	tests := []struct {
		name    string
		result  string
		budget  int
		wantErr string // substring; "" means no error
	}{
		{"small text", `{"content":[{"type":"text","text":"ok"}]}`, 100, ""},
		{"exactly at budget", `{"content":[{"type":"text","text":"ok"}]}`, len(`[{"type":"text","text":"ok"}]`), ""},
		{"one byte over", `{"content":[{"type":"text","text":"ok"}]}`, len(`[{"type":"text","text":"ok"}]`) - 1, "want at most"},
		{"multibyte counted in bytes", `{"content":[{"type":"text","text":"ééééé"}]}`, len(`[{"type":"text","text":"éééé"}]`) + 1, "want at most"},
		{"structured counts too", `{"content":[],"structuredContent":{"items":[1,2,3]}}`, 10, "structuredContent 17 bytes"},
		{"good page", `{"content":[{"type":"text","text":"Returned 2 of 9; pass nextCursor to continue"}],"structuredContent":{"items":[1,2],"nextCursor":"c2","truncated":true,"totalEstimate":9}}`, 1000, ""},
		{"truncated with hint", `{"structuredContent":{"items":[1],"truncated":true,"hint":"narrow the query by date"}}`, 1000, ""},
		{"truncated without a way on", `{"structuredContent":{"items":[1],"truncated":true}}`, 1000, "no nextCursor and no hint"},
		{"truncated with empty cursor", `{"structuredContent":{"items":[1],"truncated":true,"nextCursor":""}}`, 1000, "no nextCursor"},
		{"estimate below items", `{"structuredContent":{"items":[1,2,3],"totalEstimate":2}}`, 1000, "smaller than the 3 items"},
		{"estimate not a number", `{"structuredContent":{"items":[],"totalEstimate":"many"}}`, 1000, "want a number"},
		{"not an object", `[1,2]`, 1000, "not a JSON object"},
		{"two problems at once", `{"structuredContent":{"items":[1,2,3],"truncated":true,"totalEstimate":1}}`, 10, "want at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := assertions.CheckResultContract(json.RawMessage(tt.result), tt.budget)
			err := res.Err()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckResultContract(%s, %d) = %v, want a pass", tt.result, tt.budget, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || res.Rule == ""):
				t.Errorf("CheckResultContract(%s, %d) = %v (rule %q), want a failure containing %q, with the rule", tt.result, tt.budget, err, res.Rule, tt.wantErr)
			}
		})
	}
}
