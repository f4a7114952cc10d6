package disruptiontest

import (
	"fmt"

	"github.com/dovetail/dovetail/pkg/disruption"
)

// commands returns the result's commands.
func commands(res *disruption.Result) []*disruption.Command {
	if res == nil {
		return nil
	}
	return res.Commands
}

// Efficiency is the pass's expected savings ($/h) and the pods its commands evict.
func Efficiency(res *disruption.Result) (float64, int) { return res.SavingsPerHour, res.Evictions }

// Describe summarises a result in a few lines: its commands by method and what timed out.
func Describe(res *disruption.Result) []string {
	var out []string
	byType := map[string]int{}
	nodes := map[string]int{}
	for _, c := range commands(res) {
		k := string(c.Reason) + "/" + c.Decision + "/" + c.ConsolidationType
		byType[k]++
		nodes[k] += len(c.Candidates)
	}
	for k, n := range byType {
		out = append(out, fmt.Sprintf("commands %s: %d (%d nodes)", k, n, nodes[k]))
	}
	if len(res.TimedOut) > 0 {
		out = append(out, fmt.Sprintf("timed out: %v", res.TimedOut))
	}
	return out
}
