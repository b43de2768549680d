package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/term"
)

// The JUnit XML that CI systems read (the Ant/Maven Surefire schema, as
// Jenkins, GitLab and GitHub reporters read it): a testsuite per report, a
// testcase per criterion.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name string `xml:"name,attr"`
	junitCounts
	Cases []junitCase `xml:"testcase"`
}

// junitCounts are the counts of a testsuite, and of all of them. Errors
// (the test itself broke) stay 0: a criterion that breaks is a failure.
type junitCounts struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut *junitText    `xml:"system-out"`
}

// junitText is text kept readable in the file: a CDATA section, not a
// character entity per newline.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// junitReport turns the reports into JUnit XML: a testsuite per report, a
// testcase per result. A result that is not acceptable (Result.Err: a
// failure, or a verdict other than the one -expect names) is a failure; an
// acceptable skip is skipped; a pass, a warning and an expected verdict
// pass. Every testcase's system-out holds the verdict, evidence, rule,
// protocol and details; times are in seconds.
func junitReport(reports []*assertions.Report) junitSuites {
	all := junitSuites{Name: "mcpstdio probe"}
	var total time.Duration
	for _, rep := range reports {
		suite := junitSuite{Name: xmlSafe(rep.Subject), junitCounts: junitCounts{Time: seconds(rep.Duration)}}
		for _, res := range rep.Results {
			c := junitCase{Name: xmlSafe(res.Name), Classname: xmlSafe(rep.Subject), Time: seconds(res.Duration), SystemOut: &junitText{xmlSafe(resultText(res))}}
			switch err := res.Err(); {
			case err != nil:
				c.Failure = &junitMessage{Message: term.Line(firstLine(err.Error())), Type: string(res.Verdict), Text: xmlSafe(err.Error())}
				suite.Failures++
			case res.Verdict == assertions.Skip:
				c.Skipped = &junitMessage{Message: term.Line(res.Evidence)}
				suite.Skipped++
			}
			suite.Cases = append(suite.Cases, c)
		}
		suite.Tests = len(suite.Cases)
		all.Tests += suite.Tests
		all.Failures += suite.Failures
		all.Skipped += suite.Skipped
		total += rep.Duration
		all.Suites = append(all.Suites, suite)
	}
	all.Time = seconds(total)
	return all
}

// writeJUnit writes the reports to w as a JUnit XML document.
func writeJUnit(w io.Writer, reports []*assertions.Report) error {
	b, err := xml.MarshalIndent(junitReport(reports), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, b)
	return err
}

// resultText is a result in full, for a reader of the CI log.
func resultText(res assertions.Result) string {
	var b strings.Builder
	v := string(res.Verdict)
	if res.Expected != "" {
		v += " (expected: " + string(res.Expected) + ")"
	}
	fmt.Fprintf(&b, "verdict: %s\nevidence: %s\n", v, res.Evidence)
	if res.Rule != "" {
		fmt.Fprintf(&b, "rule: %s\n", res.Rule)
	}
	if res.Era != "" {
		fmt.Fprintf(&b, "protocol: %s\n", res.Era)
	}
	if d := strings.TrimSpace(res.Details); d != "" {
		fmt.Fprintf(&b, "\n%s\n", d)
	}
	return b.String()
}

// xmlSafe escapes what a server's or a host's text can hold that a CI
// page must not show raw, as the terminal output does (term.Block): C0 and
// C1 controls (an escape sequence, U+009B CSI, U+009D OSC), Unicode
// format characters (the bidirectional override U+202E, which reorders
// what a reader sees), invalid UTF-8; newlines and tabs are kept. What is
// left is all XML 1.0 can hold, in CDATA too (encoding/xml checks only
// attributes and character data).
func xmlSafe(s string) string { return term.Block(s) }

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
