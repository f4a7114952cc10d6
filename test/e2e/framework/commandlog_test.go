package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Lines as the controller writes them (cut short), with lines of other loggers and a line before the phase.
const commandLog = `{"level":"info","ts":"2026-12-03T06:26:16Z","logger":"disruption","msg":"disrupting","command":"drift-a-1"}
{"level":"info","ts":"2026-12-03T06:26:17Z","logger":"disruption","msg":"disrupting","command":"drift-459hk-1796279175","reason":"Drifted","decision":"delete"}
{"level":"info","ts":"2026-12-03T06:26:17Z","logger":"disruption","msg":"disrupting","command":"drift-77977-1796279175","reason":"Drifted","decision":"replace"}
{"level":"info","ts":"2026-12-03T06:26:36Z","logger":"disruption","msg":"launching more replacements: the pods of the command's nodes no longer fit on its replacements","command":"drift-77977-1796279175","extra":1}
{"level":"info","ts":"2026-12-03T06:26:57Z","logger":"disruption","msg":"not starting disruption: its pods do not fit on the nodes there are now","nodeclaims":["drift-bck25"]}
{"level":"debug","ts":"2026-12-03T06:27:00Z","logger":"disruption","msg":"not draining yet: waiting for other moving pods to land","command":"drift-x"}
{"level":"info","ts":"2026-12-03T06:27:30Z","logger":"disruption","msg":"draining although other moving pods could take the room of its pods","command":"drift-x"}
{"level":"info","ts":"2026-12-03T06:28:00Z","logger":"provisioner","msg":"disrupting"}
not a JSON line
{"level":"info","ts":"2026-12-03T06:30:39Z","logger":"disruption","msg":"abandoning disruption","command":"drift-z58l5-1796279296"}
`

func TestCommandSteps(t *testing.T) {
	since := time.Date(2026, 12, 3, 6, 26, 17, 400e6, time.UTC)
	got, err := CommandSteps(strings.NewReader(commandLog), since)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"commandsStarted": 2, "commandsNotStarted": 1, "extraReplacementLaunches": 1,
		"drainsAfterContentionWait": 1, "commandsShrunk": 0, "commandsAbandoned": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if _, err := CommandSteps(strings.NewReader(`{"logger":"disruption","msg":"disrupting","ts":"yesterday"}`), since); err == nil {
		t.Error("a line with an unreadable time was counted or skipped without an error")
	}
}
