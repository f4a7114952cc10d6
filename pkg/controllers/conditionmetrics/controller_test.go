package conditionmetrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// scrape is the text of the collector's series named.
func scrape(t *testing.T, m *metrics.Metrics, names ...string) string {
	t.Helper()
	out, err := testutil.CollectAndFormat(m.ObjectConditions, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// eventually polls f until it returns "" or the deadline passes, then fails with its last answer.
func eventually(t *testing.T, what string, f func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConditionMetrics: against an API server, a scrape shows each Node's and NodePool's current conditions; a
// Node condition change counts a Node transition; a NodePool held by a finalizer shows its termination time and,
// once gone, observes its termination duration.
func TestConditionMetrics(t *testing.T) {
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	skip := true
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.NewForTest()
	ctx, cancel := context.WithCancel(context.Background())
	if err := NewController(deps.Deps{Client: mgr.GetClient(), Metrics: m, Clock: clock.RealClock{}}).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	kube := env.Client
	node := test.Node("ip-10-0-0-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "default").Obj()
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", LastTransitionTime: metav1.Now()}}
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node condition gauge", func() string {
		body := scrape(t, m, "operator_node_status_condition_count")
		if !strings.Contains(body, `karpenter_sh_nodepool="default",name="ip-10-0-0-1",namespace="",reason="KubeletNotReady",status="False",type="Ready"} 1`) {
			return "no Ready=False series in\n" + body
		}
		return ""
	})
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.Now()}}
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node transition", func() string {
		body, err := testutil.CollectAndFormat(m.ObjectChanges, expfmt.TypeTextPlain, "operator_node_status_condition_transitions_total")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), `reason="KubeletReady",status="True",type="Ready"} 1`) {
			return "no transition to Ready=True in\n" + string(body)
		}
		return ""
	})

	np := test.NodePool("default").Obj()
	np.Finalizers = []string{"test.dovetail.sh/hold"}
	if err := kube.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nodepool termination gauge", func() string {
		body := scrape(t, m, "operator_nodepool_termination_current_time_seconds", "operator_termination_current_time_seconds")
		if !strings.Contains(body, `operator_nodepool_termination_current_time_seconds{name="default",namespace=""}`) ||
			!strings.Contains(body, `operator_termination_current_time_seconds{group="karpenter.sh",kind="NodePool",name="default",namespace=""}`) {
			return "no termination series in\n" + body
		}
		return ""
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	np.Finalizers = nil
	if err := kube.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nodepool termination duration", func() string {
		body, err := testutil.CollectAndFormat(m.ObjectChanges, expfmt.TypeTextPlain, "operator_nodepool_termination_duration_seconds")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "operator_nodepool_termination_duration_seconds_count 1") {
			return "no observation in\n" + string(body)
		}
		if n := testutil.CollectAndCount(m.ObjectConditions, "operator_nodepool_termination_current_time_seconds"); n != 0 {
			return "the termination gauge outlived the NodePool"
		}
		return ""
	})
}
