package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/simulate"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// Reader reads the cluster.
type Reader = client.Reader

type nodeClass struct{ awsv1.EC2NodeClass }

// clusterState is what doctor reads from the cluster.
type clusterState struct {
	classes    []*nodeClass
	pools      []*karpv1.NodePool
	claims     []*karpv1.NodeClaim
	nodes      []*corev1.Node
	daemonSets []*appsv1.DaemonSet
}

func readCluster(ctx context.Context, c Reader) (*clusterState, error) {
	var (
		classes awsv1.EC2NodeClassList
		pools   karpv1.NodePoolList
		claims  karpv1.NodeClaimList
		nodes   corev1.NodeList
		dss     appsv1.DaemonSetList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"ec2nodeclasses", &classes}, {"nodepools", &pools}, {"nodeclaims", &claims}, {"nodes", &nodes}, {"daemonsets", &dss}} {
		if err := c.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	st := &clusterState{}
	for i := range classes.Items {
		st.classes = append(st.classes, &nodeClass{classes.Items[i]})
	}
	for i := range pools.Items {
		st.pools = append(st.pools, &pools.Items[i])
	}
	for i := range claims.Items {
		st.claims = append(st.claims, &claims.Items[i])
	}
	for i := range nodes.Items {
		st.nodes = append(st.nodes, &nodes.Items[i])
	}
	for i := range dss.Items {
		st.daemonSets = append(st.daemonSets, &dss.Items[i])
	}
	sort.Slice(st.classes, func(i, j int) bool { return st.classes[i].Name < st.classes[j].Name })
	sort.Slice(st.pools, func(i, j int) bool { return st.pools[i].Name < st.pools[j].Name })
	return st, nil
}

// tolerates reports whether a toleration list tolerates a taint (the Kubernetes matching rules).
func tolerates(tols []corev1.Toleration, taint corev1.Taint) bool {
	for _, t := range tols {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key == "" && t.Operator == corev1.TolerationOpExists {
			return true
		}
		if t.Key != taint.Key {
			continue
		}
		if t.Operator == corev1.TolerationOpExists || t.Value == taint.Value {
			return true
		}
	}
	return false
}

// nodeAgents are name fragments of DaemonSets a node cannot work without (networking, storage); their pods must
// keep running until the node is gone, so the volumes of evicted pods can detach.
var nodeAgents = []string{"aws-node", "cni", "csi", "calico", "cilium", "kube-proxy", "ebs", "efs"}

// daemonSets warns about DaemonSets whose pods would not come back on a node being disrupted, and about node
// agents (CNI, CSI) that could go before the volumes of the pods they serve detach.
func (d *Doctor) daemonSets(r *Report, st *clusterState) {
	taint := karpv1.DisruptedNoScheduleTaint()
	var intolerant, agents []string
	for _, ds := range st.daemonSets {
		spec := ds.Spec.Template.Spec
		name := ds.Namespace + "/" + ds.Name
		if !tolerates(spec.Tolerations, taint) {
			intolerant = append(intolerant, name)
		}
		for _, frag := range nodeAgents {
			if strings.Contains(ds.Name, frag) {
				if spec.PriorityClassName != "system-node-critical" || !tolerates(spec.Tolerations, corev1.Taint{Key: "any", Effect: corev1.TaintEffectNoExecute}) {
					agents = append(agents, name)
				}
				break
			}
		}
	}
	sort.Strings(intolerant)
	sort.Strings(agents)
	if len(intolerant) == 0 {
		r.pass("daemonsets-disruption-taint", "all %d DaemonSets tolerate %s", len(st.daemonSets), taint.ToString())
	} else {
		r.warn("daemonsets-disruption-taint", "add the toleration {key: "+karpv1.DisruptedTaintKey+", operator: Exists} (or operator: Exists alone) to their pod templates",
			"%d DaemonSets do not tolerate %s: a pod of theirs that restarts on a node being disrupted stays pending: %s", len(intolerant), taint.ToString(), strings.Join(intolerant, ", "))
	}
	if len(agents) == 0 {
		r.pass("daemonsets-node-agents", "node agents (CNI, CSI) tolerate every taint and run at system-node-critical")
	} else {
		r.warn("daemonsets-node-agents", "give them priorityClassName: system-node-critical and the toleration {operator: Exists}",
			"node agents that could be evicted before the volumes of drained pods detach: %s", strings.Join(agents, ", "))
	}
}

// leftovers finds NodeClaims whose NodePool is gone and instances of this cluster whose NodeClaim is gone:
// what a previous install left behind.
func (d *Doctor) leftovers(r *Report, st *clusterState, instances []ec2types.Instance) {
	pools := map[string]bool{}
	for _, p := range st.pools {
		pools[p.Name] = true
	}
	claims := map[string]bool{}
	var orphanClaims []string
	for _, c := range st.claims {
		claims[c.Name] = true
		if p := c.Labels[karpv1.NodePoolLabelKey]; p != "" && !pools[p] && c.DeletionTimestamp == nil {
			orphanClaims = append(orphanClaims, c.Name+" (NodePool "+p+")")
		}
	}
	var orphanInstances []string
	for _, i := range instances {
		t := map[string]string{}
		for _, tag := range i.Tags {
			t[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		if nc := t[awsv1.TagNodeClaim]; nc != "" && !claims[nc] {
			orphanInstances = append(orphanInstances, aws.ToString(i.InstanceId)+" (NodeClaim "+nc+")")
		}
	}
	sort.Strings(orphanClaims)
	sort.Strings(orphanInstances)
	switch {
	case len(orphanClaims) > 0 || len(orphanInstances) > 0:
		var parts []string
		if len(orphanClaims) > 0 {
			parts = append(parts, fmt.Sprintf("NodeClaims of deleted NodePools: %s", strings.Join(orphanClaims, ", ")))
		}
		if len(orphanInstances) > 0 {
			parts = append(parts, fmt.Sprintf("instances without a NodeClaim: %s", strings.Join(orphanInstances, ", ")))
		}
		r.fail("leftovers", "delete the NodeClaims (kubectl delete nodeclaim <name>) and terminate the instances (aws ec2 terminate-instances --instance-ids <id>), or run dovetailctl teardown before reinstalling",
			"left from a previous install: %s", strings.Join(parts, "; "))
	default:
		r.pass("leftovers", "%d NodeClaims and %d instances, each with its NodePool or NodeClaim", len(st.claims), len(instances))
	}
}

// uninitializedNodes finds nodes still carrying the cloud provider's uninitialized taint after the timeout.
func (d *Doctor) uninitializedNodes(r *Report, st *clusterState) {
	now := d.Clock.Now()
	var stuck, young []string
	for _, n := range st.nodes {
		for _, t := range n.Spec.Taints {
			if t.Key != karpv1.CloudProviderUninitializedTaintKey {
				continue
			}
			age := now.Sub(n.CreationTimestamp.Time)
			if age > d.UninitializedTimeout {
				stuck = append(stuck, fmt.Sprintf("%s (%s)", n.Name, age.Round(1e9)))
			} else {
				young = append(young, n.Name)
			}
		}
	}
	sort.Strings(stuck)
	if len(stuck) > 0 {
		r.fail("uninitialized-nodes", "check the cloud controller manager (aws-cloud-controller-manager, or the EKS control plane): it removes "+karpv1.CloudProviderUninitializedTaintKey+" once it has initialized a node",
			"%d nodes still carry %s after %s: %s", len(stuck), karpv1.CloudProviderUninitializedTaintKey, d.UninitializedTimeout, strings.Join(stuck, ", "))
		return
	}
	r.pass("uninitialized-nodes", "no node carries %s for longer than %s (%d still initializing)", karpv1.CloudProviderUninitializedTaintKey, d.UninitializedTimeout, len(young))
}

// instanceTypeKeys are the label keys an instance type and its offering decide; requirements on other keys are
// node labels the NodePool applies, which restrict no instance type.
func instanceTypeKey(k string) bool {
	switch k {
	case corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey:
		return true
	}
	return strings.HasPrefix(k, "karpenter.k8s.aws/instance-")
}

// nodePools fails NodePools for which no instance type of the built-in catalog survives the requirements in a
// zone of their EC2NodeClass's subnets.
func (d *Doctor) nodePools(r *Report, st *clusterState, zones map[string][]string) {
	classes := make([]*awsv1.EC2NodeClass, 0, len(st.classes))
	for _, c := range st.classes {
		classes = append(classes, &c.EC2NodeClass)
	}
	types, err := simulate.InstanceTypes(d.Region, "", st.pools, classes)
	if err != nil {
		r.warn("nodepools-launchable", "pass --region with a region of the built-in catalog", "cannot compute instance types: %v", err)
		return
	}
	for _, np := range st.pools {
		check := "nodepools-launchable/" + np.Name
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			r.fail(check, "set spec.template.spec.nodeClassRef to an EC2NodeClass", "NodePool %s names no EC2NodeClass", np.Name)
			continue
		}
		z, ok := zones[ref.Name]
		if !ok {
			r.fail(check, "create EC2NodeClass "+ref.Name+" or point nodeClassRef at an existing one", "NodePool %s: EC2NodeClass %s does not exist", np.Name, ref.Name)
			continue
		}
		if len(z) == 0 {
			r.fail(check, "fix the subnets of EC2NodeClass "+ref.Name+" (see nodeclass-subnets)", "NodePool %s: EC2NodeClass %s has no subnet, so no zone", np.Name, ref.Name)
			continue
		}
		reqs := make([]corev1.NodeSelectorRequirement, 0, len(np.Spec.Template.Spec.Requirements))
		for _, q := range np.Spec.Template.Spec.Requirements {
			reqs = append(reqs, q.NodeSelectorRequirement)
		}
		n := launchable(types[np.Name], reqs, z)
		if n == 0 {
			r.fail(check, "loosen spec.template.spec.requirements (instance types, families, architecture, capacity type, zones) or add subnets in the zones they name",
				"NodePool %s: no instance type of %d satisfies its requirements in %s", np.Name, len(types[np.Name]), strings.Join(z, ", "))
			continue
		}
		r.pass(check, "NodePool %s: %d instance types can launch in %s", np.Name, n, strings.Join(z, ", "))
	}
}

// launchable counts the instance types with an offering in one of the zones that satisfies the requirements.
func launchable(types []*cloudprovider.InstanceType, reqs []corev1.NodeSelectorRequirement, zones []string) int {
	inZone := map[string]bool{}
	for _, z := range zones {
		inZone[z] = true
	}
	n := 0
	for _, it := range types {
		for _, o := range it.Offerings {
			if !inZone[o.Zone] {
				continue
			}
			labels := map[string]string{corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: o.Zone, karpv1.CapacityTypeLabelKey: o.CapacityType}
			for k, v := range it.Labels {
				labels[k] = v
			}
			if requirements.Matches(reqs, labels, instanceTypeKey) {
				n++
				break
			}
		}
	}
	return n
}
