package proxy

import (
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// argvRedacted is what a secret value in the server's argv becomes: the
// record's marker, not as a JSON string.
var argvRedacted = strings.Trim(record.Redacted, `"`)

// redactArgv returns argv with the values that look secret by the
// policy's key words replaced by "[redacted]", and how many were: the
// value of a flag whose name matches ("--token=V", "--api-key V",
// "-password V": the next word, unless it is a flag itself) and of a
// KEY=value word whose KEY matches ("API_KEY=V"). argv[0] is kept. The
// record's header, the status and everything shown from them carry argv,
// and a record is made to be attached to bug reports.
func (p *redactPolicy) redactArgv(argv []string) ([]string, int) {
	out := make([]string, len(argv))
	copy(out, argv)
	n := 0
	for i := 1; i < len(out); i++ {
		w := out[i]
		name, value, eq := strings.Cut(strings.TrimLeft(w, "-"), "=")
		switch {
		case eq && value != "" && value != argvRedacted && p.keyMatches([]byte(name)):
			out[i] = w[:len(w)-len(value)] + argvRedacted
			n++
		case !eq && strings.HasPrefix(w, "-") && name != "" && p.keyMatches([]byte(name)) &&
			i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") && out[i+1] != "":
			i++
			out[i] = argvRedacted
			n++
		}
	}
	return out, n
}
