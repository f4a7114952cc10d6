package status_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// deniedError is a dry run refused for permissions.
type deniedError struct{ action string }

func (e *deniedError) Error() string {
	return "UnauthorizedOperation: You are not authorized to perform this operation."
}
func (e *deniedError) DeniedAction() string { return e.action }

// dryRunResolver answers DryRunLaunch with err and counts the calls.
type dryRunResolver struct {
	fakeResolver
	mu    sync.Mutex
	err   error
	calls int
}

func (r *dryRunResolver) DryRunLaunch(context.Context, *awsv1.EC2NodeClass) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return r.err
}

func (r *dryRunResolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

type dryRunEnv struct {
	kube client.Client
	clk  *clocktesting.FakeClock
	ctrl *status.Controller
	r    *dryRunResolver
}

func newDryRunEnv(t *testing.T, r *dryRunResolver, s *settings.Settings) *dryRunEnv {
	t.Helper()
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&awsv1.EC2NodeClass{}).
		WithObjects(test.EC2NodeClass("default", "demo").Obj()).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &dryRunEnv{kube: kube, clk: clk, r: r, ctrl: status.New(deps.Deps{Client: kube, Clock: clk, Settings: s}, r)}
}

// reconcile reconciles the default node class and returns its ValidationSucceeded condition and the requeue.
func (e *dryRunEnv) reconcile(t *testing.T) (metav1.Condition, time.Duration) {
	t.Helper()
	ctx := context.Background()
	res, err := e.ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	if cond == nil {
		t.Fatal("no ValidationSucceeded condition")
	}
	return *cond, res.RequeueAfter
}

// TestValidationDryRun: ValidationSucceeded carries the launch dry run's outcome with Karpenter's reasons, waits
// for the resolved dependencies, and is True without a dry run under DISABLE_DRY_RUN.
func TestValidationDryRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resolver   *dryRunResolver
		settings   *settings.Settings
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
		wantCalls  int
		wantRetry  bool
	}{
		{name: "allowed", resolver: &dryRunResolver{}, wantStatus: metav1.ConditionTrue,
			wantReason: karpv1.ReasonValidationSucceeded, wantCalls: 1},
		{name: "CreateLaunchTemplate denied", resolver: &dryRunResolver{err: &deniedError{"CreateLaunchTemplate"}},
			wantStatus: metav1.ConditionFalse, wantReason: "CreateLaunchTemplateAuthCheckFailed", wantInMsg: "ec2:CreateLaunchTemplate", wantCalls: 1},
		{name: "CreateFleet denied", resolver: &dryRunResolver{err: &deniedError{"CreateFleet"}},
			wantStatus: metav1.ConditionFalse, wantReason: "CreateFleetAuthCheckFailed", wantInMsg: "ec2:CreateFleet", wantCalls: 1},
		{name: "RunInstances denied", resolver: &dryRunResolver{err: &deniedError{"RunInstances"}},
			wantStatus: metav1.ConditionFalse, wantReason: "RunInstancesAuthCheckFailed", wantInMsg: "UnauthorizedOperation", wantCalls: 1},
		{name: "dry run disabled", resolver: &dryRunResolver{err: &deniedError{"CreateFleet"}},
			settings: &settings.Settings{DisableDryRun: true}, wantStatus: metav1.ConditionTrue,
			wantReason: karpv1.ReasonValidationSucceeded, wantCalls: 0},
		{name: "transient failure", resolver: &dryRunResolver{err: errors.New("connection reset")},
			wantStatus: metav1.ConditionUnknown, wantReason: status.ReasonResolutionFailed, wantInMsg: "connection reset",
			wantCalls: 1, wantRetry: true},
		{name: "subnets not found", resolver: &dryRunResolver{fakeResolver: fakeResolver{noSubnets: true}},
			wantStatus: metav1.ConditionFalse, wantReason: status.ReasonDependenciesNotReady, wantCalls: 0, wantRetry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDryRunEnv(t, tc.resolver, tc.settings)
			cond, requeue := e.reconcile(t)
			if cond.Status != tc.wantStatus || cond.Reason != tc.wantReason || !strings.Contains(cond.Message, tc.wantInMsg) {
				t.Errorf("ValidationSucceeded = %s/%s %q, want %s/%s containing %q", cond.Status, cond.Reason, cond.Message,
					tc.wantStatus, tc.wantReason, tc.wantInMsg)
			}
			if got := e.r.count(); got != tc.wantCalls {
				t.Errorf("%d dry runs, want %d", got, tc.wantCalls)
			}
			if retry := requeue == 30*time.Second; retry != tc.wantRetry {
				t.Errorf("requeue after %s, want a retry: %v", requeue, tc.wantRetry)
			}
		})
	}
}

// TestValidationDryRunCached: the outcome of a dry run is kept 30 minutes while the node class does not change;
// a change of its spec, or the end of the 30 minutes, dry-runs again.
func TestValidationDryRunCached(t *testing.T) {
	e := newDryRunEnv(t, &dryRunResolver{err: &deniedError{"CreateFleet"}}, nil)
	ctx := context.Background()
	steps := []struct {
		name      string
		do        func()
		wantCalls int
	}{
		{"first reconcile", func() {}, 1},
		{"5 minutes later", func() { e.clk.Step(5 * time.Minute) }, 1},
		{"29 minutes later", func() { e.clk.Step(24 * time.Minute) }, 1},
		{"30 minutes later", func() { e.clk.Step(time.Minute) }, 2},
		{"spec changed", func() {
			nc := &awsv1.EC2NodeClass{}
			if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
				t.Fatal(err)
			}
			nc.Spec.Tags = map[string]string{"team": "platform"}
			nc.Generation++
			if err := e.kube.Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
		}, 3},
		{"unchanged again", func() { e.clk.Step(time.Minute) }, 3},
	}
	for _, st := range steps {
		st.do()
		cond, _ := e.reconcile(t)
		if cond.Reason != "CreateFleetAuthCheckFailed" {
			t.Errorf("%s: ValidationSucceeded reason %s, want CreateFleetAuthCheckFailed", st.name, cond.Reason)
		}
		if got := e.r.count(); got != st.wantCalls {
			t.Errorf("%s: %d dry runs, want %d", st.name, got, st.wantCalls)
		}
	}
}
