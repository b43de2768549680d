package assertions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// CheckResultBounded checks a tools/call result against the result contract
// for a content budget of budget bytes:
//
//   - the serialized "content" plus "structuredContent", counted in bytes as
//     they appear in result, are within budget;
//   - when structuredContent.truncated is true, structuredContent has a
//     non-empty "nextCursor" or a non-empty "hint" saying how to narrow the
//     request;
//   - a structuredContent.totalEstimate, if present, is a number not smaller
//     than the number of structuredContent.items returned.
//
// It returns nil if all hold, and otherwise an error listing every problem.
func CheckResultBounded(result json.RawMessage, budget int) error {
	var res struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return fmt.Errorf("CheckResultBounded: result is not a JSON object: %v", err)
	}
	var errs []error
	size := len(res.Content) + len(res.StructuredContent)
	if size > budget {
		errs = append(errs, fmt.Errorf("content %d bytes + structuredContent %d bytes = %d bytes, want at most the %d-byte budget",
			len(res.Content), len(res.StructuredContent), size, budget))
	}
	if sc := bytes.TrimSpace(res.StructuredContent); len(sc) > 0 && !bytes.Equal(sc, []byte("null")) {
		var s struct {
			Truncated     *bool           `json:"truncated"`
			NextCursor    json.RawMessage `json:"nextCursor"`
			Hint          string          `json:"hint"`
			Items         []json.RawMessage
			TotalEstimate json.RawMessage `json:"totalEstimate"`
		}
		if err := json.Unmarshal(sc, &s); err != nil {
			errs = append(errs, fmt.Errorf("structuredContent is not an object with the contract's fields: %v", err))
		} else {
			if s.Truncated != nil && *s.Truncated && !nonEmptyString(s.NextCursor) && s.Hint == "" {
				errs = append(errs, errors.New(`structuredContent.truncated is true but there is no nextCursor and no hint: the caller cannot tell how to continue`))
			}
			if len(s.TotalEstimate) > 0 && !bytes.Equal(s.TotalEstimate, []byte("null")) {
				var total float64
				if err := json.Unmarshal(s.TotalEstimate, &total); err != nil {
					errs = append(errs, fmt.Errorf("structuredContent.totalEstimate = %s, want a number", s.TotalEstimate))
				} else if total < float64(len(s.Items)) {
					errs = append(errs, fmt.Errorf("structuredContent.totalEstimate = %s, smaller than the %d items returned", s.TotalEstimate, len(s.Items)))
				}
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("CheckResultBounded(budget %d bytes): %w", budget, errors.Join(errs...))
}

func nonEmptyString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s != ""
}

// AssertResultBounded reports through t the problems CheckResultBounded finds.
func AssertResultBounded(t testing.TB, result json.RawMessage, budget int) {
	t.Helper()
	if err := CheckResultBounded(result, budget); err != nil {
		t.Error(err)
	}
}
