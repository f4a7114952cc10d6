package simulate

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/overlay"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/adapt"
)

// Options are the command's flags.
type Options struct {
	PodsFile          string
	NodePoolsFile     string
	InstanceTypesFile string
	Region            string
	FromCluster       bool
	Kubeconfig        string
	Output            string
	// DRA are the controller's settings for pods with resource claims (IGNORE_DRA_REQUESTS, AWS_FEATURE_GATES).
	DRA DRASettings
}

// NewCommand returns the `simulate` command.
func NewCommand() *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Plan the nodes Dovetail would launch for pods, offline",
		Long: `simulate runs Dovetail's provisioning scheduler on pods and NodePools from files, or on a snapshot of the
current cluster, and prints the new nodes by instance type, zone and capacity type, their hourly cost against a
lower bound, the pods that fit on existing nodes, and why any pod could not be placed.

--pods takes Pod objects as a List, a JSON array or multi-document YAML; Deployments, StatefulSets, ReplicaSets
and Jobs are expanded to their replicas, DaemonSets add overhead to every node they would run on.
--nodepools takes NodePool YAML, optionally with EC2NodeClasses (their kubelet settings change node capacity).
--instance-types takes a JSON array of {name, capacity, overhead, labels, offerings[{zone, capacityType, price,
available}]}; without it the built-in catalog for --region is used.

Pods with resource claims are treated as the controller treats them: with --ignore-dra-requests (the controller's
IGNORE_DRA_REQUESTS, true by default as in Karpenter) they are left out and listed as unschedulable with the
controller's reason; with --ignore-dra-requests=false their claims are planned against DeviceClasses,
ResourceClaimTemplates and ResourceClaims (from the cluster, or from the --pods file) and the device models of the
AWS feature gates DRANVIDIAGPU and DRAEFA given with --aws-feature-gates.`,
		Example: `  dovetailctl simulate --pods workload.yaml --nodepools nodepools.yaml
  dovetailctl simulate --pods pods.json --nodepools np.yaml --instance-types types.json -o json
  dovetailctl simulate --from-cluster
  dovetailctl simulate --from-cluster --ignore-dra-requests=false --aws-feature-gates DRANVIDIAGPU=true,DRAEFA=true`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.PodsFile, "pods", "", "file with pods and workloads (YAML or JSON)")
	f.StringVar(&o.NodePoolsFile, "nodepools", "", "file with NodePools and optionally EC2NodeClasses")
	f.StringVar(&o.InstanceTypesFile, "instance-types", "", "JSON file of instance types (default: built-in catalog for --region)")
	f.StringVar(&o.Region, "region", "us-west-2", "region of the built-in catalog")
	f.BoolVar(&o.FromCluster, "from-cluster", false, "snapshot pending pods, nodes, NodeClaims and NodePools from the current kubeconfig")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig for --from-cluster (default: KUBECONFIG or ~/.kube/config)")
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table or json")
	AddDRAFlags(f, &o.DRA)
	return cmd
}

// Run executes a simulation and writes the report to w.
func Run(ctx context.Context, o *Options, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Output != "table" && o.Output != "json" {
		return fmt.Errorf("--output: %q is not one of table, json", o.Output)
	}
	nvidiaGPU, efa, err := o.DRA.validate()
	if err != nil {
		return err
	}
	var snap *scheduling.Snapshot
	var nodeClasses []*awsv1.EC2NodeClass
	var pools []*karpv1.NodePool
	var skipped []SkippedNodePool
	var overlays []karpv1alpha1.NodeOverlay
	var held []*corev1.Pod
	switch {
	case o.FromCluster:
		cs, err := clusterSnapshot(ctx, o.Kubeconfig, o.DRA)
		if err != nil {
			return err
		}
		snap, pools, nodeClasses, skipped, overlays, held = cs.snapshot, cs.nodePools, cs.nodeClasses, cs.skipped, cs.overlays, cs.held
	default:
		if o.PodsFile == "" {
			return fmt.Errorf("--pods is required (or use --from-cluster)")
		}
		if o.NodePoolsFile == "" {
			return fmt.Errorf("--nodepools is required (or use --from-cluster)")
		}
		objs := &objects{}
		if err := objs.readFile(o.PodsFile); err != nil {
			return err
		}
		if err := objs.readFile(o.NodePoolsFile); err != nil {
			return err
		}
		if len(objs.nodePools) == 0 {
			return fmt.Errorf("%s: no NodePool found", o.NodePoolsFile)
		}
		snap = &scheduling.Snapshot{Pods: objs.pods, DaemonSets: objs.daemonSets, PersistentVolumeClaims: objs.pvcs,
			PersistentVolumes: objs.pvs, StorageClasses: objs.scs}
		for _, np := range objs.nodePools {
			snap.NodePools = append(snap.NodePools, adapt.NodePool(np, nil))
		}
		pools, nodeClasses, overlays = objs.nodePools, objs.nodeClasses, objs.overlays
		snap.Pods, held = o.DRA.holdDRAPods(snap.Pods)
		if !o.DRA.IgnoreDRARequests {
			if snap.DRA, err = objs.dra(nvidiaGPU, efa); err != nil {
				return err
			}
		}
	}
	types, err := o.instanceTypes(pools, nodeClasses)
	if err != nil {
		return err
	}
	notApplied := ApplyOverlays(overlays, pools, types)
	snap.InstanceTypes = types
	plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
	if err != nil {
		return fmt.Errorf("scheduling: %w", err)
	}
	r := newReport(snap, plan)
	if err := r.explainClaims(ctx, snap); err != nil {
		return err
	}
	r.addHeld(held)
	r.SkippedNodePools = skipped
	r.NodeOverlays = notApplied
	if o.Output == "json" {
		return r.writeJSON(w)
	}
	return r.writeTable(w)
}

// ApplyOverlays applies the NodeOverlays to each NodePool's instance types in types (in place), as the controller
// does with the NodeOverlay feature gate on, and returns the overlays not applied with the reason.
func ApplyOverlays(overlays []karpv1alpha1.NodeOverlay, pools []*karpv1.NodePool, types map[string][]*cloudprovider.InstanceType) []NotAppliedOverlay {
	if len(overlays) == 0 {
		return nil
	}
	var ps []overlay.Pool
	for _, np := range pools {
		ps = append(ps, overlay.Pool{NodePool: np, InstanceTypes: types[np.Name]})
	}
	applied, verdicts := overlay.Evaluate(overlays, ps)
	for _, np := range pools {
		types[np.Name] = overlay.Apply(applied, overlay.PoolLabels(np), types[np.Name])
	}
	var out []NotAppliedOverlay
	for _, o := range overlays {
		if v := verdicts[o.Name]; !v.Applied() {
			out = append(out, NotAppliedOverlay{NodeOverlay: o.Name, Reason: v.Reason, Message: v.Message})
		}
	}
	return out
}

// NotAppliedOverlay is a NodeOverlay simulate left out, with Karpenter's reason (Conflict, RuntimeValidation).
type NotAppliedOverlay struct {
	NodeOverlay string `json:"nodeOverlay"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

// instanceTypes returns the instance types per NodePool: the file's for every pool, or the catalog's computed
// with each pool's EC2NodeClass kubelet settings.
func (o *Options) instanceTypes(pools []*karpv1.NodePool, classes []*awsv1.EC2NodeClass) (map[string][]*cloudprovider.InstanceType, error) {
	out := map[string][]*cloudprovider.InstanceType{}
	if o.InstanceTypesFile != "" {
		its, err := readInstanceTypes(o.InstanceTypesFile)
		if err != nil {
			return nil, err
		}
		for _, np := range pools {
			out[np.Name] = its
		}
		return out, nil
	}
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the built-in catalog: %w", err)
	}
	byClass := map[string][]*cloudprovider.InstanceType{}
	for _, np := range pools {
		var nc *awsv1.EC2NodeClass
		key := ""
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			for _, c := range classes {
				if c.Name == ref.Name {
					nc, key = c, c.Name
				}
			}
		}
		its, ok := byClass[key]
		if !ok {
			its, err = catalogInstanceTypes(cat, o.Region, nc)
			if err != nil {
				return nil, err
			}
			byClass[key] = its
		}
		out[np.Name] = its
	}
	return out, nil
}
