package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/cli/kube"
	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Options are the command's flags.
type Options struct {
	Kubeconfig           string
	ClusterName          string
	Region               string
	Queue                string
	RoleARN              string
	Output               string
	SkipAWS              bool
	UninitializedTimeout time.Duration
	Timeout              time.Duration
	LeaseName            string
	Namespace            string
	// AWSFeatureGates is the controller's AWS_FEATURE_GATES (RebootForRepair=true adds ec2:RebootInstances to the
	// permission check).
	AWSFeatureGates string
}

// ErrChecksFailed is returned when at least one check failed; the command then exits 1.
var ErrChecksFailed = errors.New("checks failed")

// NewCommand returns `dovetailctl doctor`.
func NewCommand() *cobra.Command {
	o := Options{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the cluster and AWS setup Dovetail needs, and say how to fix what is wrong",
		Long: `doctor reads the cluster and the AWS account, with the same credentials chain, AWS_REGION and
AWS_ENDPOINT_URL as the controller, and prints each check as pass, warn or fail with a fix line: the identity
(STS), the IAM actions the controller calls (IAM policy simulation), the subnets, security groups, AMIs and
instance profile or role of each EC2NodeClass, the interruption queue, its policy and the EventBridge rules
feeding it, DaemonSets and disruption, instances of another cluster with the same name, what a previous install
left behind, nodes stuck uninitialized, NodePools that can never launch, and a move from Karpenter (who holds the
leader Lease, a Karpenter controller still installed, instances Karpenter launched). It exits 1 when a check fails
(docs/doctor.md lists the checks).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return run(ctx, o, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&o.ClusterName, "cluster-name", os.Getenv("CLUSTER_NAME"), "cluster name as tagged on AWS resources (default $CLUSTER_NAME)")
	f.StringVar(&o.Region, "region", "", "AWS region (default $AWS_REGION)")
	f.StringVar(&o.Queue, "interruption-queue", os.Getenv("INTERRUPTION_QUEUE"), "interruption queue name (default $INTERRUPTION_QUEUE; empty: interruption handling off)")
	f.StringVar(&o.RoleARN, "role-arn", "", "IAM role whose permissions are simulated (default: the caller's role)")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&o.SkipAWS, "skip-aws", false, "check the cluster only (no AWS credentials needed)")
	f.DurationVar(&o.UninitializedTimeout, "uninitialized-timeout", 10*time.Minute, "how long a node may carry the cloud provider's uninitialized taint")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "give up after this long")
	f.StringVar(&o.LeaseName, "leader-election-name", envOr("LEADER_ELECTION_NAME", leaderlease.DefaultName), "the controller's leader Lease name (default $LEADER_ELECTION_NAME, else Karpenter's)")
	f.StringVar(&o.AWSFeatureGates, "aws-feature-gates", os.Getenv("AWS_FEATURE_GATES"), "the controller's AWS feature gates (default $AWS_FEATURE_GATES); RebootForRepair=true adds ec2:RebootInstances to the permission check")
	f.StringVarP(&o.Namespace, "namespace", "n", envOr("LEADER_ELECTION_NAMESPACE", "kube-system"), "the namespace of the controller's leader Lease (default $LEADER_ELECTION_NAMESPACE, else kube-system)")
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Validate checks the flags.
func (o Options) Validate() error {
	if o.ClusterName == "" {
		return fmt.Errorf("--cluster-name (or CLUSTER_NAME) is required: it is how AWS resources are tagged")
	}
	if o.Output != "text" && o.Output != "json" {
		return fmt.Errorf("--output %q: must be text or json", o.Output)
	}
	if o.UninitializedTimeout <= 0 || o.Timeout <= 0 {
		return fmt.Errorf("--uninitialized-timeout and --timeout must be positive")
	}
	if _, err := settings.ParseAWSFeatureGates(o.AWSFeatureGates); err != nil {
		return fmt.Errorf("--aws-feature-gates: %w", err)
	}
	return nil
}

func run(ctx context.Context, o Options, cmd *cobra.Command) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cfg, err := kube.Config(o.Kubeconfig)
	if err != nil {
		return err
	}
	kc, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the cluster's version: %w", err)
	}
	uid, err := kube.ClusterUID(ctx, kc)
	if err != nil {
		return err
	}
	d := &Doctor{
		Kube:                 kc,
		Cluster:              tags.Cluster{Name: o.ClusterName, UID: uid},
		Queue:                o.Queue,
		PrincipalARN:         o.RoleARN,
		K8sVersion:           v.Major + "." + strings.TrimSuffix(v.Minor, "+"),
		UninitializedTimeout: o.UninitializedTimeout,
		Clock:                clock.RealClock{},
		Region:               o.Region,
		LeaseName:            o.LeaseName,
		Namespace:            o.Namespace,
	}
	if gates, err := settings.ParseAWSFeatureGates(o.AWSFeatureGates); err == nil {
		d.RebootForRepair = gates[settings.AWSFeatureRebootForRepair]
	}
	if !o.SkipAWS {
		awsCfg, err := sdk.LoadConfig(ctx, o.Region)
		if err != nil {
			return fmt.Errorf("%w (or pass --skip-aws)", err)
		}
		d.Region = awsCfg.Region
		d.AWS = NewAWS(awsCfg)
	} else if d.Region == "" {
		d.Region = os.Getenv("AWS_REGION")
	}
	report, err := d.Run(ctx)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.Output == "json" {
		err = report.WriteJSON(out)
	} else {
		err = report.WriteText(out)
	}
	if err != nil {
		return err
	}
	if report.Fail > 0 {
		return fmt.Errorf("%d of %d %w", report.Fail, len(report.Results), ErrChecksFailed)
	}
	return nil
}
