package proxy

import (
	"encoding/json"
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// argvRedacted is what a secret value in the server's argv becomes: the
// record's marker, not as a JSON string.
var argvRedacted = strings.Trim(record.Redacted, `"`)

// redactArgv returns argv with the values that look secret by the
// policy's key words replaced by "[redacted]", and how many were; argv[0]
// is kept. The record's header, the status and everything shown from them
// carry argv, and a record is made to be attached to bug reports, so what
// MCP configurations put in a server's arguments is looked for:
//
//   - the value of a flag whose name matches: "--token=V", "--api-key V",
//     "-password V", "--bearer V" (the next word, unless it is a flag);
//   - a KEY=value word whose KEY matches, alone or as a flag's value:
//     "API_KEY=V", "--token-file=KEY=V";
//   - any variable a flag sets in the environment of what it starts, as
//     docker and MCP launchers take them: "--env=NAME=V", "--env NAME=V",
//     "-e NAME=V" (NAME a variable's name), whatever NAME is: credentials
//     travel so, and a name such as DB_PASS, KEY or STRIPE_SK rarely holds
//     a key word;
//   - an HTTP header whose name matches, as mcp-remote takes them:
//     "--header", "Authorization: Bearer V", "X-Api-Key:V";
//   - a bearer token: "Bearer V", if "bearer" is a key word;
//   - the password in a URL's userinfo, "postgresql://admin:V@db/app", if
//     "password" is;
//   - values whose key matches in a JSON argument: {"apiKey":"V"}, alone
//     or as a flag's value.
func (p *redactPolicy) redactArgv(argv []string) ([]string, int) {
	out := make([]string, len(argv))
	copy(out, argv)
	n := 0
	for i := 1; i < len(out); i++ {
		w := out[i]
		if flag, v, eq := strings.Cut(w, "="); eq && len(p.keys) > 0 && isEnvFlag(flag) {
			if r, ok := redactEnvValue(v); ok {
				out[i] = flag + "=" + r
				n++
				continue
			}
		}
		if len(p.keys) > 0 && isEnvFlag(w) && i+1 < len(out) {
			if r, ok := redactEnvValue(out[i+1]); ok {
				i++
				out[i] = r
				n++
				continue
			}
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.Contains(w, "=") && strings.HasPrefix(w, "-") && name != "" && p.keyMatches([]byte(name)) &&
			i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") && out[i+1] != "" {
			if out[i+1] != argvRedacted {
				n++
			}
			i++
			out[i] = argvRedacted
			continue
		}
		var k int
		out[i], k = p.redactWord(w, 0)
		n += k
	}
	return out, n
}

// isEnvFlag reports whether w is a flag that sets an environment variable
// for what it starts: -e, --env, --env-var, --environment (one dash or
// two).
func isEnvFlag(w string) bool {
	if !strings.HasPrefix(w, "-") {
		return false
	}
	switch strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-") {
	case "e", "env", "env-var", "environment":
		return true
	}
	return false
}

// redactEnvValue redacts the value of "NAME=V" where NAME is a variable's
// name (a letter or underscore, then letters, digits and underscores), so
// that "node -e 'x=1'" is kept; ok is false for any other word and for a
// value already redacted.
func redactEnvValue(w string) (string, bool) {
	name, v, eq := strings.Cut(w, "=")
	if !eq || name == "" || v == "" || v == argvRedacted {
		return "", false
	}
	for i, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return "", false
		}
	}
	return name + "=" + argvRedacted, true
}

// maxWordDepth bounds how many KEY=value levels redactWord follows
// ("--env=A=B=…").
const maxWordDepth = 4

// redactWord redacts what looks secret in one argument (see redactArgv),
// and says how many values it redacted.
func (p *redactPolicy) redactWord(w string, depth int) (string, int) {
	if w == "" || w == argvRedacted {
		return w, 0
	}
	if r, n, ok := p.redactJSONWord(w); ok {
		return r, n
	}
	if r, ok := p.redactHeader(w); ok {
		return r, 1
	}
	if r, ok := redactBearer(w); ok && p.keyMatches([]byte("bearer")) {
		return r, 1
	}
	if name, value, eq := strings.Cut(w, "="); eq && value != "" && depth < maxWordDepth {
		if p.keyMatches([]byte(strings.TrimLeft(name, "-"))) {
			if value == argvRedacted {
				return w, 0
			}
			return name + "=" + argvRedacted, 1
		}
		r, n := p.redactWord(value, depth+1)
		if n > 0 {
			return name + "=" + r, n
		}
	}
	if !p.keyMatches([]byte("password")) {
		return w, 0
	}
	return redactUserinfo(w)
}

// redactJSONWord redacts the values of secret-looking keys in a word that
// is a JSON object or array; ok is false for any other word.
func (p *redactPolicy) redactJSONWord(w string) (string, int, bool) {
	t := strings.TrimSpace(w)
	if t == "" || t[0] != '{' && t[0] != '[' || !json.Valid([]byte(t)) {
		return "", 0, false
	}
	var out []byte
	r := newRedactor(&redactPolicy{keys: p.keys}, func(b []byte) { out = append(out, b...) })
	r.write([]byte(w))
	return string(out), r.count, true
}

// redactHeader redacts the value of an HTTP header "Name: value" (or
// "Name:value") whose name matches; ok is false for any other word.
func (p *redactPolicy) redactHeader(w string) (string, bool) {
	name, value, ok := strings.Cut(w, ":")
	if !ok || name == "" || strings.HasPrefix(value, "//") || strings.TrimSpace(value) == "" {
		return "", false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
	}
	if !p.keyMatches([]byte(name)) {
		return "", false
	}
	space := value[:len(value)-len(strings.TrimLeft(value, " \t"))]
	return name + ":" + space + argvRedacted, true
}

// redactBearer redacts the token of "Bearer TOKEN" (any case).
func redactBearer(w string) (string, bool) {
	const b = "bearer "
	if len(w) <= len(b) || !strings.EqualFold(w[:len(b)], b) || strings.TrimSpace(w[len(b):]) == argvRedacted {
		return "", false
	}
	return w[:len(b)] + argvRedacted, true
}

// redactUserinfo redacts the password of a URL's userinfo
// ("scheme://user:PASSWORD@host") anywhere in w, and says how many it
// redacted.
func redactUserinfo(w string) (string, int) {
	n := 0
	var b strings.Builder
	for {
		i := strings.Index(w, "://")
		if i < 0 {
			break
		}
		b.WriteString(w[:i+3])
		w = w[i+3:]
		end := strings.IndexAny(w, "/?# ")
		if end < 0 {
			end = len(w)
		}
		auth := w[:end]
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		user, pass, ok := strings.Cut(auth[:at], ":")
		if !ok || pass == "" || pass == argvRedacted {
			continue
		}
		b.WriteString(user + ":" + argvRedacted)
		w = w[at:]
		n++
	}
	b.WriteString(w)
	return b.String(), n
}
