//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/doctor"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoctor: `dovetailctl doctor` against the local stack passes every check; with a setup fault
// injected in the simulator, the check it breaks fails with its fix and doctor exits 1.
func TestDoctor(t *testing.T) {
	if os.Getenv(framework.IAMPolicyEnv) != "" {
		// Doctor is an operator's tool: it reads IAM roles, simulates the controller role's policy, reads the queue's
		// attributes and dry-runs a launch with the operator's credentials. Under the controller's policy, which
		// every caller of the stack shares here, those calls are denied by design.
		t.Skipf("%s is set: doctor runs with an operator's credentials, not under the controller's policy (docs/iam.md)", framework.IAMPolicyEnv)
	}
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("%s: %v (run make build first)", ctl, err)
	}
	const pool = "doctor"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	t.Cleanup(func() {
		if err := simAdmin(context.Background(), http.MethodPost, "faults/setup", map[string]any{}); err != nil {
			t.Errorf("clearing setup faults: %v", err)
		}
	})

	// The test before may leave an instance whose launch raced its NodeClaim's deletion; the controller's garbage
	// collection terminates it 30 s after its launch. Doctor rightly reports it until then, so the healthy stack
	// is the one where that has settled: up to two minutes.
	var report *doctor.Report
	var code int
	_ = framework.Poll(context.Background(), 2*time.Minute, 5*time.Second, func(context.Context) (bool, string, error) {
		report, code = runDoctor(t, ctl)
		left := report.Get("leftovers")
		onlyLeftovers := report.Fail == 1 && len(left) == 1 && left[0].Status == doctor.Fail
		if !onlyLeftovers {
			return true, "", nil // healthy, or something else fails: judged below
		}
		return false, left[0].Message, nil
	})
	if code != 0 || report.Fail > 0 {
		t.Errorf("healthy stack: exit %d, %d failures:\n%s", code, report.Fail, text(report))
	}
	// Warnings are about the workloads (DaemonSets) other tests of the shared stack may leave running; the setup
	// checks below must pass outright.
	if report.Warn > 0 {
		t.Logf("healthy stack: %d warnings:\n%s", report.Warn, text(report))
	}
	for _, check := range []string{"identity", "iam-permissions", "nodeclass-subnets/" + pool, "nodeclass-security-groups/" + pool,
		"nodeclass-amis/" + pool, "nodeclass-instance-profile/" + pool, "interruption-queue", "interruption-queue-policy",
		"interruption-rules", "cluster-uid", "leftovers", "uninitialized-nodes", "nodepools-launchable/" + pool} {
		if got := report.Get(check); len(got) != 1 || got[0].Status != doctor.Pass {
			t.Errorf("healthy stack: check %s: %+v", check, got)
		}
	}

	faults := []struct {
		name    string
		fault   map[string]any
		check   string
		wantFix string
	}{
		{"denied action", map[string]any{"deniedActions": []string{"ec2:CreateFleet"}}, "iam-permissions", "ec2:CreateFleet"},
		{"queue policy", map[string]any{"queuePolicyMissing": true}, "interruption-queue-policy", "events.amazonaws.com"},
		{"missing rule", map[string]any{"missingEventRules": []string{"Rebalance"}}, "interruption-rules", "Rebalance"},
		{"expired credentials", map[string]any{"identityError": "ExpiredToken"}, "identity", "credentials"},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			if err := simAdmin(context.Background(), http.MethodPost, "faults/setup", f.fault); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := simAdmin(context.Background(), http.MethodPost, "faults/setup", map[string]any{}); err != nil {
					t.Errorf("clearing setup faults: %v", err)
				}
			}()
			report, code := runDoctor(t, ctl)
			wantFailure(t, report, code, f.check, f.wantFix)
		})
	}

	// Faults of the cluster's own setup, each injected for one subtest and undone after it.
	t.Run("no queue", func(t *testing.T) {
		report, code := runDoctor(t, ctl, "--interruption-queue", "doctor-not-there")
		wantFailure(t, report, code, "interruption-queue", "create the queue doctor-not-there")
	})
	t.Run("no free addresses", func(t *testing.T) {
		ips := func(n int) {
			if err := simAdmin(context.Background(), http.MethodPost, "faults/subnet-ips", map[string]any{"account": "123456789012", "available": n}); err != nil {
				t.Fatal(err)
			}
		}
		ips(0)
		defer ips(-1)
		report, code := runDoctor(t, ctl)
		wantFailure(t, report, code, "nodeclass-subnets/"+pool, "free addresses")
	})
	t.Run("node class faults", func(t *testing.T) {
		ctx := context.Background()
		base := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, base); err != nil {
			t.Fatal(err)
		}
		bad := map[string]func(*awsv1.EC2NodeClass){
			"doctor-untagged": func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "another-cluster"}}}
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "another-cluster"}}}
			},
			"doctor-no-ami": func(nc *awsv1.EC2NodeClass) {
				family := "AL2023"
				nc.Spec.AMIFamily, nc.Spec.AMISelectorTerms = &family, []awsv1.AMISelectorTerm{{ID: "ami-0123456789abcdef0"}}
			},
			"doctor-no-role": func(nc *awsv1.EC2NodeClass) { nc.Spec.Role, nc.Spec.InstanceProfile = "DoctorNoSuchRole", nil },
		}
		for name, change := range bad {
			nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *base.Spec.DeepCopy()}
			change(nc)
			if err := env.Client.Create(ctx, nc); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := env.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
					t.Errorf("deleting %s: %v", name, err)
				}
			}()
		}
		// A NodePool no instance type survives: it selects a type that does not exist.
		never := &karpv1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, never); err != nil {
			t.Fatal(err)
		}
		never = &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "doctor-never"}, Spec: *never.Spec.DeepCopy()}
		never.Spec.Template.Spec.Requirements = append(never.Spec.Template.Spec.Requirements,
			karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "x99.nonexistent"))
		if err := env.Client.Create(ctx, never); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := env.Client.Delete(ctx, never); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting doctor-never: %v", err)
			}
		}()
		report, code := runDoctor(t, ctl)
		wantFailure(t, report, code, "nodeclass-subnets/doctor-untagged", "subnetSelectorTerms")
		wantFailure(t, report, code, "nodeclass-security-groups/doctor-untagged", "securityGroupSelectorTerms")
		wantFailure(t, report, code, "nodeclass-amis/doctor-no-ami", "amiSelectorTerms")
		wantFailure(t, report, code, "nodeclass-instance-profile/doctor-no-role", "DoctorNoSuchRole")
		wantFailure(t, report, code, "nodepools-launchable/doctor-never", "requirements")
	})
	t.Run("instances", func(t *testing.T) {
		ctx := context.Background()
		ns := &corev1.Namespace{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
			t.Fatal(err)
		}
		// One instance of another cluster sharing the name, and one of this cluster without a NodeClaim (the
		// garbage collector terminates it after 30 s; doctor runs first).
		theirs := runTaggedInstance(t, map[string]string{tags.ClusterUID: "doctor-other-uid", awsv1.TagNodeClaim: "theirs"})
		leaked := runTaggedInstance(t, map[string]string{tags.ClusterUID: string(ns.UID), awsv1.TagNodeClaim: "doctor-gone1"})
		defer func() {
			if _, err := env.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{theirs, leaked}}); err != nil {
				t.Errorf("terminating %s %s: %v", theirs, leaked, err)
			}
		}()
		report, code := runDoctor(t, ctl)
		wantFailure(t, report, code, "cluster-uid", "its own name")
		wantFailure(t, report, code, "leftovers", "terminate-instances")
	})
	t.Run("node stuck uninitialized", func(t *testing.T) {
		ctx := context.Background()
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "doctor-uninitialized"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{karpv1.CloudProviderUninitializedTaint()}}}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := env.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting the node: %v", err)
			}
		}()
		// The node is seconds old: doctor with a 1 s timeout, once the second has passed.
		var report *doctor.Report
		var code int
		if err := framework.Poll(ctx, 30*time.Second, time.Second, func(context.Context) (bool, string, error) {
			report, code = runDoctor(t, ctl, "--uninitialized-timeout", "1s")
			got := report.Get("uninitialized-nodes")
			return len(got) == 1 && got[0].Status == doctor.Fail, text(report), nil
		}); err != nil {
			t.Fatal(err)
		}
		wantFailure(t, report, code, "uninitialized-nodes", "cloud controller manager")
	})
	t.Run("daemonsets", func(t *testing.T) {
		ctx := context.Background()
		// Neither tolerates the disruption taint; the second is a CSI node agent without system-node-critical. No
		// node matches their selector, so they run no pod on the shared stack.
		for _, name := range []string{"doctor-intolerant", "doctor-ebs-csi-node"} {
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pool},
				Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
						Spec: corev1.PodSpec{NodeSelector: map[string]string{"doctor-test": "no-such-node"},
							Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}}
			if err := env.Client.Create(ctx, ds); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := env.Client.Delete(ctx, ds); client.IgnoreNotFound(err) != nil {
					t.Errorf("deleting %s: %v", name, err)
				}
			}()
		}
		report, _ := runDoctor(t, ctl)
		for check, fix := range map[string]string{"daemonsets-disruption-taint": "karpenter.sh/disrupted", "daemonsets-node-agents": "system-node-critical"} {
			got := report.Get(check)
			if len(got) != 1 || got[0].Status != doctor.Warn || !strings.Contains(got[0].Fix, fix) || !strings.Contains(got[0].Message, pool+"/doctor-") {
				t.Errorf("check %s: %+v, want a warning naming %s/doctor-... whose fix names %q", check, got, pool, fix)
			}
		}
	})
}

// wantFailure checks that doctor exited 1 and check failed with a fix naming wantFix.
func wantFailure(t *testing.T, report *doctor.Report, code int, check, wantFix string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := report.Get(check)
	if len(got) != 1 || got[0].Status != doctor.Fail || !strings.Contains(got[0].Fix, wantFix) {
		t.Errorf("check %s: %+v, want a failure whose fix names %q\n%s", check, got, wantFix, text(report))
	}
}

// runTaggedInstance launches an instance tagged with the stack's cluster name and the given tags; it returns its ID.
func runTaggedInstance(t *testing.T, extra map[string]string) string {
	t.Helper()
	ctx := context.Background()
	imgs, err := env.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("no image to launch: %v", err)
	}
	subnets, err := env.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("no subnet: %v", err)
	}
	tg := []ec2types.Tag{{Key: aws.String("kubernetes.io/cluster/dovetail"), Value: aws.String("owned")}}
	for k, v := range extra {
		tg = append(tg, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := env.EC2.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeM5Large, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId:          subnets.Subnets[0].SubnetId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tg}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("RunInstances: %v", err)
	}
	return aws.ToString(out.Instances[0].InstanceId)
}

// runDoctor runs `dovetailctl doctor -o json` against the stack and returns its report and exit code.
func runDoctor(t *testing.T, ctl string, extra ...string) (*doctor.Report, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"doctor", "-o", "json", "--kubeconfig", env.Kubeconfig, "--cluster-name", "dovetail",
		"--interruption-queue", "dovetail"}, extra...)
	cmd := exec.CommandContext(ctx, ctl, args...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+env.AWSEndpoint, "AWS_REGION=us-west-2", "AWS_ACCESS_KEY_ID=123456789012",
		"AWS_SECRET_ACCESS_KEY=local-simulator", "AWS_EC2_METADATA_DISABLED=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("dovetailctl doctor: %v\n%s", err, stderr.String())
		}
		code = exit.ExitCode()
	}
	var r doctor.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("dovetailctl doctor -o json printed no report (exit %d): %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	return &r, code
}

func text(r *doctor.Report) string {
	var b bytes.Buffer
	_ = r.WriteText(&b)
	return b.String()
}
