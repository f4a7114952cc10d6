package termination_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/termination"
	"github.com/dovetail/dovetail/pkg/test"
)

// Deleting a NodeClaim deletes its Node, which is tainted and drained in order (ordinary pods, then critical
// ones), leaving DaemonSet and static pods alone; then the instance is terminated and the Node's finalizer is
// released before the NodeClaim's.
func TestNodeClaimDeletionDrainsInOrderAndReleasesFinalizersInOrder(t *testing.T) {
	h := newHarness(t)
	nc, _ := h.launch(nil)
	h.pod(test.DrainPod("web").ReplicaSet("web"))
	h.pod(test.DrainPod("dns").PriorityClass(termination.SystemClusterCritical))
	h.pod(test.DrainPod("cni").DaemonSet("aws-node").PriorityClass(termination.SystemNodeCritical))
	h.pod(test.DrainPod("csi").DaemonSet("ebs-csi-node"))
	h.pod(test.DrainPod("etcd").Static())

	h.deleteClaim()
	h.reconcileClaim()
	node := h.getNode()
	if node == nil || node.DeletionTimestamp == nil {
		t.Fatalf("deleting the NodeClaim did not delete its Node: %+v", node)
	}

	// First pass: taint, evict the ordinary pod only.
	h.reconcileNode()
	if node := h.getNode(); !hasTaint(node, karpv1.DisruptedTaintKey) {
		t.Errorf("node not tainted %s: %v", karpv1.DisruptedTaintKey, node.Spec.Taints)
	}
	if h.getPod("web") != nil {
		t.Errorf("ordinary pod web was not evicted in the first wave")
	}
	if p := h.getPod("dns"); p == nil || p.DeletionTimestamp != nil {
		t.Errorf("critical pod dns was evicted in the same wave as ordinary pods")
	}
	if len(h.cloud.Deleted()) != 0 {
		t.Errorf("instance terminated before the node was drained")
	}
	if c := condition(h.getClaim(), termination.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Drained condition = %+v, want False while pods remain", c)
	}

	// Second pass: critical pods go; then the instance is terminated.
	h.reconcileNode()
	if h.getPod("dns") != nil {
		t.Errorf("critical pod dns not evicted once ordinary pods were gone")
	}
	for i := 0; i < 3 && h.getNode() != nil; i++ {
		h.reconcileNode()
	}
	if h.getNode() != nil {
		t.Fatalf("node still present after drain and instance termination")
	}
	if got := h.cloud.Deleted(); !slices.Equal(got, []string{nc.Status.ProviderID}) {
		t.Errorf("terminated instances = %v, want [%s]", got, nc.Status.ProviderID)
	}
	// The Node's finalizer goes first; the NodeClaim still holds its own.
	claim := h.getClaim()
	if claim == nil || !slices.Contains(claim.Finalizers, karpv1.TerminationFinalizer) {
		t.Fatalf("nodeclaim released before its node: %+v", claim)
	}
	if c := condition(claim, karpv1.ConditionTypeInstanceTerminating); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("InstanceTerminating condition = %+v, want True", c)
	}
	if c := condition(claim, termination.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Drained condition = %+v, want True", c)
	}
	h.reconcileClaim()
	if h.getClaim() != nil {
		t.Errorf("nodeclaim still present after its node and instance are gone")
	}
	if got := testutil.ToFloat64(h.metrics.NodesTerminated); got != 1 {
		t.Errorf("karpenter_nodes_terminated_total (its one series) = %v, want 1", got)
	}
	if got := testutil.ToFloat64(h.metrics.NodeClaimsTerminated); got != 1 {
		t.Errorf("karpenter_nodeclaims_terminated_total (its one series) = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(h.metrics.NodesTerminationDuration); got != 1 {
		t.Errorf("karpenter_nodes_termination_duration_seconds has %d series, want 1", got)
	}
	for _, name := range []string{"cni", "csi", "etcd"} {
		if p := h.getPod(name); p == nil || p.DeletionTimestamp != nil {
			t.Errorf("node agent or static pod %s was evicted", name)
		}
	}
}

// A PodDisruptionBudget refusing the eviction (429) blocks the drain, with an event naming the budget; once the
// budget allows a disruption the pod is evicted after the backoff.
func TestPDBBlocksEvictionUntilAllowed(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	h.pod(test.DrainPod("web").Labels("app", "web"))
	h.pdb("web-pdb", "web", 0)
	h.deleteClaim()
	h.reconcileClaim()

	for i := 0; i < 3; i++ {
		h.reconcileNode()
	}
	if p := h.getPod("web"); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("pod evicted despite a PodDisruptionBudget allowing no disruption")
	}
	if !h.hasEvent("EvictionBlocked", "PodDisruptionBudget "+h.ns+"/web-pdb") {
		t.Errorf("no EvictionBlocked event naming the budget; events: %v", h.events)
	}
	if !h.hasEvent("Warning FailedDraining", h.ns+"/web", "PodDisruptionBudget "+h.ns+"/web-pdb") {
		t.Errorf("no FailedDraining event naming the pod and the budget; events: %v", h.events)
	}
	if len(h.cloud.Deleted()) != 0 {
		t.Errorf("instance terminated while a pod was still blocked")
	}
	if c := condition(h.getClaim(), termination.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "web (blocked by PodDisruptionBudget "+h.ns+"/web-pdb") {
		t.Errorf("Drained condition = %+v, want False naming the pod and its budget", c)
	}

	h.setPDBAllowed(test.PDBFor(h.ns, "web-pdb", "web"), 1)
	h.reconcileNode() // still backing off: the clock has not moved
	if h.getPod("web") == nil {
		t.Fatalf("eviction retried before its backoff ran out")
	}
	h.clock.Step(termination.EvictionBackoffMax)
	h.reconcileNode()
	if h.getPod("web") != nil {
		t.Errorf("pod not evicted once the budget allowed it")
	}
	h.settle(5)
}

// The instance is not terminated while a VolumeAttachment of the node remains; the NodeClaim says which one.
func TestVolumeAttachmentsHoldTermination(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	va := test.VolumeAttachmentFor(h.prefix+"va", h.prefix+"node", h.prefix+"pv")
	h.must(h.c.Create(h.ctx, va))
	h.deleteClaim()
	h.reconcileClaim()
	for i := 0; i < 3; i++ {
		h.reconcileNode()
	}
	if len(h.cloud.Deleted()) != 0 {
		t.Fatalf("instance terminated while a VolumeAttachment remained")
	}
	c := condition(h.getClaim(), termination.ConditionTypeVolumesDetached)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, va.Name) {
		t.Errorf("VolumesDetached condition = %+v, want False naming %s", c, va.Name)
	}
	if !h.hasEvent("AwaitingVolumeDetachment", va.Name) {
		t.Errorf("no event naming the attachment; events: %v", h.events)
	}
	h.must(h.c.Delete(h.ctx, va))
	h.settle(5)
	if len(h.cloud.Deleted()) != 1 {
		t.Errorf("instance not terminated once the attachment was gone")
	}
}

// The VolumeAttachment wait is bounded by the terminationGracePeriod.
func TestVolumeAttachmentWaitEndsWithGracePeriod(t *testing.T) {
	h := newHarness(t)
	tgp := time.Minute
	h.launch(&tgp)
	h.must(h.c.Create(h.ctx, test.VolumeAttachmentFor(h.prefix+"va", h.prefix+"node", h.prefix+"pv")))
	h.deleteClaim()
	h.reconcileClaim()
	h.reconcileNode()
	h.reconcileNode()
	if len(h.cloud.Deleted()) != 0 {
		t.Fatalf("instance terminated before the grace period ended")
	}
	h.clock.Step(2 * time.Minute)
	h.settle(5)
	if len(h.cloud.Deleted()) != 1 {
		t.Errorf("instance not terminated after the grace period")
	}
}

// An instance terminated outside Dovetail: when its Node is deleted (by the cloud controller manager, or the
// simulator), the Node and NodeClaim are released at once without a drain.
func TestInstanceTerminatedOutOfBand(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	h.pod(test.DrainPod("web").Labels("app", "web"))
	h.pdb("web-pdb", "web", 0)
	h.cloud.RemoveInstance(nc.Status.ProviderID)
	h.must(h.c.Delete(h.ctx, node))

	h.reconcileNode()
	if h.getClaim().DeletionTimestamp == nil {
		t.Fatalf("deleting the node did not delete its nodeclaim")
	}
	h.reconcileNode()
	if h.getNode() != nil {
		t.Errorf("node of a vanished instance still held by its finalizer")
	}
	if !h.hasEvent("InstanceTerminated") {
		t.Errorf("no InstanceTerminated event; events: %v", h.events)
	}
	h.reconcileClaim()
	if h.getClaim() != nil {
		t.Errorf("nodeclaim of a vanished instance still present")
	}
	if h.hasEvent("EvictionBlocked") {
		t.Errorf("drain attempted on a node whose instance is gone")
	}
}

// A Node deleted by a user: its NodeClaim is deleted, the node drained and the instance terminated.
func TestUserDeletedNodeTerminatesInstance(t *testing.T) {
	h := newHarness(t)
	nc, node := h.launch(nil)
	h.pod(test.DrainPod("web"))
	h.must(h.c.Delete(h.ctx, node))
	h.reconcileNode()
	if claim := h.getClaim(); claim == nil || claim.DeletionTimestamp == nil {
		t.Fatalf("deleting the node did not delete its nodeclaim: %+v", claim)
	}
	h.settle(6)
	if got := h.cloud.Deleted(); !slices.Equal(got, []string{nc.Status.ProviderID}) {
		t.Errorf("terminated instances = %v, want [%s]", got, nc.Status.ProviderID)
	}
}

// With a terminationGracePeriod, the deadline is recorded on NodeClaim and Node; do-not-disrupt and
// PDB-blocked pods are deleted so that each gets at most the time left, and termination proceeds at the deadline.
func TestTerminationGracePeriod(t *testing.T) {
	h := newHarness(t)
	tgp := 2 * time.Minute
	h.launch(&tgp)
	h.pod(test.DrainPod("keep").DoNotDisrupt().Grace(30))
	h.pod(test.DrainPod("web").Labels("app", "web").Grace(10))
	h.pdb("web-pdb", "web", 0)
	h.deleteClaim()
	h.reconcileClaim()

	claim := h.getClaim()
	want := termination.FormatDeadline(claim.DeletionTimestamp.Add(tgp))
	if got := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("nodeclaim termination timestamp = %q, want %q", got, want)
	}
	h.reconcileNode()
	if got := h.getNode().Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("node termination timestamp = %q, want %q", got, want)
	}
	if p := h.getPod("keep"); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("do-not-disrupt pod evicted before the grace period ran out")
	}
	if !h.hasEvent("DisruptionBlocked", "keep") {
		t.Errorf("no event about the do-not-disrupt pod; events: %v", h.events)
	}
	deadline, _ := termination.ParseDeadline(want)

	// 100 s before the deadline: the 30 s pod is not due yet.
	h.clock.SetTime(deadline.Add(-100 * time.Second))
	h.reconcileNode()
	if p := h.getPod("keep"); p.DeletionTimestamp != nil {
		t.Errorf("do-not-disrupt pod deleted 100 s before the deadline with a 30 s grace")
	}
	// 25 s before: keep is due and gets the 25 s left (less than its 30); web, with 10 s, is not due yet.
	h.clock.SetTime(deadline.Add(-25 * time.Second))
	h.reconcileNode()
	h.expectDeleted("keep", 25)
	if !h.hasEvent("Normal Disrupted", "keep", "25s grace period") {
		t.Errorf("no Disrupted event for the pod deleted at the end of the grace period; events: %v", h.events)
	}
	if !h.hasEvent("Warning TerminationGracePeriodExpiring", "keep") {
		t.Errorf("no TerminationGracePeriodExpiring event on the node; events: %v", h.events)
	}
	if p := h.getPod("web"); p.DeletionTimestamp != nil {
		t.Errorf("pod web deleted 25 s before the deadline with a 10 s grace")
	}
	// 10 s before: web is deleted despite its PodDisruptionBudget, with its full 10 s.
	h.clock.SetTime(deadline.Add(-10 * time.Second))
	h.reconcileNode()
	h.expectDeleted("web", 10)
	h.expectDeleted("keep", 25)
	if len(h.cloud.Deleted()) != 0 {
		t.Errorf("instance terminated before the deadline")
	}
	// At the deadline, termination goes on though the pods (no kubelet here) are still terminating.
	h.clock.SetTime(deadline)
	h.settle(5)
	if len(h.cloud.Deleted()) != 1 {
		t.Errorf("instance not terminated at the deadline")
	}
}

// Without a terminationGracePeriod, a do-not-disrupt pod blocks the drain, and an event says so.
func TestDoNotDisruptWithoutGracePeriodBlocks(t *testing.T) {
	h := newHarness(t)
	h.launch(nil)
	h.pod(test.DrainPod("keep").DoNotDisrupt().Grace(30))
	h.deleteClaim()
	h.reconcileClaim()
	h.reconcileNode()
	h.clock.Step(24 * time.Hour)
	h.reconcileNode()
	if p := h.getPod("keep"); p == nil || p.DeletionTimestamp != nil {
		t.Errorf("do-not-disrupt pod removed without a terminationGracePeriod")
	}
	if len(h.cloud.Deleted()) != 0 {
		t.Errorf("instance terminated while a do-not-disrupt pod blocks the drain")
	}
	if !h.hasEvent("DisruptionBlocked", "no terminationGracePeriod") {
		t.Errorf("no event saying the drain is blocked; events: %v", h.events)
	}
	c := condition(h.getClaim(), termination.ConditionTypeDrained)
	if c == nil || c.Reason != "DoNotDisrupt" {
		t.Errorf("Drained condition = %+v, want reason DoNotDisrupt", c)
	}
}

// expectDeleted checks the pod was deleted with the given grace period.
func (h *harness) expectDeleted(name string, grace int64) {
	h.t.Helper()
	p := h.getPod(name)
	if p == nil || p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil {
		h.t.Errorf("pod %s: want deleted with a %d s grace, got not deleted", name, grace)
		return
	}
	if *p.DeletionGracePeriodSeconds != grace {
		h.t.Errorf("pod %s deleted with a %d s grace, want %d", name, *p.DeletionGracePeriodSeconds, grace)
	}
}

// A Node with the finalizer but no NodeClaim (e.g. the NodeClaim was force-removed): it is still drained and its
// instance terminated.
func TestNodeWithoutNodeClaimIsDrainedAndTerminated(t *testing.T) {
	h := newHarness(t)
	orphan := test.TerminationNodeClaim(h.prefix+"gone-claim", "default", nil)
	orphan.Status.ProviderID = fake.ProviderIDPrefix + fake.Zones[0] + "/i-orphan-" + h.prefix
	providerID := h.cloud.AddInstance(orphan)
	node := test.TerminationNode(h.prefix+"node", providerID, "default")
	h.must(h.c.Create(h.ctx, node))
	h.pod(test.DrainPod("web"))
	h.must(h.c.Delete(h.ctx, node))
	for i := 0; i < 5 && h.getNode() != nil; i++ {
		h.reconcileNode()
	}
	if h.getNode() != nil {
		t.Fatalf("node without a nodeclaim still present")
	}
	if h.getPod("web") != nil {
		t.Errorf("pod not evicted")
	}
	if got := h.cloud.Deleted(); !slices.Equal(got, []string{providerID}) {
		t.Errorf("terminated %v, want [%s]", got, providerID)
	}
}
