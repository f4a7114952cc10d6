package explain

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/cli/simulate"
	"github.com/dovetail/dovetail/pkg/leaderlease"
)

// Options are the command's flags.
type Options struct {
	Kubeconfig        string
	Output            string
	Region            string
	InstanceTypesFile string
	// FromAWS takes instance types from the AWS provider (AWS_REGION, AWS_ENDPOINT_URL, credentials) instead of
	// the built-in catalog; ClusterName is then required.
	FromAWS     bool
	ClusterName string
	// ControllerNamespace is where the controller runs (its ConfigMap of unavailable offerings, its leader Lease);
	// default kube-system.
	ControllerNamespace string
	// LeaseName is the controller's LEADER_ELECTION_NAME (default Karpenter's): explain pod says when another
	// autoscaler holds a Lease of that name, so Dovetail does not lead.
	LeaseName string
	// FeatureGates, PreferencePolicy and MinValuesPolicy are the controller's settings of the same names that
	// change its disruption decisions (explain node); empty means the controller's default.
	FeatureGates     string
	PreferencePolicy string
	MinValuesPolicy  string
	// NodeRepairTolerations is the controller's NODE_REPAIR_TOLERATIONS (explain node's repair line).
	NodeRepairTolerations string
	// DRA are the controller's settings for pods with resource claims (IGNORE_DRA_REQUESTS, AWS_FEATURE_GATES):
	// explain pod says the controller leaves such a pod out, or plans its claims as the controller would.
	DRA simulate.DRASettings
	// Clock gives the time budgets are evaluated at (default: the real clock).
	Clock clock.PassiveClock
}

func (o *Options) now() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock.Now()
}

func (o *Options) validate() error {
	if o.Output != "table" && o.Output != "json" {
		return fmt.Errorf("--output: %q is not one of table, json", o.Output)
	}
	if o.FromAWS && o.InstanceTypesFile != "" {
		return fmt.Errorf("--from-aws and --instance-types are exclusive")
	}
	return o.DRA.Validate()
}

// NewCommand returns the `explain` command with its `pod` and `node` subcommands.
func NewCommand() *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Explain why a pod has no capacity or why a node stays",
		Long: `explain reads the cluster the kubeconfig points at, the same snapshot as "simulate --from-cluster", and
explains Dovetail's decisions.

"explain pod NAMESPACE/NAME" runs the scheduler on the snapshot for the pod's outcome, then checks the pod alone
against every existing node and, NodePool by NodePool, through ordered filters (taints, NodePool requirements,
the pod's nodeSelector and required node affinity, volume topology, resources after kubelet reserved and DaemonSet
overhead, offerings in the allowed zones and capacity types, limits, minValues, topology spread and pod
(anti-)affinity), printing what each filter removed and the change that would make the pod schedulable.

"explain node NAME" says what Dovetail knows about a node: its NodeClaim and conditions, its NodePool's
disruption settings, and the pods and annotations that keep it from being disrupted. Then it runs the disruption
controller's decision on the same snapshot the controller builds (instance types and prices as for "explain pod")
and prints what the controller would do about the node now: disrupt it (the command), or why it stays, and the
disruption command already in progress on it, if any.`,
		Example: `  dovetailctl explain pod default/web-7d9f8
  dovetailctl explain pod default/trainer -o json
  AWS_REGION=us-west-2 dovetailctl explain pod default/trainer --from-aws --cluster-name prod
  dovetailctl explain node ip-10-0-1-23.us-west-2.compute.internal`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig (default: KUBECONFIG or ~/.kube/config)")
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table or json")
	f.StringVar(&o.Region, "region", "us-west-2", "region of the built-in instance-type catalog")
	f.StringVar(&o.InstanceTypesFile, "instance-types", "", "JSON file of instance types (default: built-in catalog for --region)")
	f.BoolVar(&o.FromAWS, "from-aws", false, "take instance types and offerings from AWS (AWS_REGION, AWS_ENDPOINT_URL, credentials) like the controller")
	f.StringVar(&o.ControllerNamespace, "controller-namespace", "kube-system", "namespace the controller runs in: explain reads the offerings it holds unavailable from its ConfigMap there")
	f.StringVar(&o.ClusterName, "cluster-name", os.Getenv("CLUSTER_NAME"), "cluster name for --from-aws (default: CLUSTER_NAME)")
	f.StringVar(&o.LeaseName, "leader-election-name", leaseNameDefault(), "the controller's leader Lease name (default: LEADER_ELECTION_NAME, else Karpenter's karpenter-leader-election)")
	simulate.AddDRAFlags(f, &o.DRA)
	cmd.AddCommand(&cobra.Command{
		Use:   "pod NAMESPACE/NAME",
		Short: "Explain why a pending pod has no capacity, NodePool by NodePool",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parsePodArg(args[0])
			if err != nil {
				return err
			}
			c, err := simulate.NewClient(o.Kubeconfig)
			if err != nil {
				return err
			}
			return RunPod(cmd.Context(), c, o, key, cmd.OutOrStdout())
		},
	})
	node := &cobra.Command{
		Use:   "node NAME",
		Short: "Explain why a node stays: its NodeClaim, conditions, disruption blockers and the disruption decision",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := simulate.NewClient(o.Kubeconfig)
			if err != nil {
				return err
			}
			return RunNode(cmd.Context(), c, o, args[0], cmd.OutOrStdout())
		},
	}
	nf := node.Flags()
	nf.StringVar(&o.FeatureGates, "feature-gates", "", "the controller's FEATURE_GATES (SpotToSpotConsolidation changes consolidation, NodeRepair turns node repair on; default: the controller's defaults)")
	nf.StringVar(&o.NodeRepairTolerations, "node-repair-tolerations", "", "the controller's NODE_REPAIR_TOLERATIONS (ConditionType=duration pairs; default: the cloud provider's tolerations)")
	nf.StringVar(&o.PreferencePolicy, "preference-policy", "", "the controller's PREFERENCE_POLICY: Respect or Ignore (default Respect)")
	nf.StringVar(&o.MinValuesPolicy, "min-values-policy", "", "the controller's MIN_VALUES_POLICY: Strict or BestEffort (default Strict)")
	cmd.AddCommand(node)
	return cmd
}

func leaseNameDefault() string {
	if v := os.Getenv("LEADER_ELECTION_NAME"); v != "" {
		return v
	}
	return leaderlease.DefaultName
}

func parsePodArg(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		ns, name = "default", s
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("pod %q: want NAMESPACE/NAME", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// writer helpers shared by pod and node output.
type lineWriter struct {
	w   io.Writer
	err error
}

func (l *lineWriter) printf(format string, args ...any) {
	if l.err == nil {
		_, l.err = fmt.Fprintf(l.w, format, args...)
	}
}
