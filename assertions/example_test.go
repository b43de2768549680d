package assertions_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// CheckResultContract holds a tool's result to the contract: within the
// content budget, and when cut, saying how to continue.
func ExampleCheckResultContract() {
	good := json.RawMessage(`{"content":[{"type":"text","text":"Returned 50 of 4382 records; pass nextCursor to continue."}],
		"structuredContent":{"items":[],"nextCursor":"offset:50","truncated":true,"totalEstimate":4382}}`)
	fmt.Println(assertions.CheckResultContract(good, 64<<10).Verdict)

	cut := json.RawMessage(`{"content":[{"type":"text","text":"first 50 records"}],"structuredContent":{"items":[1,2,3],"truncated":true,"totalEstimate":2}}`)
	res := assertions.CheckResultContract(cut, 64<<10)
	fmt.Println(res.Verdict)
	fmt.Println(res.Evidence)
	// Output:
	// pass
	// fail
	// the result (budget 65536 bytes) breaks the contract: structuredContent.truncated is true but there is no nextCursor and no hint: the caller cannot tell how to continue; structuredContent.totalEstimate = 2, smaller than the 3 items returned
}
