package simulate

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cli/kube"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/adapt"
)

type clusterState struct {
	snapshot    *scheduling.Snapshot
	nodePools   []*karpv1.NodePool
	nodeClasses []*awsv1.EC2NodeClass
	skipped     []SkippedNodePool
	overlays    []karpv1alpha1.NodeOverlay
	// held are the pending pods the controller leaves out for their resource claims (IGNORE_DRA_REQUESTS=true).
	held []*corev1.Pod
}

// SkippedNodePool is a NodePool of the cluster that the provisioner does not launch nodes from, and why.
type SkippedNodePool struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
}

// clusterSnapshot reads pending pods, nodes with their pods, in-flight NodeClaims, NodePools, EC2NodeClasses,
// DaemonSets and volume objects from the cluster the kubeconfig points at.
func clusterSnapshot(ctx context.Context, kubeconfig string, dra DRASettings) (*clusterState, error) {
	c, err := NewClient(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	return readCluster(ctx, c, dra)
}

// NewClient returns a client for the cluster the kubeconfig points at ("": KUBECONFIG or ~/.kube/config), with
// the core, karpenter.sh and karpenter.k8s.aws types registered.
func NewClient(kubeconfig string) (client.Client, error) {
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kube.NewClient(cfg)
}

// Cluster is a scheduling snapshot read from a live cluster, with the NodePools and EC2NodeClasses it came from.
type Cluster struct {
	Snapshot    *scheduling.Snapshot
	NodePools   []*karpv1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// Skipped are the NodePools left out of the snapshot: static ones and those whose Ready condition is False.
	Skipped []SkippedNodePool
	// Overlays are the cluster's NodeOverlays the controller applies (ClusterOverlays); NotApplied those of them
	// left out (conflict, runtime validation).
	Overlays   []karpv1alpha1.NodeOverlay
	NotApplied []NotAppliedOverlay
	// Held are the pending pods left out of the snapshot for their resource claims, as the controller leaves them
	// out with IGNORE_DRA_REQUESTS=true.
	Held []*corev1.Pod
}

// ReadCluster builds the snapshot --from-cluster uses (pending pods, nodes with their pods, in-flight NodeClaims,
// NodePools with usage, EC2NodeClasses, DaemonSets, volumes) and fills its instance types the way simulate does:
// from instanceTypesFile when set, else from the built-in catalog for region with each NodePool's EC2NodeClass.
// Pending pods with resource claims are held out or planned with their claims as dra says.
func ReadCluster(ctx context.Context, c client.Reader, region, instanceTypesFile string, dra DRASettings) (*Cluster, error) {
	cs, err := readCluster(ctx, c, dra)
	if err != nil {
		return nil, err
	}
	types, err := InstanceTypes(region, instanceTypesFile, cs.nodePools, cs.nodeClasses)
	if err != nil {
		return nil, err
	}
	notApplied := ApplyOverlays(cs.overlays, cs.nodePools, types)
	cs.snapshot.InstanceTypes = types
	return &Cluster{Snapshot: cs.snapshot, NodePools: cs.nodePools, NodeClasses: cs.nodeClasses, Skipped: cs.skipped,
		Overlays: cs.overlays, NotApplied: notApplied, Held: cs.held}, nil
}

// ClusterOverlays returns the cluster's NodeOverlays that the controller applies: all of them but those it reports
// ignored because the NodeOverlay feature gate is off. A cluster without the NodeOverlay CRD has none.
func ClusterOverlays(ctx context.Context, c client.Reader) ([]karpv1alpha1.NodeOverlay, error) {
	var list karpv1alpha1.NodeOverlayList
	if err := c.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	var out []karpv1alpha1.NodeOverlay
	for _, o := range list.Items {
		if c := o.GetCondition(karpv1alpha1.ConditionTypeValidationSucceeded); c != nil && c.Reason == karpv1alpha1.ReasonFeatureGateDisabled {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// InstanceTypes returns each NodePool's instance types the way simulate computes them: those of instanceTypesFile
// for every NodePool when it is set, else the built-in catalog's for region with the kubelet settings of the
// NodePool's EC2NodeClass.
func InstanceTypes(region, instanceTypesFile string, pools []*karpv1.NodePool, classes []*awsv1.EC2NodeClass) (map[string][]*cloudprovider.InstanceType, error) {
	o := &Options{Region: region, InstanceTypesFile: instanceTypesFile}
	return o.instanceTypes(pools, classes)
}

func readCluster(ctx context.Context, c client.Reader, dra DRASettings) (*clusterState, error) {
	nvidiaGPU, efa, err := dra.validate()
	if err != nil {
		return nil, err
	}
	var (
		pods    corev1.PodList
		nodes   corev1.NodeList
		claims  karpv1.NodeClaimList
		pools   karpv1.NodePoolList
		classes awsv1.EC2NodeClassList
		dss     appsv1.DaemonSetList
		pvcs    corev1.PersistentVolumeClaimList
		pvs     corev1.PersistentVolumeList
		scs     storagev1.StorageClassList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"pods", &pods}, {"nodes", &nodes}, {"nodeclaims", &claims}, {"nodepools", &pools}, {"ec2nodeclasses", &classes},
		{"daemonsets", &dss}, {"persistentvolumeclaims", &pvcs}, {"persistentvolumes", &pvs}, {"storageclasses", &scs}} {
		if err := c.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("--from-cluster: listing %s: %w", l.what, err)
		}
	}
	out := &clusterState{snapshot: &scheduling.Snapshot{}}
	snap := out.snapshot
	bound := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName != "" {
			bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
			continue
		}
		// As the provisioner: pods being deleted, DaemonSet pods (overhead on new nodes instead) and pods whose
		// scheduling gates are not yet removed (the kube-scheduler does not try them) get no capacity.
		if p.DeletionTimestamp != nil || ownedByDaemonSet(p) || len(p.Spec.SchedulingGates) > 0 {
			continue
		}
		snap.Pods = append(snap.Pods, p)
	}
	capacities := map[string][]corev1.ResourceList{}
	registered := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		snap.Nodes = append(snap.Nodes, adapt.Node(n, bound[n.Name]))
		registered[n.Spec.ProviderID] = true
		if pool := n.Labels[karpv1.NodePoolLabelKey]; pool != "" {
			capacities[pool] = append(capacities[pool], n.Status.Capacity)
		}
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.DeletionTimestamp != nil || nc.Status.NodeName != "" || (nc.Status.ProviderID != "" && registered[nc.Status.ProviderID]) {
			continue
		}
		snap.Nodes = append(snap.Nodes, adapt.InFlightNodeClaim(nc))
		if pool := nc.Labels[karpv1.NodePoolLabelKey]; pool != "" {
			capacities[pool] = append(capacities[pool], nc.Status.Capacity)
		}
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		if reason := NotProvisioning(np); reason != "" {
			out.skipped = append(out.skipped, SkippedNodePool{NodePool: np.Name, Reason: reason})
			continue
		}
		out.nodePools = append(out.nodePools, np)
		snap.NodePools = append(snap.NodePools, adapt.NodePool(np, adapt.Usage(capacities[np.Name])))
	}
	for i := range classes.Items {
		out.nodeClasses = append(out.nodeClasses, &classes.Items[i])
	}
	overlays, err := ClusterOverlays(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: %w", err)
	}
	out.overlays = overlays
	for i := range dss.Items {
		snap.DaemonSets = append(snap.DaemonSets, &dss.Items[i])
	}
	for i := range pvcs.Items {
		snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		snap.PersistentVolumes = append(snap.PersistentVolumes, &pvs.Items[i])
	}
	for i := range scs.Items {
		snap.StorageClasses = append(snap.StorageClasses, &scs.Items[i])
	}
	snap.Pods, out.held = dra.holdDRAPods(snap.Pods)
	if !dra.IgnoreDRARequests {
		if snap.DRA, err = readDRA(ctx, c, snap.Pods, nvidiaGPU, efa); err != nil {
			return nil, err
		}
	}
	if len(out.nodePools) == 0 {
		if len(out.skipped) == 0 {
			return nil, fmt.Errorf("--from-cluster: the cluster has no NodePools")
		}
		var skipped []string
		for _, s := range out.skipped {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", s.NodePool, s.Reason))
		}
		return nil, fmt.Errorf("--from-cluster: no NodePool of the cluster launches nodes for pending pods: %s",
			strings.Join(skipped, "; "))
	}
	return out, nil
}

// NotProvisioning says why the provisioner launches no node for pending pods from the NodePool ("" when it
// does): a static NodePool keeps a fixed number of nodes, and one whose Ready condition is False is skipped.
func NotProvisioning(np *karpv1.NodePool) string {
	if np.IsStatic() {
		return fmt.Sprintf("static: spec.replicas is %d", *np.Spec.Replicas)
	}
	if c := np.GetCondition(karpv1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionFalse {
		reason := "not ready: " + c.Reason
		if c.Message != "" {
			reason += ": " + c.Message
		}
		return reason
	}
	return ""
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
