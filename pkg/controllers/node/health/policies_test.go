package health_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/node/health"
)

// TestPolicies: NODE_REPAIR_TOLERATIONS shortens the named condition's toleration; a condition no policy watches
// is an error naming the setting, so the controller does not start with an override that does nothing.
func TestPolicies(t *testing.T) {
	cp := fake.New(clocktesting.NewFakeClock(time.Now()))
	got, err := health.Policies(cp, map[string]time.Duration{"FakeHardwareReady": 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := fake.DefaultRepairPolicies()
	want[2].TolerationDuration = 5 * time.Second
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
	_, err = health.Policies(cp, map[string]time.Duration{"Happy": time.Minute})
	if want := "NODE_REPAIR_TOLERATIONS (--node-repair-tolerations): no repair policy of the cloud provider watches condition Happy (policies watch: Ready, FakeHardwareReady)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"Ready": "ready", "KernelReady": "kernel_ready", "AcceleratedHardwareReady": "accelerated_hardware_ready"} {
		if got := health.SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}
