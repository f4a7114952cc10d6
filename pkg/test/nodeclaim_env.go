package test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/settings"
)

// ControllerEnv is an envtest API server with a started controller-runtime manager (cache, field indexes),
// a fake cloud provider, a fake clock and the deps controllers are built from.
type ControllerEnv struct {
	Env      *Env
	Manager  manager.Manager
	Client   client.Client
	Clock    *clocktesting.FakeClock
	Cloud    *fake.CloudProvider
	Recorder *record.FakeRecorder
	Deps     deps.Deps
}

// Registrar is a controller that registers with a manager.
type Registrar interface {
	Register(ctx context.Context, m manager.Manager) error
}

// StartControllerEnv starts envtest and a manager running the controllers built by the given constructors.
// Everything stops when the test ends.
func StartControllerEnv(t testing.TB, controllers ...func(deps.Deps) Registrar) *ControllerEnv {
	t.Helper()
	// Controller logs are dropped: tests assert on objects, events and metrics.
	ctrllog.SetLogger(logr.Discard())
	scheme, err := NewScheme(karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := StartEnv(t, scheme)
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Several tests of one binary register controllers with the same names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := settings.Parse(nil, func(k string) string {
		if k == "CLUSTER_NAME" {
			return "test-cluster"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := fake.New(clk)
	rec := record.NewFakeRecorder(1000)
	d := deps.Deps{
		Client: mgr.GetClient(), KubeClient: kube, CloudProvider: cloud, Clock: clk,
		Recorder: rec, Settings: s, Metrics: metrics.NewForTest(), Plans: deps.NewPlans(),
		RegistrationHealth: deps.NewRegistrationHealth(),
	}
	for _, newController := range controllers {
		if err := newController(d).Register(ctx, mgr); err != nil {
			t.Fatalf("registering controller: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return &ControllerEnv{Env: env, Manager: mgr, Client: mgr.GetClient(), Clock: clk, Cloud: cloud, Recorder: rec, Deps: d}
}

// Eventually polls check every 50ms until it returns true or timeout passes, then fails the test with the last
// message check returned.
func Eventually(t testing.TB, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline above
	}
}
