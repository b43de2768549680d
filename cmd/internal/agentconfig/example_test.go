package agentconfig_test

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/cmd/internal/agentconfig"
)

// Wrap puts the proxy in front of a server by editing its entry's bytes;
// Unwrap gives the original back.
func Example() {
	text := []byte(`{
  // my servers
  "mcpServers": {"files": {"command": "npx", "args": ["-y", "files-server"]}}
}`)
	f, err := agentconfig.Parse("settings.json", text)
	if err != nil {
		panic(err)
	}
	wrapped, err := f.Wrap(f.Servers, "/usr/local/bin/mcpstdio", "/state")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(wrapped))
	w, _ := agentconfig.Parse("settings.json", wrapped)
	back, _ := w.Unwrap(w.Servers)
	fmt.Println(string(back) == string(text))
	// Output:
	// {
	//   // my servers
	//   "mcpServers": {"files": {"command": "/usr/local/bin/mcpstdio", "args": ["proxy", "-dir", "/state", "--", "npx", "-y", "files-server"]}}
	// }
	// true
}
