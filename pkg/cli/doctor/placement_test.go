package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPermissionsOfNewCalls: the permission check covers ec2:DescribePlacementGroups and iam:ListInstanceProfiles
// always, and ec2:RebootInstances only when node repair may reboot (RebootForRepair).
func TestPermissionsOfNewCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		denied []string
		reboot bool
		want   Status
		fix    string
	}{
		{name: "placement groups and profile listing denied", denied: []string{"ec2:DescribePlacementGroups", "iam:ListInstanceProfiles"},
			want: Fail, fix: "ec2:DescribePlacementGroups, iam:ListInstanceProfiles"},
		{name: "reboot denied with RebootForRepair", denied: []string{"ec2:RebootInstances"}, reboot: true, want: Fail, fix: "ec2:RebootInstances"},
		{name: "reboot denied without RebootForRepair", denied: []string{"ec2:RebootInstances"}, want: Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.sim.GetFaults()
			f.Setup = awssim.SetupFaults{DeniedActions: tc.denied}
			e.sim.SetFaults(f)
			r := e.doctorWith(t, "dovetail", func(d *Doctor) { d.RebootForRepair = tc.reboot }, healthy()...)
			got := r.Get("iam-permissions")
			if len(got) != 1 || got[0].Status != tc.want {
				t.Fatalf("iam-permissions: %+v, want one %s\n%s", got, tc.want, dump(r))
			}
			if !strings.Contains(got[0].Fix, tc.fix) {
				t.Errorf("fix %q does not mention %q", got[0].Fix, tc.fix)
			}
		})
	}
}

// TestPlacementGroupAndEFA: a node class selecting a placement group that does not exist fails with the reason
// the controller's PlacementGroupReady condition carries; one that exists passes; efa-only network interfaces
// are reported with the instance types they leave out.
func TestPlacementGroupAndEFA(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := ec2.NewFromConfig(e.cfg).CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName: aws.String("hpc"), Strategy: ec2types.PlacementStrategyCluster}); err != nil {
		t.Fatal(err)
	}
	missing := test.EC2NodeClass("default", "dovetail").Obj()
	missing.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "nope"}
	found := test.EC2NodeClass("efa", "dovetail").Obj()
	found.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "hpc"}
	found.Spec.NetworkInterfaces = []awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	r := e.doctor(t, "dovetail", append(replace(healthy(), missing), found)...)
	for _, tc := range []struct {
		check string
		want  Status
		text  string
	}{
		{"nodeclass-placement-group/default", Fail, "PlacementGroupReady=False (PlacementGroupNotFound)"},
		{"nodeclass-placement-group/efa", Pass, "placement group hpc"},
		{"nodeclass-efa/efa", Pass, "1 efa-only network interface(s): instance types without that many EFA interfaces"},
	} {
		got := r.Get(tc.check)
		if len(got) != 1 || got[0].Status != tc.want || !strings.Contains(got[0].Message, tc.text) {
			t.Errorf("%s: %+v, want one %s mentioning %q", tc.check, got, tc.want, tc.text)
		}
	}
	if len(r.Get("nodeclass-efa/default")) != 0 {
		t.Error("nodeclass-efa/default reported for a node class without efa-only interfaces")
	}
	if t.Failed() {
		t.Log(dump(r))
	}
}

// TestPlacementGroupStatusWithoutAWS: with --skip-aws the PlacementGroupReady condition the controller set is
// reported, with a fix for each reason.
func TestPlacementGroupStatusWithoutAWS(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	class := func(name, reason, message string) client.Object {
		nc := test.EC2NodeClass(name, "dovetail").Obj()
		nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "hpc"}
		nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypePlacementGroupReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)}}
		return nc
	}
	d := &Doctor{
		Kube: fake.NewClientBuilder().WithScheme(s).WithObjects(
			class("gone", "PlacementGroupNotFound", `Placement group "hpc" not found`),
			class("denied", "PlacementGroupResolutionFailed", `Failed to resolve placement group "hpc": UnauthorizedOperation`),
		).WithIndex(&coordinationv1.Lease{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).Build(),
		Cluster: tags.Cluster{Name: "dovetail", UID: "uid-1"}, Region: "us-west-2", K8sVersion: "1.34",
		UninitializedTimeout: 10 * time.Minute, Clock: clocktesting.NewFakePassiveClock(now),
	}
	r, err := d.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ check, message, fix string }{
		{"nodeclass-placement-group/gone", "(PlacementGroupNotFound)", "create the placement group"},
		{"nodeclass-placement-group/denied", "(PlacementGroupResolutionFailed)", "allow ec2:DescribePlacementGroups"},
	} {
		got := r.Get(tc.check)
		if len(got) != 1 || got[0].Status != Fail || !strings.Contains(got[0].Message, tc.message) || !strings.Contains(got[0].Fix, tc.fix) {
			t.Errorf("%s: %+v, want one failure mentioning %q with a fix mentioning %q", tc.check, got, tc.message, tc.fix)
		}
	}
}
