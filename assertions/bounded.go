package assertions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// CheckResultContract checks a tools/call result against the result contract
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
// It passes if all hold, and otherwise fails listing every problem.
func CheckResultContract(result json.RawMessage, budget int) Result {
	var res struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return fail(ruleResultContract, "the result is not a JSON object: %v", err)
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
		return pass("a result of %d bytes keeps to the %d-byte content budget and the contract", len(result), budget)
	}
	var problems []string
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	return fail(ruleResultContract, "the result (budget %d bytes) breaks the contract: %s", budget, strings.Join(problems, "; "))
}

func nonEmptyString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s != ""
}

// AssertResultContract is CheckResultContract for tests.
func AssertResultContract(t testing.TB, result json.RawMessage, budget int) {
	t.Helper()
	report(t, CheckResultContract(result, budget))
}

// CheckResultBounded calls cfg.Bounded, a tool that could return a lot, and
// checks its result against the contract for cfg.ContentBudget (see
// CheckResultContract).
func CheckResultBounded(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	if cfg.Bounded == nil {
		return skip("no Bounded tool call configured (ServerConfig.Bounded)")
	}
	// A large result still arriving is waited for while it grows (slow is
	// not stopped): its size is the evidence.
	resp, err := waitProgressing(ctx, s, s.Send(wire.MethodToolsCall, cfg.Bounded.params(nil)), cfg.Within)
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil {
		return failErr(ruleResultContract, "tools/call "+cfg.Bounded.Name, err)
	}
	res := CheckResultContract(resp.Result, cfg.ContentBudget)
	if res.Verdict == Fail {
		res.Evidence = "tools/call " + cfg.Bounded.describe() + ": " + res.Evidence
	}
	return res
}

// AssertResultBounded is CheckResultBounded for tests.
func AssertResultBounded(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckResultBounded(testContext(t), s, cfg))
}
