// Package page shows what a proxy saw to a person: a record as a summary
// and a text timeline for the terminal (WriteText), as one self-contained
// HTML file (WriteHTML), and the running proxies as a live page served on
// loopback (Server). Everything shown comes from the record or the status
// files as they are, already redacted by the proxy; environment values are
// never recorded, so never shown.
package page
