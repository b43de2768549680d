// Package cancelrule judges whether a server stopped the work of a request
// it was told to cancel: the cancel rule of the release criteria, in one
// place, for the criteria (package assertions), the replay of a recorded
// session (package replay) and checks of a user's own.
//
// A cancel can be judged only by what shows the work: progress
// notifications for the request's token, the server's CPU demand and the
// processes it started (Linux, child servers: /proc), and the response.
// The rule first learns what the call looks like while it works (Observe:
// its Signature), then cancels and watches (Watch): work that goes on shows
// in one of them; work that stopped shows as the signature going quiet.
// When the signature has nothing to go quiet (no progress, no CPU use, no
// processes, unknown duration), the verdict is Unverified, never Stopped.
//
// The outcome is one of four: the work went on (a failure of the cancel
// path); it stopped and no response came (a pass); it stopped but the
// request was answered anyway (a warning: cancellation SHOULD NOT be
// answered before the 2026-07-28 revision, MUST NOT on its stdio
// transport, and the article this project grew from allows the race); or
// nothing could tell (unverified).
package cancelrule
