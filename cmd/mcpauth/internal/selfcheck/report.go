package selfcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is the outcome of one check. Its JSON form is the lowercase
// string.
type Status string

// The outcomes, from good to bad.
const (
	// StatusPass: the server does what the requirement asks.
	StatusPass Status = "pass"
	// StatusSkip: the check could not run (for example no token was
	// given), or it cannot be decided from outside.
	StatusSkip Status = "skip"
	// StatusWarn: a SHOULD, a toolkit recommendation, or something
	// clients commonly rely on is missing; interoperable but fragile.
	StatusWarn Status = "warn"
	// StatusFail: a MUST is broken; some clients will fail or the server
	// is exploitable.
	StatusFail Status = "fail"
)

// Result is one line of a [Report].
type Result struct {
	// ID is the requirement checked, e.g. "RS-04" (see
	// docs/requirements.md).
	ID string `json:"id"`
	// Name says what was checked, in a few words. It never contains
	// values that vary between runs.
	Name string `json:"name"`
	// Status is the outcome.
	Status Status `json:"status"`
	// Detail explains the outcome: what was sent and what came back.
	// Values the server chose are quoted and shortened; the token is never
	// included.
	Detail string `json:"detail,omitempty"`
}

// Summary counts the results by status.
type Summary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Report is the outcome of [Run]: one [Result] per check, in the order run.
// Its JSON form (field names stable, for machines) is
//
//	{"url": …, "time": …, "summary": {"pass": n, "warn": n, "fail": n, "skip": n}, "failed": bool, "results": [{"id", "name", "status", "detail"}, …]}
//
// A Report is a plain value; it is not safe for concurrent mutation.
type Report struct {
	// URL is the endpoint checked.
	URL string
	// Time is when the check started.
	Time time.Time
	// Results are the checks in the order run.
	Results []Result
}

// Failed reports whether any check failed; a command should then exit
// non-zero.
func (r *Report) Failed() bool {
	return r.Summary().Fail > 0
}

// Summary counts the results by status.
func (r *Report) Summary() Summary {
	var s Summary
	for _, res := range r.Results {
		switch res.Status {
		case StatusPass:
			s.Pass++
		case StatusWarn:
			s.Warn++
		case StatusFail:
			s.Fail++
		default:
			s.Skip++
		}
	}
	return s
}

// MarshalJSON encodes the report with its summary.
func (r *Report) MarshalJSON() ([]byte, error) {
	results := r.Results
	if results == nil {
		results = []Result{}
	}
	return json.Marshal(struct {
		URL     string    `json:"url"`
		Time    time.Time `json:"time"`
		Summary Summary   `json:"summary"`
		Failed  bool      `json:"failed"`
		Results []Result  `json:"results"`
	}{r.URL, r.Time, r.Summary(), r.Failed(), results})
}

// WriteTable writes the report as an aligned text table, one check a line
// (STATUS, ID, CHECK, DETAIL), followed by the counts.
func (r *Report) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tID\tCHECK\tDETAIL")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", strings.ToUpper(string(res.Status)), res.ID, res.Name, res.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			out.WriteString(strings.TrimRight(line, " \n") + "\n")
		}
	}
	s := r.Summary()
	fmt.Fprintf(&out, "%s: %d pass, %d warn, %d fail, %d skip\n", r.URL, s.Pass, s.Warn, s.Fail, s.Skip)
	_, err := io.WriteString(w, out.String())
	return err
}
