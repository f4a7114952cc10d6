package oracle_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/test/oracle"
)

// TestNewNodeVolumeLimits plans 40 pods with a volume each on a driver whose instance type attaches 10, and checks
// the plan with the upstream NodeVolumeLimits plugin, each new node having the CSINode its type reports. A plan
// made without the limit must fail the check.
func TestNewNodeVolumeLimits(t *testing.T) {
	ctx := context.Background()
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ebs"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc}
	it := test.SchedInstanceType("big.4xlarge", "16", "64Gi").Zones(0.50, "a").Obj()
	var pods []*corev1.Pod
	var pvcs []*corev1.PersistentVolumeClaim
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("p%02d", i)
		pods = append(pods, test.SchedPod(name).Requests("500m", "1Gi").PVC("data-"+name).Obj())
		pvcs = append(pvcs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-" + name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &sc.Name}})
	}
	snap := &scheduling.Snapshot{Pods: pods, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
		InstanceTypes:          map[string][]*cloudprovider.InstanceType{"default": {it}},
		PersistentVolumeClaims: pvcs, StorageClasses: []*storagev1.StorageClass{sc}}
	unaware, err := scheduling.Solve(ctx, snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	it.VolumeLimits = map[string]int{"ebs.csi.aws.com": 10}
	plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NodeClaims) != 4 || len(plan.Unschedulable) > 0 {
		t.Errorf("%d nodeclaims and %d unschedulable pods, want 4 and 0", len(plan.NodeClaims), len(plan.Unschedulable))
	}
	v, err := oracle.Check(ctx, snap, plan, oracle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	v, err = oracle.Check(ctx, snap, unaware, oracle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 {
		t.Errorf("a plan made without the attach limit passes the check with it")
	}
}
