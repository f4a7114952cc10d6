package teardown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Teardown removes everything Dovetail runs for one cluster. The cluster's Dovetail controller must still be
// running: it drains the nodes and terminates the instances; teardown orchestrates and waits.
type Teardown struct {
	// Kube reads and writes the cluster's objects.
	Kube client.Client
	// EC2 and IAM report what is left on AWS; both nil skips the AWS checks.
	EC2 EC2API
	IAM IAMAPI
	// Cluster is the cluster's name and UID as tagged on AWS resources.
	Cluster tags.Cluster
	Clock   clock.Clock
	Out     io.Writer
	// Timeout bounds the whole teardown; Interval is how often progress is printed.
	Timeout  time.Duration
	Interval time.Duration
	// DryRun lists what would be deleted and changes nothing.
	DryRun bool
}

// inventory is what Dovetail runs in the cluster.
type inventory struct {
	NodePools   []karpv1.NodePool
	NodeClaims  []karpv1.NodeClaim
	Nodes       []corev1.Node
	NodeClasses []awsv1.EC2NodeClass
}

func (i inventory) empty() bool {
	return len(i.NodePools)+len(i.NodeClaims)+len(i.Nodes)+len(i.NodeClasses) == 0
}

// ErrIncomplete says resources remain after teardown.
var ErrIncomplete = errors.New("teardown incomplete")

// Run tears down in order: stop provisioning for the NodePools, delete them and their NodeClaims, wait for
// every NodeClaim, Node and instance of the cluster to be gone, delete the EC2NodeClasses and wait for their
// finalizers (instance profiles, launch templates), then report what is left. It returns an error wrapping
// ErrIncomplete when anything remains.
func (t *Teardown) Run(ctx context.Context) error {
	start := t.Clock.Now()
	deadline := start.Add(t.Timeout)
	inv, err := t.inventory(ctx)
	if err != nil {
		return err
	}
	t.printf("cluster %q: %s, %s, %s, %s", t.Cluster.Name, plural(len(inv.NodePools), "NodePool"),
		plural(len(inv.NodeClaims), "NodeClaim"), plural(len(inv.Nodes), "Node"), plural(len(inv.NodeClasses), "EC2NodeClass"))
	if t.DryRun {
		return t.dryRun(ctx, inv)
	}

	t.printf("step 1/5: stopping provisioning for %s (limits set to zero)", plural(len(inv.NodePools), "NodePool"))
	for i := range inv.NodePools {
		if err := t.stopProvisioning(ctx, &inv.NodePools[i]); err != nil {
			return err
		}
	}
	t.printf("step 2/5: deleting %s and %s", plural(len(inv.NodePools), "NodePool"), plural(len(inv.NodeClaims), "NodeClaim"))
	for i := range inv.NodePools {
		if err := t.deleteObject(ctx, &inv.NodePools[i]); err != nil {
			return err
		}
	}
	for i := range inv.NodeClaims {
		if err := t.deleteObject(ctx, &inv.NodeClaims[i]); err != nil {
			return err
		}
	}
	// Nodes whose NodeClaim is gone still hold the termination finalizer: deleting them drains them and
	// terminates their instances. (Nodes of live NodeClaims are deleted by the NodeClaim's termination anyway.)
	for i := range inv.Nodes {
		if hasString(inv.Nodes[i].Finalizers, karpv1.TerminationFinalizer) {
			if err := t.deleteObject(ctx, &inv.Nodes[i]); err != nil {
				return err
			}
		}
	}

	t.printf("step 3/5: waiting for NodeClaims, Nodes and instances to be gone (Dovetail drains and terminates them)")
	if !t.waitForNodes(ctx, start, deadline) {
		return t.finish(ctx, start, "timed out waiting for nodes to terminate")
	}

	inv, err = t.inventory(ctx)
	if err != nil {
		return err
	}
	t.printf("step 4/5: deleting %s (their instance profiles and launch templates go with them)", plural(len(inv.NodeClasses), "EC2NodeClass"))
	for i := range inv.NodeClasses {
		if err := t.deleteObject(ctx, &inv.NodeClasses[i]); err != nil {
			return err
		}
	}
	if !t.waitForNodeClasses(ctx, start, deadline) {
		return t.finish(ctx, start, "timed out waiting for EC2NodeClasses to be deleted")
	}
	return t.finish(ctx, start, "")
}

// finish is step 5: report leftovers and a summary.
func (t *Teardown) finish(ctx context.Context, start time.Time, problem string) error {
	t.printf("step 5/5: checking for leftovers")
	inv, err := t.inventory(ctx)
	if err != nil {
		return err
	}
	left, checked := t.awsLeftovers(ctx)
	var remaining []string
	for _, nc := range inv.NodeClaims {
		remaining = append(remaining, "NodeClaim "+nc.Name+blockingReason(&nc))
	}
	for _, n := range inv.Nodes {
		remaining = append(remaining, "Node "+n.Name)
	}
	for _, np := range inv.NodePools {
		remaining = append(remaining, "NodePool "+np.Name)
	}
	for _, nc := range inv.NodeClasses {
		remaining = append(remaining, "EC2NodeClass "+nc.Name+nodeClassReason(&nc))
	}
	for _, r := range left.All() {
		remaining = append(remaining, r.String())
	}
	for _, r := range remaining {
		t.printf("  left: %s", r)
	}
	for _, u := range left.Unchecked {
		t.printf("  warning: could not check: %s", u)
	}
	if left.OtherCluster > 0 {
		t.printf("  note: %d AWS resources carry this cluster's name but another cluster's UID; left alone", left.OtherCluster)
	}
	for _, r := range left.Unattributed {
		t.printf("  not this cluster's for certain, left alone: %s: it carries this cluster's name but no cluster UID and no NodeClaim of this cluster named it (launched by Karpenter, by hand or for another cluster of the same name); delete it by hand once you know whose it is", r)
	}
	elapsed := t.Clock.Since(start).Round(time.Second)
	if problem == "" && len(remaining) == 0 {
		scope := "cluster objects and tagged AWS resources"
		if !checked {
			scope = "cluster objects (AWS not checked)"
		}
		t.printf("teardown complete in %s: no %s left", elapsed, scope)
		return nil
	}
	if problem == "" {
		problem = "resources remain"
	}
	t.printf("teardown incomplete after %s: %s; %s left", elapsed, problem, plural(len(remaining), "resource"))
	return fmt.Errorf("%w: %s (%s left)", ErrIncomplete, problem, plural(len(remaining), "resource"))
}

func (t *Teardown) dryRun(ctx context.Context, inv inventory) error {
	t.printf("dry run: nothing is changed. Teardown would, in order:")
	t.printf("  1. stop provisioning (limits set to zero) and 2. delete NodePools: %s", joinNames(nodePoolNames(inv)))
	t.printf("  2. delete NodeClaims (each drained by Dovetail, its instance terminated): %s", joinNames(nodeClaimNames(inv)))
	t.printf("  3. wait for Nodes to go: %s", joinNames(nodeNames(inv)))
	t.printf("  4. delete EC2NodeClasses (with their instance profiles and launch templates): %s", joinNames(nodeClassNames(inv)))
	left, checked := t.awsLeftovers(ctx)
	if !checked {
		t.printf("  AWS not checked")
		return nil
	}
	t.printf("  tagged AWS resources now: %d", left.Count())
	for _, r := range left.All() {
		t.printf("    %s", r)
	}
	for _, u := range left.Unchecked {
		t.printf("  warning: could not check: %s", u)
	}
	return nil
}

// stallAfter is how long teardown waits before warning that deleted Nodes are not being drained.
const stallAfter = 30 * time.Second

// undrained names the Nodes being deleted that do not carry the disrupted taint: nothing is draining them.
func undrained(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if n.DeletionTimestamp == nil {
			continue
		}
		tainted := false
		for _, t := range n.Spec.Taints {
			if t.Key == karpv1.DisruptedTaintKey {
				tainted = true
			}
		}
		if !tainted {
			out = append(out, n.Name)
		}
	}
	return out
}

// waitForNodes polls until no NodeClaim, Node or live instance of the cluster remains, printing progress.
func (t *Teardown) waitForNodes(ctx context.Context, start, deadline time.Time) bool {
	lastDetail := time.Time{}
	shown := map[string]string{}
	warned := false
	for {
		inv, err := t.inventory(ctx)
		if err != nil {
			t.printf("  [%s] listing cluster objects failed: %v", t.elapsed(start), err)
		} else {
			instances := 0
			msg := ""
			if t.EC2 != nil {
				a := t.aws()
				var l Leftovers
				if err := a.instances(ctx, &l); err != nil {
					msg = fmt.Sprintf(", instances unknown (%v)", err)
				} else {
					instances = len(l.Instances)
					msg = ", " + plural(instances, "instance")
				}
			}
			t.printf("  [%s] remaining: %s (%d terminating), %s%s", t.elapsed(start),
				plural(len(inv.NodeClaims), "NodeClaim"), terminating(inv.NodeClaims), plural(len(inv.Nodes), "Node"), msg)
			if len(inv.NodeClaims) == 0 && len(inv.Nodes) == 0 && instances == 0 {
				return true
			}
			if !warned && t.Clock.Since(start) >= stallAfter && len(undrained(inv.Nodes)) > 0 {
				warned = true
				t.printf("    warning: %s not tainted %s after %s (%s): is the Dovetail controller running? "+
					"Teardown only waits; the controller drains and terminates.", plural(len(undrained(inv.Nodes)), "Node"),
					karpv1.DisruptedTaintKey, stallAfter, joinNames(undrained(inv.Nodes)))
			}
			full := t.Clock.Since(lastDetail) >= 6*t.Interval
			if full {
				lastDetail = t.Clock.Now()
			}
			t.details(inv, shown, full)
		}
		if !t.sleep(ctx, deadline) {
			return false
		}
	}
}

// waitForNodeClasses polls until no EC2NodeClass remains.
func (t *Teardown) waitForNodeClasses(ctx context.Context, start, deadline time.Time) bool {
	for {
		list := &awsv1.EC2NodeClassList{}
		if err := t.Kube.List(ctx, list); err != nil {
			t.printf("  [%s] listing EC2NodeClasses failed: %v", t.elapsed(start), err)
		} else {
			t.printf("  [%s] remaining: %s", t.elapsed(start), plural(len(list.Items), "EC2NodeClass"))
			if len(list.Items) == 0 {
				return true
			}
		}
		if !t.sleep(ctx, deadline) {
			return false
		}
	}
}

// sleep waits one interval; it returns false when the deadline passes or the context ends first.
func (t *Teardown) sleep(ctx context.Context, deadline time.Time) bool {
	wait := t.Interval
	if left := deadline.Sub(t.Clock.Now()); left <= 0 {
		return false
	} else if left < wait {
		wait = left
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.Clock.After(wait):
		return true
	}
}

// details prints why NodeClaims are still there, from the conditions the termination controllers write: the
// ones whose reason changed since last printed, or (full) up to five of all of them.
func (t *Teardown) details(inv inventory, shown map[string]string, full bool) {
	printed := 0
	for _, nc := range inv.NodeClaims {
		r := blockingReason(&nc)
		if !full && shown[nc.Name] == r {
			continue
		}
		shown[nc.Name] = r
		if printed == 5 {
			t.printf("    ... and more")
			return
		}
		printed++
		t.printf("    NodeClaim %s%s", nc.Name, r)
	}
}

// blockingReason summarizes the termination conditions of a NodeClaim that is not done.
func blockingReason(nc *karpv1.NodeClaim) string {
	if nc.DeletionTimestamp == nil {
		return ": not being deleted"
	}
	for _, ct := range []string{termination.ConditionTypeDrained, termination.ConditionTypeVolumesDetached} {
		if c := nc.GetCondition(ct); c != nil && c.Status != "True" {
			return fmt.Sprintf(": %s=%s %s", ct, c.Status, c.Message)
		}
	}
	if nc.IsTrue(karpv1.ConditionTypeInstanceTerminating) {
		return ": instance terminating"
	}
	return ": terminating"
}

// nodeClassReason shows the EC2NodeClass's condition messages that are not True (e.g. which NodeClaims
// still use it).
func nodeClassReason(nc *awsv1.EC2NodeClass) string {
	var parts []string
	for _, c := range nc.Status.Conditions {
		if c.Status != "True" && c.Message != "" {
			parts = append(parts, c.Type+": "+c.Message)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// inventory lists what Dovetail runs in the cluster. Nodes count when they carry the karpenter.sh/nodepool
// label or the termination finalizer.
func (t *Teardown) inventory(ctx context.Context) (inventory, error) {
	var inv inventory
	pools := &karpv1.NodePoolList{}
	if err := t.Kube.List(ctx, pools); err != nil {
		return inv, fmt.Errorf("listing NodePools: %w", err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := t.Kube.List(ctx, claims); err != nil {
		return inv, fmt.Errorf("listing NodeClaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := t.Kube.List(ctx, nodes); err != nil {
		return inv, fmt.Errorf("listing Nodes: %w", err)
	}
	classes := &awsv1.EC2NodeClassList{}
	if err := t.Kube.List(ctx, classes); err != nil {
		return inv, fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	inv.NodePools, inv.NodeClaims, inv.NodeClasses = pools.Items, claims.Items, classes.Items
	for _, n := range nodes.Items {
		if _, ok := n.Labels[karpv1.NodePoolLabelKey]; ok || hasString(n.Finalizers, karpv1.TerminationFinalizer) {
			inv.Nodes = append(inv.Nodes, n)
		}
	}
	return inv, nil
}

// stopProvisioning sets the NodePool's limits to zero so no new NodeClaim is made for it.
func (t *Teardown) stopProvisioning(ctx context.Context, np *karpv1.NodePool) error {
	orig := np.DeepCopy()
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
	if err := t.Kube.Patch(ctx, np, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("stopping provisioning for NodePool %s: %w", np.Name, err)
	}
	return nil
}

func (t *Teardown) deleteObject(ctx context.Context, o client.Object) error {
	if err := t.Kube.Delete(ctx, o, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %T %s: %w", o, o.GetName(), err)
	}
	return nil
}

func (t *Teardown) aws() *awsInventory {
	return &awsInventory{ec2: t.EC2, iam: t.IAM, cluster: t.Cluster}
}

// awsLeftovers reports the cluster's AWS resources; checked is false when AWS checks are off.
func (t *Teardown) awsLeftovers(ctx context.Context) (Leftovers, bool) {
	if t.EC2 == nil || t.IAM == nil {
		return Leftovers{}, false
	}
	return t.aws().leftovers(ctx), true
}

func (t *Teardown) elapsed(start time.Time) string {
	return fmt.Sprintf("%5s", t.Clock.Since(start).Round(time.Second))
}

func (t *Teardown) printf(format string, args ...any) {
	fmt.Fprintf(t.Out, format+"\n", args...)
}

func terminating(ncs []karpv1.NodeClaim) int {
	n := 0
	for _, nc := range ncs {
		if nc.DeletionTimestamp != nil {
			n++
		}
	}
	return n
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func nodePoolNames(inv inventory) (out []string) {
	for _, o := range inv.NodePools {
		out = append(out, o.Name)
	}
	return out
}

func nodeClaimNames(inv inventory) (out []string) {
	for _, o := range inv.NodeClaims {
		out = append(out, o.Name)
	}
	return out
}

func nodeNames(inv inventory) (out []string) {
	for _, o := range inv.Nodes {
		out = append(out, o.Name)
	}
	return out
}

func nodeClassNames(inv inventory) (out []string) {
	for _, o := range inv.NodeClasses {
		out = append(out, o.Name)
	}
	return out
}

// plural renders a count with a noun, e.g. "1 NodePool", "2 NodePools", "3 EC2NodeClasses".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
