package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// env is one simulated account and cluster.
type env struct {
	sim *awssim.Simulator
	cfg awssdk.Config
}

func newEnv(t *testing.T) *env {
	t.Helper()
	sim, err := awssim.New(awssim.Options{Clock: clocktesting.NewFakeClock(now), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return &env{sim: sim, cfg: awssdk.Config{
		Region:           "us-west-2",
		Credentials:      credentials.NewStaticCredentialsProvider("123456789012", "secret", ""),
		BaseEndpoint:     awssdk.String(srv.URL),
		RetryMaxAttempts: 1,
		HTTPClient:       sdk.NewHTTPClient(srv.Client()),
	}}
}

// healthy are the objects of a cluster set up right: the simulator's discovery tags, a node role it has, an
// AMI alias it serves, a NodePool any instance type satisfies, a DaemonSet that tolerates everything.
func healthy() []client.Object {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "aws-node", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			PriorityClassName: "system-node-critical",
			Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		}}}}
	return []client.Object{
		test.EC2NodeClass("default", "dovetail").Obj(),
		test.NodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand").Obj(),
		test.NodeClaim("default-abcde", "default").Obj(),
		ds,
	}
}

func (e *env) doctor(t *testing.T, queue string, objs ...client.Object) *Report {
	t.Helper()
	return e.doctorWith(t, queue, nil, objs...)
}

// doctorWith runs doctor with mod applied to it first (nil: none).
func (e *env) doctorWith(t *testing.T, queue string, mod func(*Doctor), objs ...client.Object) *Report {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	d := &Doctor{
		Kube: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
			WithIndex(&coordinationv1.Lease{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).Build(),
		AWS:                  NewAWS(e.cfg),
		Cluster:              tags.Cluster{Name: "dovetail", UID: "uid-1"},
		Region:               "us-west-2",
		Queue:                queue,
		K8sVersion:           "1.34",
		UninitializedTimeout: 10 * time.Minute,
		Clock:                clocktesting.NewFakePassiveClock(now),
	}
	if mod != nil {
		mod(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := d.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dump(r *Report) string {
	var b bytes.Buffer
	_ = r.WriteText(&b)
	return b.String()
}

// TestHealthy: a cluster and account set up right pass every check.
func TestHealthy(t *testing.T) {
	e := newEnv(t)
	r := e.doctor(t, "dovetail", healthy()...)
	for _, res := range r.Results {
		if res.Status != Pass {
			t.Errorf("%s: %s %s (fix: %s)", res.Check, res.Status, res.Message, res.Fix)
		}
	}
	for _, check := range []string{"identity", "iam-permissions", "nodeclass-subnets/default", "nodeclass-security-groups/default",
		"nodeclass-amis/default", "nodeclass-instance-profile/default", "interruption-queue", "interruption-queue-policy",
		"interruption-rules", "cluster-uid", "daemonsets-disruption-taint", "daemonsets-node-agents", "leftovers",
		"uninitialized-nodes", "nodepools-launchable/default", checkMigrationLease, checkMigrationController, checkMigrationInstances} {
		if len(r.Get(check)) == 0 {
			t.Errorf("check %s did not run", check)
		}
	}
	if t.Failed() {
		t.Log(dump(r))
	}
}

// TestFaults: each broken piece of setup fails its own check, with a fix naming what to change.
func TestFaults(t *testing.T) {
	uninitialized := test.Node("ip-10-0-0-1", "aws:///us-west-2a/i-1").Taint(karpv1.CloudProviderUninitializedTaint()).Obj()
	uninitialized.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	tests := []struct {
		name    string
		faults  awssim.SetupFaults
		queue   string
		objs    func() []client.Object
		setup   func(t *testing.T, e *env)
		check   string
		wantFix string
		// status is what the check reports (default Fail; the DaemonSet checks warn).
		status Status
	}{
		{name: "expired credentials", faults: awssim.SetupFaults{IdentityError: "ExpiredToken"}, check: "identity", wantFix: "credentials"},
		{name: "missing permission", faults: awssim.SetupFaults{DeniedActions: []string{"ec2:CreateFleet", "iam:PassRole"}}, check: "iam-permissions", wantFix: "ec2:CreateFleet, iam:PassRole"},
		{name: "no queue", queue: "not-there", check: "interruption-queue", wantFix: "create the queue not-there"},
		{name: "queue policy", faults: awssim.SetupFaults{QueuePolicyMissing: true}, check: "interruption-queue-policy", wantFix: "events.amazonaws.com"},
		{name: "missing rule", faults: awssim.SetupFaults{MissingEventRules: []string{"Spot*"}}, check: "interruption-rules", wantFix: "SpotInterruption"},
		{name: "subnets not tagged", objs: func() []client.Object {
			return replace(healthy(), test.EC2NodeClass("default", "other-cluster").Obj())
		}, check: "nodeclass-subnets/default", wantFix: "subnetSelectorTerms"},
		{name: "security groups not tagged", objs: func() []client.Object {
			nc := test.EC2NodeClass("default", "dovetail").Obj()
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other-cluster"}}}
			return replace(healthy(), nc)
		}, check: "nodeclass-security-groups/default", wantFix: "securityGroupSelectorTerms"},
		{name: "no free addresses", setup: func(t *testing.T, e *env) {
			if _, err := e.sim.SetSubnetAvailableIPs(awssim.SubnetIPRequest{Account: "123456789012", Available: 0}); err != nil {
				t.Fatal(err)
			}
		}, check: "nodeclass-subnets/default", wantFix: "free addresses"},
		{name: "AMI not found", objs: func() []client.Object {
			nc := test.EC2NodeClass("default", "dovetail").Obj()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123456789abcdef0"}}
			return replace(healthy(), nc)
		}, check: "nodeclass-amis/default", wantFix: "amiSelectorTerms"},
		{name: "node role missing", objs: func() []client.Object {
			nc := test.EC2NodeClass("default", "dovetail").Obj()
			nc.Spec.Role = "NoSuchRole"
			return replace(healthy(), nc)
		}, check: "nodeclass-instance-profile/default", wantFix: "NoSuchRole"},
		{name: "nodepool never launches", objs: func() []client.Object {
			return replace(healthy(), test.NodePool("default").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "x99.nonexistent").Obj())
		}, check: "nodepools-launchable/default", wantFix: "requirements"},
		{name: "nodeclaim of a deleted nodepool", objs: func() []client.Object {
			return append(healthy(), test.NodeClaim("old-xyz", "gone").Obj())
		}, check: "leftovers", wantFix: "kubectl delete nodeclaim"},
		{name: "instance without nodeclaim", setup: func(t *testing.T, e *env) {
			e.runInstance(t, map[string]string{"dovetail.sh/cluster-uid": "uid-1", awsv1.TagNodeClaim: "default-gone1"})
		}, check: "leftovers", wantFix: "terminate-instances"},
		{name: "another cluster with the same name", setup: func(t *testing.T, e *env) {
			e.runInstance(t, map[string]string{"dovetail.sh/cluster-uid": "uid-2", awsv1.TagNodeClaim: "theirs"})
		}, check: "cluster-uid", wantFix: "its own name"},
		{name: "node stuck uninitialized", objs: func() []client.Object {
			return append(healthy(), uninitialized.DeepCopy())
		}, check: "uninitialized-nodes", wantFix: "cloud controller manager"},
		{name: "daemonset without the disruption toleration", objs: func() []client.Object {
			return append(healthy(), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "log-agent", Namespace: "logging"}})
		}, check: "daemonsets-disruption-taint", wantFix: karpv1.DisruptedTaintKey, status: Warn},
		{name: "csi node agent not critical", objs: func() []client.Object {
			return append(healthy(), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ebs-csi-node", Namespace: "kube-system"},
				Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}}})
		}, check: "daemonsets-node-agents", wantFix: "system-node-critical", status: Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.sim.GetFaults()
			f.Setup = tt.faults
			e.sim.SetFaults(f)
			if tt.setup != nil {
				tt.setup(t, e)
			}
			objs := healthy()
			if tt.objs != nil {
				objs = tt.objs()
			}
			queue := "dovetail"
			if tt.queue != "" {
				queue = tt.queue
			}
			r := e.doctor(t, queue, objs...)
			want := tt.status
			if want == "" {
				want = Fail
			}
			got := r.Get(tt.check)
			if len(got) != 1 || got[0].Status != want {
				t.Fatalf("check %s: %+v, want one %s\n%s", tt.check, got, want, dump(r))
			}
			if !strings.Contains(got[0].Fix, tt.wantFix) {
				t.Errorf("fix %q does not mention %q", got[0].Fix, tt.wantFix)
			}
			if want == Fail && r.Fail == 0 {
				t.Error("report counts no failure")
			}
			if want == Warn && (r.Warn == 0 || r.Fail != 0) {
				t.Errorf("report counts %d warnings and %d failures, want warnings only", r.Warn, r.Fail)
			}
			var b bytes.Buffer
			if err := r.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Fail != r.Fail {
				t.Errorf("JSON output does not round-trip: %v\n%s", err, b.String())
			}
		})
	}
}

// replace swaps the object of the same kind and name.
func replace(objs []client.Object, o client.Object) []client.Object {
	out := make([]client.Object, 0, len(objs))
	for _, x := range objs {
		if x.GetName() == o.GetName() && sameKind(x, o) {
			out = append(out, o)
			continue
		}
		out = append(out, x)
	}
	return out
}

func sameKind(a, b client.Object) bool {
	switch a.(type) {
	case *awsv1.EC2NodeClass:
		_, ok := b.(*awsv1.EC2NodeClass)
		return ok
	case *karpv1.NodePool:
		_, ok := b.(*karpv1.NodePool)
		return ok
	}
	return false
}

// runInstance launches an instance tagged with the cluster's name and the given tags, and returns its id.
func (e *env) runInstance(t *testing.T, extra map[string]string) string {
	t.Helper()
	ctx := context.Background()
	c := ec2.NewFromConfig(e.cfg)
	imgs, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: awssdk.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("no image to launch: %v", err)
	}
	tg := []ec2types.Tag{{Key: awssdk.String("kubernetes.io/cluster/dovetail"), Value: awssdk.String("owned")}}
	for k, v := range extra {
		tg = append(tg, ec2types.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("no subnet: %v", err)
	}
	out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeM5Large, MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		SubnetId:          subnets.Subnets[0].SubnetId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tg}},
	})
	if err != nil {
		t.Fatalf("RunInstances: %v", err)
	}
	return awssdk.ToString(out.Instances[0].InstanceId)
}
