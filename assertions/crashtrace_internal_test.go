package assertions

import "testing"

// TestCrashTrace: the traces uncaught errors leave on stderr are found by
// their first line, with the line naming the error; log lines are not.
func TestCrashTrace(t *testing.T) {
	tests := []struct {
		name, stderr, want string
	}{
		{"node", "node:events:502\n      throw er; // Unhandled 'error' event\n      ^\n\nError: write EPIPE\n    at WriteWrap.onWriteComplete [as oncomplete] (node:internal/stream_base_commons:95:16)\n",
			"throw er; // Unhandled 'error' event … Error: write EPIPE"},
		{"go", "panic: write /dev/stdout: broken pipe\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: write /dev/stdout: broken pipe"},
		{"python", "Traceback (most recent call last):\n  File \"server.py\", line 3, in <module>\n    sys.stdout.flush()\nBrokenPipeError: [Errno 32] Broken pipe\n",
			"Traceback (most recent call last): … BrokenPipeError: [Errno 32] Broken pipe"},
		{"rust", "thread 'main' panicked at src/main.rs:4:5:\nfailed printing to stdout: Broken pipe (os error 32)\n", "thread 'main' panicked at src/main.rs:4:5:"},
		{"a log line", "server: transport error: write EPIPE\nserver: bye\n", ""},
	}
	for _, tt := range tests {
		got, ok := crashTrace([]byte(tt.stderr))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: crashTrace = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}
