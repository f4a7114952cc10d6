package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

func TestLogWaitingOncePerStartStopAndAMinuteBetweenRewordings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	c := NewController(deps.Deps{Clock: clk})
	steps := []struct {
		after time.Duration
		why   string
	}{
		{0, "nodeclaim a is not initialized yet"},
		{10 * time.Second, "nodeclaim a is not initialized yet"}, // same: nothing
		{10 * time.Second, "nodeclaim b is not initialized yet"}, // reworded within a minute: nothing
		{time.Minute, "nodeclaim c is not initialized yet"},      // reworded a minute on: logged
		{10 * time.Second, ""},                                   // stops waiting: logged at once
		{time.Second, "1 pod is waiting for capacity the provisioner can launch"},
	}
	for _, s := range steps {
		clk.Step(s.after)
		c.logWaiting(ctx, s.why)
	}
	want := []string{
		`"level"=0 "msg"="consolidation waits" "why"="nodeclaim a is not initialized yet"`,
		`"level"=0 "msg"="consolidation waits" "why"="nodeclaim c is not initialized yet"`,
		`"level"=0 "msg"="consolidation no longer waits"`,
		`"level"=0 "msg"="consolidation waits" "why"="1 pod is waiting for capacity the provisioner can launch"`,
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("log lines (-want +got):\n%s\n%s", d, fmt.Sprint(lines))
	}
}
