package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is the outcome of one check.
type Status string

// Statuses, from best to worst.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's outcome. Check names are stable (docs/doctor.md lists them); checks about one object
// append it: "nodeclass-subnets/default".
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix says what to change; empty for passing checks.
	Fix string `json:"fix,omitempty"`
}

// Report is every check's result, in the order they ran.
type Report struct {
	Results []Result `json:"results"`
	Pass    int      `json:"pass"`
	Warn    int      `json:"warn"`
	Fail    int      `json:"fail"`
}

func (r *Report) add(res Result) {
	r.Results = append(r.Results, res)
	switch res.Status {
	case Pass:
		r.Pass++
	case Warn:
		r.Warn++
	case Fail:
		r.Fail++
	}
}

func (r *Report) pass(check, format string, args ...any) {
	r.add(Result{Check: check, Status: Pass, Message: fmt.Sprintf(format, args...)})
}

func (r *Report) warn(check, fix, format string, args ...any) {
	r.add(Result{Check: check, Status: Warn, Message: fmt.Sprintf(format, args...), Fix: fix})
}

func (r *Report) fail(check, fix, format string, args ...any) {
	r.add(Result{Check: check, Status: Fail, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// Get returns the results of a check (all objects when the name has no "/").
func (r *Report) Get(check string) []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Check == check || strings.HasPrefix(res.Check, check+"/") {
			out = append(out, res)
		}
	}
	return out
}

// WriteText prints one line per check and an indented fix line under each warning and failure.
func (r *Report) WriteText(w io.Writer) error {
	for _, res := range r.Results {
		if _, err := fmt.Fprintf(w, "%-4s  %-34s %s\n", strings.ToUpper(string(res.Status)), res.Check, res.Message); err != nil {
			return err
		}
		if res.Fix != "" {
			if _, err := fmt.Fprintf(w, "      fix: %s\n", res.Fix); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d warnings, %d failed\n", r.Pass, r.Warn, r.Fail)
	return err
}

// WriteJSON prints the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
