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
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRun starts the whole operator against envtest, as cmd/dovetail does: it must take the leader Lease in
// POD_NAMESPACE, serve health and metrics, and stop cleanly.
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

	test.Eventually(t, 60*time.Second, func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v\nlogs:\n%s", err, logs.String())
		default:
		}
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: LeaderElectionID}, lease); err != nil {
			return false, "lease: " + err.Error()
		}
		return true, ""
	})
	for _, u := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort),
		fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort),
		fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
	} {
		var body string
		test.Eventually(t, 30*time.Second, func() (bool, string) {
			resp, err := http.Get(u)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			if resp.StatusCode != http.StatusOK {
				return false, fmt.Sprintf("%s: %d", u, resp.StatusCode)
			}
			// The garbage collector lists instances right after start: its cloud provider call is measured.
			if strings.HasSuffix(u, "/metrics") && !strings.Contains(body, `karpenter_cloudprovider_duration_seconds_count{controller="nodeclaim.garbagecollection",method="List",provider="aws"}`) {
				return false, "metrics endpoint lacks the cloud provider call of the garbage collector"
			}
			return true, ""
		})
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
