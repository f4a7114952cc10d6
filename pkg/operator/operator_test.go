package operator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRun starts the whole operator against envtest, as cmd/dovetail does, while Karpenter holds the shared
// leader Lease in POD_NAMESPACE: it must serve health and metrics, wait and say so (metric, event, log), take
// the Lease under a Dovetail identity once Karpenter releases it, run its controllers, and stop cleanly.
func TestRun(t *testing.T) {
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "000000000000")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, scheme)
	metricsPort, healthPort := test.FreePort(t), test.FreePort(t)
	s, err := settings.Parse([]string{"--cluster-name=test", fmt.Sprintf("--metrics-port=%d", metricsPort),
		fmt.Sprintf("--health-probe-port=%d", healthPort)}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Karpenter holds the shared Lease and renews it every second until it shuts down, releasing it.
	karpenter := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: leaderlease.DefaultName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(karpenterHolder), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	if err := env.Client.Create(ctx, karpenter); err != nil {
		t.Fatal(err)
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-tick.C:
			}
			l := &coordinationv1.Lease{}
			if err := env.Client.Get(renewCtx, client.ObjectKeyFromObject(karpenter), l); err != nil {
				continue
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_ = env.Client.Update(renewCtx, l)
		}
	}()

	logs := &test.SyncBuffer{}
	logger := NewLogger("info", logs)
	SetGlobalLoggers(logger) // before any goroutine uses a client, as main does
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, s, Options{RestConfig: env.Config, Logger: logger, SkipControllerNameValidation: true, Getenv: func(k string) string {
			if k == "POD_NAMESPACE" {
				return "default"
			}
			return ""
		}})
	}()
	running := func() {
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v\nlogs:\n%s", err, logs.String())
		default:
		}
	}
	metricsBody := func() (string, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, u := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort),
		fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort),
	} {
		test.Eventually(t, 60*time.Second, func() (bool, string) {
			running()
			resp, err := http.Get(u)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s: %d", u, resp.StatusCode)
		})
	}

	// While Karpenter renews, Dovetail waits and says so: the metric, one event on the Lease, one log line.
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		running()
		body, err := metricsBody()
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(body, `dovetail_leader_election_waiting{holder_kind="karpenter"} 1`), "no waiting metric"
	})
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		events := &corev1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == ReasonWaitingForLeaderLease && e.InvolvedObject.Name == leaderlease.DefaultName && strings.Contains(e.Message, karpenterHolder) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event among %d", ReasonWaitingForLeaderLease, len(events.Items))
	})
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(karpenter), l); err != nil || leaderlease.HolderOf(l) != karpenterHolder {
		t.Fatalf("Dovetail took the lease Karpenter renews: holder %q (%v)", leaderlease.HolderOf(l), err)
	}
	if body, _ := metricsBody(); strings.Contains(body, `controller="nodeclaim.garbagecollection"`) {
		t.Error("the garbage collector ran while Karpenter held the lease")
	}

	// Karpenter shuts down and releases the Lease (as it does on cancel): Dovetail takes it and starts.
	stopRenewing()
	<-renewed
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(karpenter), l); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = nil
	if err := env.Client.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 60*time.Second, func() (bool, string) {
		running()
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(karpenter), lease); err != nil {
			return false, "lease: " + err.Error()
		}
		h := leaderlease.HolderOf(lease)
		return leaderlease.IsDovetail(h), "holder " + h
	})
	var body string
	test.Eventually(t, 30*time.Second, func() (bool, string) {
		var err error
		if body, err = metricsBody(); err != nil {
			return false, err.Error()
		}
		// The garbage collector lists instances right after start: its cloud provider call is measured.
		if !strings.Contains(body, `karpenter_cloudprovider_duration_seconds_count{controller="nodeclaim.garbagecollection",method="List",provider="aws"}`) {
			return false, "metrics endpoint lacks the cloud provider call of the garbage collector"
		}
		return strings.Contains(body, `dovetail_leader_election_waiting{holder_kind="karpenter"} 0`), "the waiting metric did not drop to 0"
	})
	if n := strings.Count(logs.String(), "Karpenter holds the leader lease; Dovetail waits"); n != 1 {
		t.Errorf("the wait logged %d times, want once", n)
	}
	if !strings.Contains(logs.String(), `"starting dovetail"`) {
		t.Errorf("no start log line in:\n%s", logs.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop after cancel")
	}
}

func TestClusterUIDNeedsNamespace(t *testing.T) {
	_, err := ClusterUID(context.Background(), emptyReader{})
	if err == nil || !strings.Contains(err.Error(), "reading the kube-system namespace for the cluster UID") {
		t.Errorf("ClusterUID error = %v", err)
	}
}

type emptyReader struct{ client.Reader }

func (emptyReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("namespaces %q not found", "kube-system")
}
