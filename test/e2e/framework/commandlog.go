package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dovetail/dovetail/pkg/controllers/disruption"
)

// CommandSteps counts the disruption controller's command steps in its log (JSON lines, as the controller writes
// them) from since on: what a consolidation or a drift waited for, beside its time. The keys are the figures'
// names: commandsStarted, commandsNotStarted (decided, but their pods would not fit in the kube-scheduler's order),
// extraReplacementLaunches (other pods took a drift command's replacements), drainsAfterContentionWait,
// commandsShrunk and commandsAbandoned. A line that is not JSON is skipped (the log mixes in none today).
func CommandSteps(r io.Reader, since time.Time) (map[string]int, error) {
	keys := map[string]string{
		disruption.LogStarted:                "commandsStarted",
		disruption.LogNotStarted:             "commandsNotStarted",
		disruption.LogExtraReplacements:      "extraReplacementLaunches",
		disruption.LogDrainedAfterContention: "drainsAfterContentionWait",
		disruption.LogShrunk:                 "commandsShrunk",
		disruption.LogAbandoned:              "commandsAbandoned",
	}
	out := map[string]int{}
	for _, k := range keys {
		out[k] = 0
	}
	// Log times have whole seconds: a line of since's second counts.
	since = since.Truncate(time.Second)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var line struct {
			Logger string `json:"logger"`
			Msg    string `json:"msg"`
			TS     string `json:"ts"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Logger != disruption.Name {
			continue
		}
		k, ok := keys[line.Msg]
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, line.TS)
		if err != nil {
			return nil, fmt.Errorf("log line time %q: %w", line.TS, err)
		}
		if !at.Before(since) {
			out[k]++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the controller's log: %w", err)
	}
	return out, nil
}

// ControllerCommandSteps is CommandSteps on the stack's controller log.
func (s *Stack) ControllerCommandSteps(since time.Time) (map[string]int, error) {
	f, err := os.Open(s.ControllerLogPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return CommandSteps(f, since)
}
